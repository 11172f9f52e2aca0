//! One token (base spec §5.5 slot and token management, §5.6 login, §5.7
//! objects): its store, the login state of this process, and the objects
//! it holds (token objects loaded from the store, session objects of this
//! process's sessions). One file per job:
//!
//! - `state`: the `Token` itself, its locks and metadata;
//! - `table`: the object table and its indexes;
//! - `store`: object store access (refresh, lookups, writes);
//! - `login`: the login state machine;
//! - `pin`: PIN checks with the persistent failure counter, and
//!   `C_InitToken`, `C_InitPIN`, `C_SetPIN`.
//!
//! This file only declares them and re-exports the public names, through
//! which the rest of the crate names them; the files of this folder import
//! from the defining file.

mod login;
mod pin;
mod state;
mod store;
mod table;

pub use pin::{MAX_PIN_FAILURES, MAX_PIN_LEN, MIN_PIN_LEN};
pub use state::{HandleAllocator, Token, TokenStatus};
pub use table::SealKeys;
