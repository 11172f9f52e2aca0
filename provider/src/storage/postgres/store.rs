//! The PostgreSQL store ([`PgStore`]): opening, creating, listing and
//! deleting tokens, and the write transaction every change runs in. Its
//! `TokenStore` methods are in `records`.
//!
//! The rules SQLite's store keeps hold here too (docs/ARCHITECTURE.md,
//! "Token storage"):
//!
//! - the metadata and its MAC are one row, read in one statement;
//! - every write runs in one transaction that first locks the token row
//!   (`SELECT … FOR UPDATE`), so writes to a token are applied one after
//!   another across every host, and checks there that the token's epoch
//!   is still the one its caller works in (a re-initialisation by another
//!   host refuses the write with `CKR_DEVICE_REMOVED`);
//! - readers never block writers: a look at the changes reads one
//!   `REPEATABLE READ` snapshot without locks (PostgreSQL's MVCC);
//! - a record, the metadata or the object set that fails authentication
//!   is refused and flagged, as with SQLite.

use super::db::{Db, Heard};
use super::schema::{TOKEN_COLUMNS, TokenRow, encode_meta, ensure, token_row};
use super::target::Target;
use crate::config::PostgresSettings;
use crate::error::{Result, err};
use crate::storage::fence::Fence;
use crate::storage::integrity::{Integrity, MAC_LEN};
use crate::storage::known::Known;
use crate::storage::store::{TokenMeta, TokenStore};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_DEVICE_REMOVED, CKR_TOKEN_NOT_PRESENT};
use std::sync::Arc;

/// One token's rows.
pub struct PgStore {
    pub(super) db: Db,
    pub(super) serial: String,
    /// Keys from the token's integrity secret.
    pub(super) integrity: Option<Integrity>,
    /// What this connection knows of the stored records' MACs.
    pub(super) known: Known,
    /// The token's epoch its user works in (see `write`).
    pub(super) accepted_epoch: String,
    /// The next `changes_since` returns every object.
    pub(super) reload: bool,
    /// `postgres_max_staleness`; above zero the connection listens on
    /// the token's channel (see `records::changes_since`).
    pub(super) max_staleness: std::time::Duration,
    /// When a look last read the token's row and found the caller up to
    /// date, and where the notifications stood just before it read.
    pub(super) looked: Option<(std::time::Instant, Heard)>,
}

/// The notification channel of token `serial`: every write transaction
/// notifies it with its commit (`Db::transaction_notifying`).
pub(super) fn channel(serial: &str) -> String {
    let safe: String = serial
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    format!("dalek_t_{safe}")
}

pub(super) fn connect(settings: &PostgresSettings) -> Result<Db> {
    let mut db = Db::connect(Arc::new(Target::of(settings)?))?;
    ensure(&mut db)?;
    Ok(db)
}

