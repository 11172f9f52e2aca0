//! The PostgreSQL token store: tokens as rows of one database, shared by
//! every process and host that names it (`storage = "postgresql://…"`).
//!
//! One job per file: `target` (the connection string, completed as libpq
//! completes it), `db` (the connection: bounded waits, reconnection,
//! fork), `schema` (the tables and the token row), `store` (opening,
//! creating, listing and deleting tokens; the write transaction), `records`
//! (the `TokenStore` methods), `iv` (the GCM IV counters' rows), `tls` (TLS to the database).

mod db;
mod image;
mod iv;
mod records;
mod schema;
mod sslmode;
mod store;
mod target;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(feature = "aws-lc")]
mod tls;

pub use image::{read_image, read_image_for_verify, write_image};
pub use store::{PgStore, delete_token, describe, discover, list_serials};
