//! `TokenStore` for [`SqliteStore`]: reading and writing the metadata,
//! re-initialisation, the change feed (`changes_since`: what other
//! connections wrote since a generation, each record's MAC checked), writing
//! and deleting object records (each write keeping the object-set digest
//! and leaving a tombstone for a deletion), and the GCM IV counters.

use super::damage::integrity_complaints;
use super::schema::{
    bump_generation, digest, generation, keys_of, meta_number, purge_tombstones, read_meta,
    set_meta_blob, stored_mac, uid_from, write_meta,
};
use super::store::{Known, READ_FILE_CHECK_INTERVAL, SqliteStore, carry_iv_counters};
use crate::error::{Result, take_sqlite_fault};
use crate::storage::integrity::{Integrity, MAC_LEN, toggle};
use crate::storage::seal::TokenKey;
use crate::storage::store::{
    Changes, Expect, ObjectRecord, TokenMeta, TokenStore, UID_LEN, Uid, Written,
};
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use std::sync::Arc;

impl TokenStore for SqliteStore {
    fn serial(&self) -> String {
        self.serial.clone()
    }

    fn writable(&self) -> bool {
        self.writable && self.structure_damage.is_none()
    }

    fn meta(&mut self) -> Result<TokenMeta> {
        read_meta(&self.conn)
    }

    fn update_meta(
        &mut self,
        change: &mut dyn FnMut(&mut TokenMeta) -> Result<()>,
    ) -> Result<TokenMeta> {
        let m = self.write(|tx, _| {
            let mut m = read_meta(tx)?;
            change(&mut m)?;
            write_meta(tx, &m)?;
            Ok(m)
        })?;
        self.use_keys_of(&m)?;
        Ok(m)
    }

    fn reinitialize(&mut self, meta: &TokenMeta) -> Result<()> {
        let serial = self.serial.clone();
        self.write_any(|tx, _| {
            carry_iv_counters(tx, meta, &serial)?;
            tx.execute("DELETE FROM objects", [])?;
            tx.execute("DELETE FROM tombstones", [])?;
            set_meta_blob(tx, "objects_digest", &[0; MAC_LEN])?;
            bump_generation(tx)?;
            write_meta(tx, meta)
        })?;
        self.known = Known::default();
        self.accepted_epoch = meta.epoch.clone();
        self.use_keys_of(meta)
    }

    fn accept_epoch(&mut self, epoch: &str) {
        self.accepted_epoch = epoch.to_string();
    }

    fn changes_since(&mut self, epoch: &str, since: u64) -> Result<Option<Changes>> {
        take_sqlite_fault();
        let out = self.read_changes(epoch, since);
        self.note_failure(&out);
        out
    }
    fn put(&mut self, records: &[&ObjectRecord], expect: &[Expect]) -> Result<Written> {
        let (written, tags) = self.write(|tx, keys| {
            for (uid, generation) in expect {
                let stored: Option<i64> = tx
                    .prepare_cached("SELECT generation FROM objects WHERE uid = ?1")?
                    .query_row(params![&uid[..]], |r| r.get(0))
                    .optional()?;
                match stored {
                    None => return Ok((Written::Gone, Vec::new())),
                    Some(g) if g as u64 != *generation => return Ok((Written::Stale, Vec::new())),
                    Some(_) => {}
                }
            }
            let g = bump_generation(tx)?;
            let mut d = digest(tx)?;
            let mut stmt = tx.prepare_cached(
                "INSERT INTO objects(uid, generation, class, private, label, ckid, attrs, mac)
                 VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT(uid) DO UPDATE SET generation = excluded.generation,
                   class = excluded.class, private = excluded.private, label = excluded.label,
                   ckid = excluded.ckid, attrs = excluded.attrs, mac = excluded.mac",
            )?;
            let mut tags = Vec::with_capacity(records.len());
            for r in records {
                let tag = keys
                    .map(|k| k.record_mac(&r.uid, g, r.class, r.private, &r.attrs))
                    .unwrap_or_default();
                if let Some(old) = stored_mac(tx, &r.uid)? {
                    toggle(&mut d, &old);
                }
                toggle(&mut d, &tag);
                stmt.execute(params![
                    &r.uid[..],
                    g as i64,
                    r.class as i64,
                    r.private,
                    r.label,
                    r.id,
                    r.attrs,
                    &tag[..]
                ])?;
                tags.push((r.uid, tag));
            }
            set_meta_blob(tx, "objects_digest", &d)?;
            Ok((Written::At(g), tags))
        })?;
        for (uid, tag) in tags {
            self.known.learn(uid, &tag);
            self.known.damaged.remove(&uid);
        }
        Ok(written)
    }

    fn public_seal_key(&self) -> Option<Arc<TokenKey>> {
        self.integrity.as_ref().map(Integrity::public_seal_key)
    }

    fn file_damage(&self) -> Option<String> {
        self.structure_damage.clone()
    }

    fn damage(&self) -> Option<String> {
        self.known.damage(&self.serial)
    }

    fn reserve_iv_counter(&mut self, key: &[u8], count: u64) -> Result<u64> {
        let serial = self.serial.clone();
        self.write(|tx, known| {
            let secret = read_meta(tx)?.integrity;
            let secret = secret.as_deref();
            crate::storage::iv_counters::reserve_current(&**tx, known, secret, &serial, key, count)
        })
    }

