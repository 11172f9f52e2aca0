//! `TokenStore` for [`PgStore`]: the metadata, re-initialisation, the
//! change feed (one snapshot per look, each record's MAC checked), writing
//! and deleting records (keeping the object-set digest, a tombstone per
//! deletion) and the GCM IV counters: the same records and checks as the
//! SQLite store, in the token's rows.

use super::db::Db;
use super::iv::PgIv;
use super::schema::encode_meta;
use super::store::{PgStore, read_token};
use crate::error::{Result, err};
use crate::storage::integrity::{Integrity, MAC_LEN, Tag, toggle};
use crate::storage::known::Known;
use crate::storage::seal::TokenKey;
use crate::storage::store::{
    Changes, Expect, ObjectRecord, TokenMeta, TokenStore, Uid, Written, tombstone_purge,
};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_PRESENT};
use std::sync::Arc;

fn uid_of(v: Vec<u8>) -> Result<Uid> {
    v.try_into().map_err(|_| err(CKR_DEVICE_ERROR))
}

fn stored_mac(db: &mut Db, serial: &str, uid: &Uid) -> Result<Option<Vec<u8>>> {
    Ok(db
        .query_opt(
            "SELECT mac FROM dalek_objects WHERE serial = $1 AND uid = $2",
            &[&serial, &&uid[..]],
        )?
        .map(|r| r.get(0)))
}

fn set_token_state(db: &mut Db, serial: &str, generation: u64, digest: &Tag) -> Result<()> {
    db.execute(
        "UPDATE dalek_tokens SET generation = $2, digest = $3 WHERE serial = $1",
        &[&serial, &(generation as i64), &&digest[..]],
    )?;
    Ok(())
}

impl TokenStore for PgStore {
    fn serial(&self) -> String {
        self.serial.clone()
    }

    fn meta(&mut self) -> Result<TokenMeta> {
        let serial = self.serial.clone();
        Ok(read_token(&mut self.db, &serial)?
            .ok_or(err(CKR_TOKEN_NOT_PRESENT))?
            .meta)
    }

    fn update_meta(
        &mut self,
        change: &mut dyn FnMut(&mut TokenMeta) -> Result<()>,
    ) -> Result<TokenMeta> {
        let serial = self.serial.clone();
        let m = self.write(|db, row, _| {
            let mut m = row.meta.clone();
            change(&mut m)?;
            let (json, mac) = encode_meta(&m)?;
            db.execute(
                "UPDATE dalek_tokens SET meta = $2, meta_mac = $3 WHERE serial = $1",
                &[&serial, &json, &mac],
            )?;
            Ok(m)
        })?;
        self.use_keys_of(&m)?;
        Ok(m)
    }

    fn reinitialize(&mut self, meta: &TokenMeta) -> Result<()> {
        let serial = self.serial.clone();
        self.write_any(|db, row, _| {
            // The GCM IV counters move to the new integrity secret (read
            // from the row: another host may have changed it).
            if let Some(new) = meta.integrity.as_deref() {
                let old = row
                    .meta
                    .integrity
                    .as_deref()
                    .and_then(|s| Integrity::from_hex(s).ok());
                let table = PgIv::new(db, &serial);
                crate::storage::iv_counters::carry_over(
                    &table,
                    old.as_ref(),
                    &Integrity::from_hex(new)?,
                    &serial,
                )?;
            }
            db.execute("DELETE FROM dalek_objects WHERE serial = $1", &[&serial])?;
            db.execute("DELETE FROM dalek_tombstones WHERE serial = $1", &[&serial])?;
            let (json, mac) = encode_meta(meta)?;
            db.execute(
                "UPDATE dalek_tokens SET meta = $2, meta_mac = $3, generation = $4, digest = $5
                 WHERE serial = $1",
                &[
                    &serial,
                    &json,
                    &mac,
                    &((row.generation + 1) as i64),
                    &&[0u8; MAC_LEN][..],
                ],
            )?;
            Ok(())
        })?;
        self.known = Known::default();
        self.accepted_epoch = meta.epoch.clone();
        self.use_keys_of(meta)
    }

    fn accept_epoch(&mut self, epoch: &str) {
        self.accepted_epoch = epoch.to_string();
    }

