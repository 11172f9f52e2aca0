//! A token file read into a [`TokenImage`] and an image written as a new
//! token file (`storage::image`): the rows as they are, in one read
//! transaction and one write transaction of a file no one else has open.

use super::connection::connect;
use super::files::{FILE_MODE, building_path, claim_new_file, ensure_dir, token_path};
use super::schema::{create_tables, generation, meta_blob, set_meta_blob, set_meta_number};
use crate::config::Durability;
use crate::error::{Result, err};
use crate::storage::image::{ImageObject, TokenImage, write_iv};
use crate::storage::iv_counters::IvTable;
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_RECOGNIZED};
use rusqlite::{Connection, params};
use std::path::Path;

/// The token file `path` (opened read-only by the caller), in one snapshot.
pub(crate) fn read_image(conn: &Connection) -> Result<TokenImage> {
    let tx = conn.unchecked_transaction()?;
    let json = meta_blob(&tx, "token")?.ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
    let meta: crate::storage::store::TokenMeta =
        serde_json::from_slice(&json).map_err(|_| err(CKR_TOKEN_NOT_RECOGNIZED))?;
    let mut objects = Vec::new();
    {
        let mut stmt = tx.prepare(
            "SELECT uid, generation, class, private, label, ckid, attrs, mac FROM objects",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            objects.push(ImageObject {
                uid: r.get(0)?,
                generation: r.get::<_, i64>(1)? as u64,
                class: r.get::<_, i64>(2)? as u64,
                private: r.get::<_, i64>(3)? != 0,
                label: r.get(4)?,
                ckid: r.get(5)?,
                attrs: r.get(6)?,
                mac: r.get(7)?,
            });
        }
    }
    let conn_iv: &Connection = &tx;
    let mut iv_rows = Vec::new();
    for fp in conn_iv.fingerprints()? {
        let tag: crate::storage::integrity::Tag =
            fp[..].try_into().map_err(|_| err(CKR_DEVICE_ERROR))?;
        if let Some((next, mac)) = conn_iv.row(&tag)? {
            iv_rows.push((fp, next as u64, mac));
        }
    }
    let image = TokenImage {
        serial: meta.serial,
        meta_mac: meta_blob(&tx, "token_mac")?.unwrap_or_default(),
        meta_json: json,
        generation: generation(&tx)?,
        digest: meta_blob(&tx, "objects_digest")?.unwrap_or_default(),
        objects,
        iv_state: conn_iv.state_blob()?,
        iv_rows,
    };
    tx.finish()?;
    Ok(image)
}

/// Fills the new file at `path` (already created, empty) with `image`.
fn fill(path: &Path, image: &TokenImage) -> Result<()> {
    let mut conn = connect(path, false, Durability::Full)?;
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    let tx = conn.transaction()?;
    create_tables(&tx)?;
    set_meta_blob(&tx, "token", &image.meta_json)?;
    set_meta_blob(&tx, "token_mac", &image.meta_mac)?;
    set_meta_number(&tx, "generation", image.generation)?;
    set_meta_number(&tx, "tombstone_floor", image.generation)?;
    set_meta_blob(&tx, "objects_digest", &image.digest)?;
    {
        let mut insert = tx.prepare(
            "INSERT INTO objects(uid, generation, class, private, label, ckid, attrs, mac)
             VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for o in &image.objects {
            insert.execute(params![
                o.uid,
                o.generation as i64,
                o.class as i64,
                i64::from(o.private),
                o.label,
                o.ckid,
                o.attrs,
                o.mac
            ])?;
        }
    }
    write_iv(image, &*tx)?;
    tx.commit()?;
    // A standalone file: no log beside it.
    conn.pragma_update(None, "journal_mode", "DELETE")?;
    Ok(())
}

/// Writes `image` as the new file `out` (a backup; it must not exist).
pub(crate) fn write_file(out: &Path, image: &TokenImage) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(out)
        .map_err(|e| {
            crate::log::error(format_args!("cannot create {}: {e}", out.display()));
            err(CKR_DEVICE_ERROR)
        })?;
    let filled = fill(out, image);
    if filled.is_err() {
        let _ = std::fs::remove_file(out);
    }
    filled
}

/// Writes `image` as token `image.serial` of directory `dir`: built under
/// a temporary name and renamed into place (a crash leaves no token or the
/// whole one). The caller has made sure no token of that serial exists.
pub(crate) fn write_token(dir: &Path, image: &TokenImage) -> Result<()> {
    ensure_dir(dir)?;
    let target = token_path(dir, &image.serial);
    if target.exists() {
        crate::log::error(format_args!("token {} exists: not replaced", image.serial));
        return Err(err(CKR_DEVICE_ERROR));
    }
    let tmp = building_path(dir, &image.serial);
    let building = claim_new_file(&tmp)?;
    if let Err(e) = fill(&tmp, image) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &target).map_err(|e| {
        crate::log::error(format_args!("cannot create token file: {e}"));
        err(CKR_DEVICE_ERROR)
    })?;
    drop(building);
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