    fn delete(&mut self, uid: &Uid) -> Result<Option<u64>> {
        debug_assert_eq!(uid.len(), UID_LEN);
        let done = self.write(|tx, _| {
            let Some(old) = stored_mac(tx, uid)? else {
                return Ok(None);
            };
            tx.execute("DELETE FROM objects WHERE uid = ?1", params![&uid[..]])?;
            let mut d = digest(tx)?;
            toggle(&mut d, &old);
            set_meta_blob(tx, "objects_digest", &d)?;
            let g = bump_generation(tx)?;
            tx.execute(
                "INSERT INTO tombstones(uid, generation) VALUES(?1, ?2)
                 ON CONFLICT(uid) DO UPDATE SET generation = excluded.generation",
                params![&uid[..], g as i64],
            )?;
            Ok(Some((g, purge_tombstones(tx, g)?)))
        })?;
        let Some((g, purged)) = done else {
            return Ok(None);
        };
        self.known.forget(uid);
        self.forget_deleted(purged);
        Ok(Some(g))
    }
}

impl SqliteStore {
    /// `changes_since` itself (see the trait).
    fn read_changes(&mut self, epoch: &str, since: u64) -> Result<Option<Changes>> {
        if self.files_checked.elapsed() >= READ_FILE_CHECK_INTERVAL {
            self.files_checked = std::time::Instant::now();
            self.check_files()?;
        }
        let dv = self.current_data_version()?;
        if dv == self.data_version && since != u64::MAX && !self.reload {
            return Ok(None);
        }
        // One read transaction, so the generation and rows agree.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Deferred)?;
        let meta = read_meta(&tx)?;
        // Another process may have re-initialised the token (a new secret).
        keys_of(&mut self.integrity, &meta)?;
        let current = generation(&tx)?;
        let reset = meta.epoch != epoch;
        // Tombstones older than the floor are purged: a reader that looked
        // before it cannot learn deletions one by one and gets every object.
        let full = !reset
            && since != u64::MAX
            && (self.reload
                || self.structure_damage.is_some()
                || since < meta_number(&tx, "tombstone_floor")?);
        let from = if reset || full { 0 } else { since };
        let mut changes = Changes {
            generation: current,
            reset,
            full,
            ..Changes::default()
        };
        if reset || full || since == u64::MAX {
            // Everything is read again: so is every MAC.
            self.known = Known::default();
        }
        if reset || full || current != since {
            // A full read scans the table, never an index that may be
            // damaged (see `schema`); so does every read of a damaged file
            // (`full` above), whose generation index cannot be trusted.
            let mut stmt = tx.prepare_cached(if from == 0 {
                "SELECT uid, generation, class, private, attrs, mac FROM objects NOT INDEXED
                 WHERE generation > ?1"
            } else {
                "SELECT uid, generation, class, private, attrs, mac FROM objects
                 WHERE generation > ?1"
            })?;
            // `label` and `ckid` are columns for queries on the file; a
            // reader rebuilds them from `attrs`, so they are not read here.
            let rows = stmt.query_map(params![from as i64], |r| {
                Ok((
                    ObjectRecord {
                        uid: uid_from(r.get(0)?)?,
                        generation: r.get::<_, i64>(1)? as u64,
                        class: r.get::<_, i64>(2)? as u64,
                        private: r.get(3)?,
                        label: Vec::new(),
                        id: Vec::new(),
                        attrs: r.get(4)?,
                    },
                    r.get::<_, Vec<u8>>(5)?,
                ))
            })?;
            let mut read = Vec::new();
            for row in rows {
                read.push(row?);
            }
            drop(stmt);
            for (rec, stored) in read {
                let authentic = self.integrity.as_ref().is_none_or(|k| {
                    k.record_mac(&rec.uid, rec.generation, rec.class, rec.private, &rec.attrs)[..]
                        == stored[..]
                });
                self.known.learn(rec.uid, &stored);
                if authentic {
                    self.known.damaged.remove(&rec.uid);
                    changes.upserts.push(rec);
                } else {
                    crate::log::error(format_args!(
                        "token {}: object {} failed authentication (corrupted or edited); \
                         it is not served",
                        self.serial,
                        crate::storage::seal::hex(&rec.uid)
                    ));
                    self.known.damaged.insert(rec.uid);
                    changes.damaged.push(rec.uid);
                }
            }
            if !reset && !full {
                let mut stmt =
                    tx.prepare_cached("SELECT uid FROM tombstones WHERE generation > ?1")?;
                let rows = stmt.query_map(params![from as i64], |r| uid_from(r.get(0)?))?;
                let mut gone = Vec::new();
                for row in rows {
                    gone.push(row?);
                }
                drop(stmt);
                for uid in gone {
                    self.known.forget(&uid);
                    changes.deletes.push(uid);
                }
            }
        }
        // SQLite's own check at every full read, and after every change
        // while the file is damaged (a repair gives writes back).
        let complaints = (reset || full || since == u64::MAX || self.structure_damage.is_some())
            .then(|| integrity_complaints(&tx));
        if self.integrity.is_some() {
            let ok = digest(&tx)? == self.known.xor;
            if !ok && !self.known.digest_off {
                crate::log::error(format_args!(
                    "token {}: its objects do not add up to the stored digest \
                     (records deleted or added outside the module)",
                    self.serial
                ));
            }
            self.known.digest_off = !ok;
        }
        drop(tx);
        if let Some(complaints) = complaints {
            self.note_structure(complaints);
        }
        self.data_version = self.current_data_version()?;
        self.reload = false;
        Ok(Some(changes))
    }
}