    fn changes_since(&mut self, epoch: &str, since: u64) -> Result<Option<Changes>> {
        let serial = self.serial.clone();
        if since != u64::MAX && !self.reload {
            // Listening (`postgres_max_staleness`): no notification since
            // the last look that found the caller up to date, on the same
            // connection, and not too long ago: nothing to read.
            let heard = if self.max_staleness.is_zero() {
                None
            } else {
                self.db.heard()
            };
            if let (Some((at, then)), Some(now)) = (self.looked, heard)
                && then == now
                && at.elapsed() < self.max_staleness
            {
                return Ok(None);
            }
            self.looked = None;
            let started = std::time::Instant::now();
            // The cheap look: one indexed row.
            let row = read_token(&mut self.db, &serial)?.ok_or(err(CKR_TOKEN_NOT_PRESENT))?;
            if row.generation == since && row.meta.epoch == epoch {
                // Where the notifications stood before the read: one that
                // came during it makes the next look read.
                self.looked = heard.map(|h| (started, h));
                return Ok(None);
            }
        }
        let reload = self.reload;
        let mut known = std::mem::take(&mut self.known);
        let mut keys = self.integrity.take();
        let out = self
            .db
            .transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", |db| {
                read_changes(db, &serial, epoch, since, reload, &mut known, &mut keys)
            });
        self.known = known;
        self.integrity = keys;
        let changes = out?;
        self.reload = false;
        Ok(Some(changes))
    }

    fn put(&mut self, records: &[&ObjectRecord], expect: &[Expect]) -> Result<Written> {
        let serial = self.serial.clone();
        let (written, tags) = self.write(|db, row, keys| {
            for (uid, generation) in expect {
                let stored = db.query_opt(
                    "SELECT generation FROM dalek_objects WHERE serial = $1 AND uid = $2",
                    &[&serial, &&uid[..]],
                )?;
                match stored.map(|r| r.get::<_, i64>(0) as u64) {
                    None => return Ok((Written::Gone, Vec::new())),
                    Some(g) if g != *generation => return Ok((Written::Stale, Vec::new())),
                    Some(_) => {}
                }
            }
            let g = row.generation + 1;
            let mut d = row.digest;
            let mut tags = Vec::with_capacity(records.len());
            for r in records {
                let tag = keys
                    .map(|k| k.record_mac(&r.uid, g, r.class, r.private, &r.attrs))
                    .unwrap_or_default();
                if let Some(old) = stored_mac(db, &serial, &r.uid)? {
                    toggle(&mut d, &old);
                }
                toggle(&mut d, &tag);
                db.execute(
                    "INSERT INTO dalek_objects(serial, uid, generation, class, private, label, ckid, attrs, mac)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                     ON CONFLICT (serial, uid) DO UPDATE SET generation = excluded.generation,
                       class = excluded.class, private = excluded.private, label = excluded.label,
                       ckid = excluded.ckid, attrs = excluded.attrs, mac = excluded.mac",
                    &[
                        &serial,
                        &&r.uid[..],
                        &(g as i64),
                        &(r.class as i64),
                        &r.private,
                        &r.label,
                        &r.id,
                        &r.attrs,
                        &&tag[..],
                    ],
                )?;
                tags.push((r.uid, tag));
            }
            set_token_state(db, &serial, g, &d)?;
            Ok((Written::At(g), tags))
        })?;
        for (uid, tag) in tags {
            self.known.learn(uid, &tag);
            self.known.damaged.remove(&uid);
        }
        Ok(written)
    }

    fn delete(&mut self, uid: &Uid) -> Result<Option<u64>> {
        let serial = self.serial.clone();
        let done = self.write(|db, row, _| {
            let Some(old) = stored_mac(db, &serial, uid)? else {
                return Ok(None);
            };
            db.execute(
                "DELETE FROM dalek_objects WHERE serial = $1 AND uid = $2",
                &[&serial, &&uid[..]],
            )?;
            let mut d = row.digest;
            toggle(&mut d, &old);
            let g = row.generation + 1;
            set_token_state(db, &serial, g, &d)?;
            db.execute(
                "INSERT INTO dalek_tombstones(serial, uid, generation) VALUES ($1, $2, $3)
                 ON CONFLICT (serial, uid) DO UPDATE SET generation = excluded.generation",
                &[&serial, &&uid[..], &(g as i64)],
            )?;
            if let Some(floor) = tombstone_purge(g, row.tombstone_floor) {
                db.execute(
                    "DELETE FROM dalek_tombstones WHERE serial = $1 AND generation <= $2",
                    &[&serial, &(floor as i64)],
                )?;
                db.execute(
                    "UPDATE dalek_tokens SET tombstone_floor = $2 WHERE serial = $1",
                    &[&serial, &(floor as i64)],
                )?;
            }
            Ok(Some(g))
        })?;
        if done.is_some() {
            self.known.forget(uid);
        }
        Ok(done)
    }

    fn reserve_iv_counter(&mut self, key: &[u8], count: u64) -> Result<u64> {
        let serial = self.serial.clone();
        self.write(|db, row, known| {
            let table = PgIv::new(db, &serial);
            let secret = row.meta.integrity.as_deref();
            crate::storage::iv_counters::reserve_current(&table, known, secret, &serial, key, count)
        })
    }

    fn public_seal_key(&self) -> Option<Arc<TokenKey>> {
        self.integrity.as_ref().map(Integrity::public_seal_key)
    }

    fn damage(&self) -> Option<String> {
        self.known.damage(&self.serial)
    }
}

