//! The PostgreSQL layout (version 1) and the token row every part reads.
//!
//! Several tokens share the tables, each row keyed by the token's serial:
//!
//! - `dalek_tokens`: one row per token holding everything token-wide —
//!   the metadata (JSON of `TokenMeta`) with its MAC, the generation
//!   counter, the object-set digest, the tombstone floor and the GCM IV
//!   counters' state — so one row read is one consistent snapshot of them
//!   (the metadata never pairs with another write's MAC), and a write
//!   transaction that locks the row (`FOR UPDATE`) orders itself after
//!   every other write to the token;
//! - `dalek_objects`: the records, as SQLite keeps them (sealed attributes
//!   and the record MAC);
//! - `dalek_tombstones`: deletions, for the change feed;
//! - `dalek_iv_counters`: the GCM IV counters (`iv_counters`).
//!
//! The module creates the tables (under an advisory lock, so processes
//! starting together do not race) and records the version in
//! `dalek_schema`; it needs `CREATE` on the database's schema the first
//! time, then `SELECT`/`INSERT`/`UPDATE`/`DELETE` on these tables only (no
//! superuser; docs/scale.md).

use super::db::Db;
use crate::error::{Result, err};
use crate::storage::integrity::{Integrity, MAC_LEN, Tag};
use crate::storage::store::TokenMeta;
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_RECOGNIZED};
use tokio_postgres::Row;

/// The layout version this module writes.
pub(super) const SCHEMA_VERSION: i32 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dalek_schema (
    id integer PRIMARY KEY CHECK (id = 1),
    version integer NOT NULL
);
CREATE TABLE IF NOT EXISTS dalek_tokens (
    serial text PRIMARY KEY,
    meta bytea NOT NULL,
    meta_mac bytea NOT NULL,
    generation bigint NOT NULL,
    digest bytea NOT NULL,
    tombstone_floor bigint NOT NULL DEFAULT 0,
    iv_state bytea
);
CREATE TABLE IF NOT EXISTS dalek_objects (
    serial text NOT NULL REFERENCES dalek_tokens(serial) ON DELETE CASCADE,
    uid bytea NOT NULL,
    generation bigint NOT NULL,
    class bigint NOT NULL,
    private boolean NOT NULL,
    label bytea NOT NULL,
    ckid bytea NOT NULL,
    attrs bytea NOT NULL,
    mac bytea NOT NULL,
    PRIMARY KEY (serial, uid)
);
CREATE INDEX IF NOT EXISTS dalek_objects_generation ON dalek_objects(serial, generation);
CREATE TABLE IF NOT EXISTS dalek_tombstones (
    serial text NOT NULL REFERENCES dalek_tokens(serial) ON DELETE CASCADE,
    uid bytea NOT NULL,
    generation bigint NOT NULL,
    PRIMARY KEY (serial, uid)
);
CREATE INDEX IF NOT EXISTS dalek_tombstones_generation ON dalek_tombstones(serial, generation);
CREATE TABLE IF NOT EXISTS dalek_iv_counters (
    serial text NOT NULL REFERENCES dalek_tokens(serial) ON DELETE CASCADE,
    fingerprint bytea NOT NULL,
    next bigint NOT NULL,
    mac bytea NOT NULL,
    PRIMARY KEY (serial, fingerprint)
);
INSERT INTO dalek_schema(id, version) VALUES (1, 1) ON CONFLICT (id) DO NOTHING;
";

/// Creates the tables if they are missing and checks the version.
pub(super) fn ensure(db: &mut Db) -> Result<()> {
    let version = |db: &mut Db| -> Result<Option<i32>> {
        let exists = db
            .query_opt("SELECT to_regclass('dalek_schema') IS NOT NULL", &[])?
            .is_some_and(|r| r.get::<_, bool>(0));
        if !exists {
            return Ok(None);
        }
        Ok(db
            .query_opt("SELECT version FROM dalek_schema WHERE id = 1", &[])?
            .map(|r| r.get(0)))
    };
    let found = match version(db)? {
        Some(v) => v,
        None => {
            db.transaction("BEGIN", |db| {
                // One creator at a time (a fixed key: "dalek-pkcs11 schema").
                db.batch("SELECT pg_advisory_xact_lock(71620001)")?;
                db.batch(SCHEMA)
            })?;
            crate::log::info(format_args!(
                "PostgreSQL {}: token tables created (schema {SCHEMA_VERSION})",
                db.shown()
            ));
            SCHEMA_VERSION
        }
    };
    if found != SCHEMA_VERSION {
        crate::log::error(format_args!(
            "PostgreSQL {}: token tables of schema {found}, not one this module knows",
            db.shown()
        ));
        return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
    }
    Ok(())
}

/// The token row: the metadata and everything token-wide, read together.
pub(super) struct TokenRow {
    pub(super) meta: TokenMeta,
    pub(super) generation: u64,
    pub(super) digest: Tag,
    pub(super) tombstone_floor: u64,
}

/// The columns [`token_row`] reads.
pub(super) const TOKEN_COLUMNS: &str = "meta, meta_mac, generation, digest, tombstone_floor";

/// Decodes and authenticates a token row (its metadata MAC must match
/// when the metadata names an integrity secret).
pub(super) fn token_row(serial: &str, row: &Row) -> Result<TokenRow> {
    let json: Vec<u8> = row.get(0);
    let mac: Vec<u8> = row.get(1);
    let meta: TokenMeta =
        serde_json::from_slice(&json).map_err(|_| err(CKR_TOKEN_NOT_RECOGNIZED))?;
    if let Some(secret) = &meta.integrity
        && mac[..] != Integrity::from_hex(secret)?.meta_mac(&json)[..]
    {
        crate::log::error(format_args!(
            "token {serial}: metadata failed authentication (corrupted or edited)"
        ));
        return Err(err(CKR_DEVICE_ERROR));
    }
    if meta.serial != serial {
        crate::log::error(format_args!(
            "token {serial}: its row holds token {} (copied by hand?)",
            meta.serial
        ));
        return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
    }
    let mut digest = [0u8; MAC_LEN];
    let stored: Vec<u8> = row.get(3);
    if stored.len() == MAC_LEN {
        digest.copy_from_slice(&stored);
    }
    Ok(TokenRow {
        meta,
        generation: row.get::<_, i64>(2) as u64,
        digest,
        tombstone_floor: row.get::<_, i64>(4) as u64,
    })
}

/// The metadata's JSON and MAC, as stored.
pub(super) fn encode_meta(meta: &TokenMeta) -> Result<(Vec<u8>, Vec<u8>)> {
    let json = serde_json::to_vec(meta).map_err(|_| err(CKR_DEVICE_ERROR))?;
    let mac = match &meta.integrity {
        Some(secret) => Integrity::from_hex(secret)?.meta_mac(&json).to_vec(),
        None => Vec::new(),
    };
    Ok((json, mac))
}
