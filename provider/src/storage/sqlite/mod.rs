//! The SQLite store: one database file per token, `<serial>.sqlite` in the
//! token directory.
//!
//! WAL journal (`synchronous=NORMAL` by default: a commit survives a crash
//! of the process at any moment, and a power loss can only undo the last
//! commits; `durability = "full"` adds an fsync per commit), a busy timeout so concurrent processes wait for each other
//! instead of failing, every write one `BEGIN IMMEDIATE` transaction, and a
//! generation counter bumped by each write. Destroyed objects leave a
//! tombstone so other processes learn of the deletion. `PRAGMA data_version`
//! tells without a query whether another connection committed anything.
//! A new token is built under a temporary name and renamed into place, so no
//! process ever sees a half-created token; the temporary file is locked
//! (`flock`) while it is being built, and one left behind by a killed or
//! failed `C_InitToken` is removed at the next scan of the directory once no
//! process holds that lock.
//!
//! Files are private to their owner whatever the umask: the token directory
//! is created 0700 and each database 0600 (SQLite gives its `-wal` and
//! `-shm` files the database's mode). A directory or database that group or
//! others can reach is reported in the log, not changed: the operator may
//! share a token on purpose.
//!
//! A file is a token only if the serial number inside it matches its name
//! (`<serial>.sqlite`); a copy under another name is skipped with a log
//! line, so the slot list does not grow with copies.
//!
//! One job per file: `files` (names, modes, building and deleting token
//! files), `connection` (opening connections, what their errors mean),
//! `schema` (the layout, its upgrade, the metadata rows and the generation
//! counter), `store` ([`SqliteStore`]: opening, creating, write
//! transactions, file checks) and `records` (its `TokenStore` methods: the
//! change feed and record writes). This file only declares the parts and
//! re-exports them.

mod connection;
mod damage;
mod files;
mod image;
mod records;
mod schema;
mod store;
#[cfg(test)]
pub(crate) mod tests;

pub(crate) use connection::{connect_raw, connect_read_only};
pub(crate) use damage::integrity_complaints;
pub use damage::{DamagedFile, OpenFailure};
pub(crate) use files::{building_path, is_serial, token_path};
pub use files::{delete_token, list_serials, token_file};
pub(crate) use image::{read_image, write_file, write_token};
pub(crate) use schema::read_meta;
pub use store::{Found, SqliteStore, discover, open_found};
