//! The GCM IV counters in PostgreSQL rows (`iv_counters::IvTable`): the
//! state (floor ‖ set tag) in the token row's `iv_state`, one row of
//! `dalek_iv_counters` per key-value fingerprint; read and written in the
//! caller's write transaction, with the token row locked.

use super::db::Db;
use crate::error::Result;
use crate::storage::integrity::Tag;
use crate::storage::iv_counters::IvTable;
use std::cell::RefCell;

/// The counters of one token, inside a write transaction.
pub(super) struct PgIv<'a> {
    db: RefCell<&'a mut Db>,
    serial: &'a str,
}

impl<'a> PgIv<'a> {
    pub(super) fn new(db: &'a mut Db, serial: &'a str) -> PgIv<'a> {
        PgIv {
            db: RefCell::new(db),
            serial,
        }
    }
}

impl IvTable for PgIv<'_> {
    fn state_blob(&self) -> Result<Option<Vec<u8>>> {
        Ok(self
            .db
            .borrow_mut()
            .query_opt(
                "SELECT iv_state FROM dalek_tokens WHERE serial = $1",
                &[&self.serial],
            )?
            .and_then(|r| r.get(0)))
    }

    fn set_state_blob(&self, blob: &[u8]) -> Result<()> {
        self.db.borrow_mut().execute(
            "UPDATE dalek_tokens SET iv_state = $2 WHERE serial = $1",
            &[&self.serial, &blob],
        )?;
        Ok(())
    }

    fn row_macs(&self) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .db
            .borrow_mut()
            .query(
                "SELECT mac FROM dalek_iv_counters WHERE serial = $1",
                &[&self.serial],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn fingerprints(&self) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .db
            .borrow_mut()
            .query(
                "SELECT fingerprint FROM dalek_iv_counters WHERE serial = $1",
                &[&self.serial],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn row(&self, fingerprint: &Tag) -> Result<Option<(i64, Vec<u8>)>> {
        Ok(self
            .db
            .borrow_mut()
            .query_opt(
                "SELECT next, mac FROM dalek_iv_counters WHERE serial = $1 AND fingerprint = $2",
                &[&self.serial, &&fingerprint[..]],
            )?
            .map(|r| (r.get(0), r.get(1))))
    }

    fn set_row(&self, fingerprint: &Tag, next: u64, mac: &Tag) -> Result<()> {
        self.db.borrow_mut().execute(
            "INSERT INTO dalek_iv_counters(serial, fingerprint, next, mac) VALUES ($1, $2, $3, $4)
             ON CONFLICT (serial, fingerprint) DO UPDATE SET next = excluded.next, mac = excluded.mac",
            &[&self.serial, &&fingerprint[..], &(next as i64), &&mac[..]],
        )?;
        Ok(())
    }

    fn clear_rows(&self) -> Result<()> {
        self.db.borrow_mut().execute(
            "DELETE FROM dalek_iv_counters WHERE serial = $1",
            &[&self.serial],
        )?;
        Ok(())
    }
}
