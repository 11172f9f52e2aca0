//! A PostgreSQL token read into a [`TokenImage`] (one `REPEATABLE READ`
//! snapshot, so a token in use is copied as it was at one moment) and an
//! image written as a token (one transaction: all of it or nothing), for
//! the operator's backups, restores and moves between stores
//! (`storage::image`, `storage::maintenance`).

use super::db::Db;
use super::iv::PgIv;
use super::store::connect;
use crate::config::PostgresSettings;
use crate::error::{Result, err};
use crate::storage::image::{ImageObject, TokenImage, write_iv};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_PRESENT};

/// Token `serial` of the database, in one snapshot.
pub fn read_image(settings: &PostgresSettings, serial: &str) -> Result<TokenImage> {
    let mut db = connect(settings)?;
    db.transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", |db| {
        read_in(db, serial)
    })
}

fn read_in(db: &mut Db, serial: &str) -> Result<TokenImage> {
    let token = db
        .query_opt(
            "SELECT meta, meta_mac, generation, digest, iv_state
             FROM dalek_tokens WHERE serial = $1",
            &[&serial],
        )?
        .ok_or(err(CKR_TOKEN_NOT_PRESENT))?;
    let objects = db
        .query(
            "SELECT uid, generation, class, private, label, ckid, attrs, mac
             FROM dalek_objects WHERE serial = $1",
            &[&serial],
        )?
        .iter()
        .map(|r| ImageObject {
            uid: r.get(0),
            generation: r.get::<_, i64>(1) as u64,
            class: r.get::<_, i64>(2) as u64,
            private: r.get(3),
            label: r.get(4),
            ckid: r.get(5),
            attrs: r.get(6),
            mac: r.get(7),
        })
        .collect();
    let iv_rows = db
        .query(
            "SELECT fingerprint, next, mac FROM dalek_iv_counters WHERE serial = $1",
            &[&serial],
        )?
        .iter()
        .map(|r| (r.get(0), r.get::<_, i64>(1) as u64, r.get(2)))
        .collect();
    Ok(TokenImage {
        serial: serial.to_string(),
        meta_json: token.get(0),
        meta_mac: token.get(1),
        generation: token.get::<_, i64>(2) as u64,
        digest: token.get(3),
        objects,
        iv_state: token.get(4),
        iv_rows,
    })
}

/// Writes `image` as token `image.serial`, in one transaction; an existing
/// token of that serial is refused unless `replace` (then it is deleted in
/// the same transaction: other hosts see the old token or the new one).
pub fn write_image(settings: &PostgresSettings, image: &TokenImage, replace: bool) -> Result<()> {
    let mut db = connect(settings)?;
    db.transaction("BEGIN", |db| {
        let gone = db.execute(
            "DELETE FROM dalek_tokens WHERE serial = $1",
            &[&image.serial],
        )?;
        if gone > 0 && !replace {
            crate::log::error(format_args!(
                "token {} exists in the database: not replaced",
                image.serial
            ));
            return Err(err(CKR_DEVICE_ERROR));
        }
        let generation = image.generation as i64;
        db.execute(
            "INSERT INTO dalek_tokens(serial, meta, meta_mac, generation, digest, tombstone_floor)
             VALUES ($1, $2, $3, $4, $5, $4)",
            &[
                &image.serial,
                &image.meta_json,
                &image.meta_mac,
                &generation,
                &image.digest,
            ],
        )?;
        for o in &image.objects {
            db.execute(
                "INSERT INTO dalek_objects(serial, uid, generation, class, private, label, ckid,
                 attrs, mac) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                &[
                    &image.serial,
                    &o.uid,
                    &(o.generation as i64),
                    &(o.class as i64),
                    &o.private,
                    &o.label,
                    &o.ckid,
                    &o.attrs,
                    &o.mac,
                ],
            )?;
        }
        write_iv(image, &PgIv::new(db, &image.serial))
    })
}

/// Token `serial` as [`read_image`] reads it, with the number of its
/// tombstones whose object still exists (a deletion that did not take:
/// readers would drop a live object), in the same snapshot.
pub fn read_image_for_verify(
    settings: &PostgresSettings,
    serial: &str,
) -> Result<(TokenImage, usize)> {
    let mut db = connect(settings)?;
    db.transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", |db| {
        let image = read_in(db, serial)?;
        let n: i64 = db
            .query(
                "SELECT count(*) FROM dalek_tombstones t JOIN dalek_objects o
                 ON o.serial = t.serial AND o.uid = t.uid WHERE t.serial = $1",
                &[&serial],
            )?
            .first()
            .map_or(0, |r| r.get(0));
        Ok((image, n.max(0) as usize))
    })
}