/// `changes_since` after the cheap look, in one read-only snapshot.
fn read_changes(
    db: &mut Db,
    serial: &str,
    epoch: &str,
    since: u64,
    reload: bool,
    known: &mut Known,
    keys: &mut Option<Integrity>,
) -> Result<Changes> {
    let row = read_token(db, serial)?.ok_or(err(CKR_TOKEN_NOT_PRESENT))?;
    // Another host may have re-initialised the token (a new secret).
    Integrity::follow(keys, row.meta.integrity.as_deref())?;
    let reset = row.meta.epoch != epoch;
    let full = !reset && since != u64::MAX && (reload || since < row.tombstone_floor);
    let from = if reset || full { 0 } else { since };
    let mut changes = Changes {
        generation: row.generation,
        reset,
        full,
        ..Changes::default()
    };
    if reset || full || since == u64::MAX {
        *known = Known::default();
    }
    if reset || full || row.generation != since {
        let rows = db.query(
            "SELECT uid, generation, class, private, attrs, mac FROM dalek_objects
             WHERE serial = $1 AND generation > $2",
            &[&serial, &(from as i64)],
        )?;
        for r in rows {
            let rec = ObjectRecord {
                uid: uid_of(r.get(0))?,
                generation: r.get::<_, i64>(1) as u64,
                class: r.get::<_, i64>(2) as u64,
                private: r.get(3),
                label: Vec::new(),
                id: Vec::new(),
                attrs: r.get(4),
            };
            let stored: Vec<u8> = r.get(5);
            let authentic = keys.as_ref().is_none_or(|k| {
                k.record_mac(&rec.uid, rec.generation, rec.class, rec.private, &rec.attrs)[..]
                    == stored[..]
            });
            known.learn(rec.uid, &stored);
            if authentic {
                known.damaged.remove(&rec.uid);
                changes.upserts.push(rec);
            } else {
                crate::log::error(format_args!(
                    "token {serial}: object {} failed authentication (corrupted or edited); \
                     it is not served",
                    crate::storage::seal::hex(&rec.uid)
                ));
                known.damaged.insert(rec.uid);
                changes.damaged.push(rec.uid);
            }
        }
        if !reset && !full {
            let gone = db.query(
                "SELECT uid FROM dalek_tombstones WHERE serial = $1 AND generation > $2",
                &[&serial, &(from as i64)],
            )?;
            for r in gone {
                let uid = uid_of(r.get(0))?;
                known.forget(&uid);
                changes.deletes.push(uid);
            }
        }
    }
    if keys.is_some() {
        let ok = row.digest == known.xor;
        if !ok && !known.digest_off {
            crate::log::error(format_args!(
                "token {serial}: its objects do not add up to the stored digest \
                 (rows deleted or added outside the module)"
            ));
        }
        known.digest_off = !ok;
    }
    Ok(changes)
}