/// The serial numbers of the tokens in the database.
pub fn list_serials(settings: &PostgresSettings) -> Result<Vec<String>> {
    let mut db = connect(settings)?;
    Ok(db
        .query("SELECT serial FROM dalek_tokens ORDER BY serial", &[])?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// Opens every token in the database; one that cannot be opened is logged
/// and skipped, and a database that cannot be reached gives none (logged):
/// `C_Initialize` does not fail for it, and the tokens appear at a later
/// `C_GetSlotList` once it answers (the module's rescan).
pub fn discover(settings: &PostgresSettings) -> Vec<Box<dyn TokenStore>> {
    let mut found: Vec<Box<dyn TokenStore>> = Vec::new();
    let serials = match list_serials(settings) {
        Ok(s) => s,
        Err(e) => {
            crate::log::error(format_args!(
                "PostgreSQL storage unreachable at start ({e}): no token listed until it answers"
            ));
            return found;
        }
    };
    for serial in serials {
        match PgStore::open(settings, &serial) {
            Ok(s) => found.push(Box::new(s)),
            Err(e) => crate::log::error(format_args!("skipping token {serial}: {e}")),
        }
    }
    found
}

/// Deletes token `serial` and every row of it, in one transaction.
pub fn delete_token(settings: &PostgresSettings, serial: &str) -> Result<()> {
    let mut db = connect(settings)?;
    let notify = channel(serial);
    let n = db.transaction_notifying("BEGIN", Some(&notify), |db| {
        db.execute("DELETE FROM dalek_tokens WHERE serial = $1", &[&serial])
    })?;
    if n == 0 {
        return Err(err(CKR_TOKEN_NOT_PRESENT));
    }
    Ok(())
}

impl PgStore {
    /// Opens token `serial`; `CKR_TOKEN_NOT_PRESENT` if the database has
    /// no such token, `CKR_DEVICE_ERROR` if its metadata fails
    /// authentication or the database cannot be reached.
    pub fn open(settings: &PostgresSettings, serial: &str) -> Result<PgStore> {
        let mut db = connect(settings)?;
        let row = read_token(&mut db, serial)?.ok_or(err(CKR_TOKEN_NOT_PRESENT))?;
        if !settings.max_staleness.is_zero() {
            db.listen(&channel(serial));
        }
        Ok(PgStore {
            db,
            serial: serial.to_string(),
            integrity: row
                .meta
                .integrity
                .as_deref()
                .map(Integrity::from_hex)
                .transpose()?,
            known: Known::default(),
            accepted_epoch: row.meta.epoch,
            reload: false,
            max_staleness: settings.max_staleness,
            looked: None,
        })
    }

    /// Creates token `meta.serial` (`CKR_DEVICE_ERROR` if it exists).
    pub fn create(settings: &PostgresSettings, meta: &TokenMeta) -> Result<PgStore> {
        let mut db = connect(settings)?;
        let (json, mac) = encode_meta(meta)?;
        let digest = [0u8; MAC_LEN].to_vec();
        let n = db.execute(
            "INSERT INTO dalek_tokens(serial, meta, meta_mac, generation, digest)
             VALUES ($1, $2, $3, 0, $4) ON CONFLICT (serial) DO NOTHING",
            &[&meta.serial, &json, &mac, &digest],
        )?;
        if n == 0 {
            crate::log::error(format_args!(
                "PostgreSQL {}: token {} exists already",
                db.shown(),
                meta.serial
            ));
            return Err(err(CKR_DEVICE_ERROR));
        }
        drop(db);
        Self::open(settings, &meta.serial)
    }

    /// Runs `body` in a write transaction with the token row locked, after
    /// checking the caller's epoch (see the module documentation).
    pub(super) fn write<T>(
        &mut self,
        body: impl FnOnce(&mut Db, &TokenRow, Option<&Integrity>) -> Result<T>,
    ) -> Result<T> {
        let fence = Fence::new(&self.accepted_epoch);
        let out = self.write_any(|db, row, keys| {
            fence.check(&row.meta.epoch)?;
            body(db, row, keys)
        });
        fence.finish(&self.serial, &mut self.reload, out)
    }

    /// A write transaction without the epoch check (the re-initialisation
    /// itself, and the inside of [`Self::write`]).
    pub(super) fn write_any<T>(
        &mut self,
        body: impl FnOnce(&mut Db, &TokenRow, Option<&Integrity>) -> Result<T>,
    ) -> Result<T> {
        let serial = self.serial.clone();
        let keys = self.integrity.as_ref();
        let notify = channel(&serial);
        self.db.transaction_notifying("BEGIN", Some(&notify), |db| {
            let row = db
                .query_opt(
                    "SELECT meta, meta_mac, generation, digest, tombstone_floor
                     FROM dalek_tokens WHERE serial = $1 FOR UPDATE",
                    &[&serial],
                )?
                .ok_or_else(|| {
                    crate::log::error(format_args!(
                        "token {serial}: deleted from the database while open"
                    ));
                    err(CKR_DEVICE_REMOVED)
                })?;
            let row = token_row(&serial, &row)?;
            body(db, &row, keys)
        })
    }

    /// Makes the store's keys those of `meta`'s integrity secret.
    pub(super) fn use_keys_of(&mut self, meta: &TokenMeta) -> Result<()> {
        Integrity::follow(&mut self.integrity, meta.integrity.as_deref())
    }
}

/// The token row of `serial`, authenticated, if the token exists.
pub(super) fn read_token(db: &mut Db, serial: &str) -> Result<Option<TokenRow>> {
    const SQL: &str = "SELECT meta, meta_mac, generation, digest, tombstone_floor
                       FROM dalek_tokens WHERE serial = $1";
    debug_assert!(SQL.contains(TOKEN_COLUMNS));
    db.query_opt(SQL, &[&serial])?
        .map(|r| token_row(serial, &r))
        .transpose()
}

/// The database of `settings` as logs name it (`user@host:port/dbname`,
/// never a password), for the operator's tool.
pub fn describe(settings: &PostgresSettings) -> String {
    Target::of(settings).map_or_else(|_| "(an unusable connection string)".into(), |t| t.shown)
}
