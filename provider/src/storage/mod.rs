//! Where token objects live: a [`TokenStore`] per token, with a SQLite, a
//! PostgreSQL and a memory implementation.
//!
//! The store knows nothing of PKCS#11 semantics. It keeps the token's
//! metadata ([`TokenMeta`]) and opaque [`ObjectRecord`]s, each write in one
//! transaction that bumps a generation counter, so that a process can ask
//! cheaply for what other processes changed since it last looked
//! ([`TokenStore::changes_since`]).
//!
//! `store.rs` defines the trait and the records (the implementations import
//! them from there); this file declares the parts, re-exports those types
//! and opens the implementation the configuration names.

pub(crate) mod fence;
pub mod image;
pub mod integrity;
pub mod iv_counters;
pub(crate) mod known;
pub mod maintenance;
pub mod memory;
pub mod postgres;
pub mod report;
pub mod seal;
pub mod sqlite;
mod store;
pub mod transfer;

pub use store::{Changes, Expect, ObjectRecord, TokenMeta, TokenStore, UID_LEN, Uid, Written};

use crate::config::{Config, StorageKind};
use crate::error::Result;

pub use sqlite::{DamagedFile, Found};

/// Opens the stores of every token that exists for `config`; a damaged
/// token file is returned as such.
pub fn discover(config: &Config) -> Result<Vec<Found>> {
    match config.storage {
        StorageKind::Sqlite => sqlite::discover(&config.token_dir, config.durability),
        StorageKind::Postgres => Ok(postgres::discover(&config.postgres)
            .into_iter()
            .map(Found::Token)
            .collect()),
        StorageKind::Memory => Ok(Vec::new()),
    }
}

/// Opens the store of the token with `serial`, or describes its damage;
/// an error for a copy of another token (`CKR_TOKEN_NOT_RECOGNIZED`) or a
/// passing failure.
pub fn open_found(config: &Config, serial: &str) -> Result<Found> {
    match config.storage {
        StorageKind::Sqlite => sqlite::open_found(&config.token_dir, serial, config.durability),
        StorageKind::Postgres => Ok(Found::Token(Box::new(postgres::PgStore::open(
            &config.postgres,
            serial,
        )?))),
        StorageKind::Memory => Err(crate::error::err(cryptoki_sys::CKR_TOKEN_NOT_PRESENT)),
    }
}

/// Lists the serial numbers of the tokens that exist for `config` (to find
/// tokens created by other processes).
pub fn list_serials(config: &Config) -> Vec<String> {
    match config.storage {
        StorageKind::Sqlite => sqlite::list_serials(&config.token_dir),
        // Unreachable now: none is listed (the failure is logged).
        StorageKind::Postgres => postgres::list_serials(&config.postgres).unwrap_or_default(),
        StorageKind::Memory => Vec::new(),
    }
}

/// Opens the store of the token with `serial`.
pub fn open(config: &Config, serial: &str) -> Result<Box<dyn TokenStore>> {
    match config.storage {
        StorageKind::Sqlite => Ok(Box::new(sqlite::SqliteStore::open(
            &config.token_dir,
            serial,
            config.durability,
        )?)),
        StorageKind::Postgres => Ok(Box::new(postgres::PgStore::open(&config.postgres, serial)?)),
        StorageKind::Memory => Err(crate::error::err(cryptoki_sys::CKR_TOKEN_NOT_PRESENT)),
    }
}

/// The database file of token `serial` (SQLite storage only).
pub fn token_file(config: &Config, serial: &str) -> Option<std::path::PathBuf> {
    match config.storage {
        StorageKind::Sqlite => Some(sqlite::token_file(&config.token_dir, serial)),
        StorageKind::Postgres | StorageKind::Memory => None,
    }
}

/// Deletes token `serial`: its database file and SQLite's log and index
/// beside it. The file is first locked exclusively (waiting for a writer of
/// another process to finish), so no transaction is cut in half; a process
/// that still has the token open finds its files gone at its next call and
/// refuses to serve from them.
pub fn delete_token(config: &Config, serial: &str) -> Result<()> {
    match config.storage {
        StorageKind::Sqlite => sqlite::delete_token(&config.token_dir, serial, config.durability),
        StorageKind::Postgres => postgres::delete_token(&config.postgres, serial),
        StorageKind::Memory => Err(crate::error::err(cryptoki_sys::CKR_TOKEN_NOT_PRESENT)),
    }
}

/// Creates a new token with `meta` and returns its store.
pub fn create(config: &Config, meta: &TokenMeta) -> Result<Box<dyn TokenStore>> {
    match config.storage {
        StorageKind::Sqlite => Ok(Box::new(sqlite::SqliteStore::create(
            &config.token_dir,
            meta,
            config.durability,
        )?)),
        StorageKind::Postgres => Ok(Box::new(postgres::PgStore::create(&config.postgres, meta)?)),
        StorageKind::Memory => Ok(Box::new(memory::MemoryStore::new(meta.clone()))),
    }
}
