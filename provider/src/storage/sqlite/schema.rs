//! The database layout and the rows every part reads: the schema (version
//! 2) and the upgrade of a version 1 file, the metadata rows (the token's
//! metadata and its MAC, the object-set digest, numbers), the generation
//! counter each write bumps, and the purge of old tombstones.

use crate::error::{Result, err};
use crate::storage::integrity::{Integrity, MAC_LEN, Tag, toggle};
use crate::storage::store::{TokenMeta, Uid};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_RECOGNIZED};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

/// Version 2 added record MACs (`objects.mac`), the metadata MAC and the
/// object-set digest; a version 1 file is upgraded when it is opened for
/// writing.
pub(super) const SCHEMA_VERSION: i64 = 2;
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS objects (
    uid BLOB PRIMARY KEY,
    generation INTEGER NOT NULL,
    class INTEGER NOT NULL,
    private INTEGER NOT NULL,
    label BLOB NOT NULL,
    ckid BLOB NOT NULL,
    attrs BLOB NOT NULL,
    mac BLOB NOT NULL DEFAULT x''
);
CREATE INDEX IF NOT EXISTS objects_generation ON objects(generation);
CREATE INDEX IF NOT EXISTS objects_label ON objects(label);
CREATE INDEX IF NOT EXISTS objects_ckid ON objects(ckid);
CREATE INDEX IF NOT EXISTS objects_class ON objects(class);
CREATE TABLE IF NOT EXISTS tombstones (uid BLOB PRIMARY KEY, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS tombstones_generation ON tombstones(generation);
";

// Reads of the metadata (a few rows) and full reads of the records scan
// their table (`NOT INDEXED`): a damaged index, which the MACs do not cover,
// then neither hides nor invents a row of what is read and authenticated;
// SQLite's integrity check finds the damage (see `damage`).

/// Makes the tables of a new, empty token file (in the caller's
/// transaction), its schema version recorded.
pub(super) fn create_tables(tx: &Connection) -> Result<()> {
    tx.execute_batch(SCHEMA)?;
    tx.execute(
        "INSERT INTO meta(name, value) VALUES('schema', ?1)",
        params![SCHEMA_VERSION],
    )?;
    Ok(())
}

pub(super) fn meta_blob(conn: &Connection, name: &str) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .prepare_cached("SELECT value FROM meta NOT INDEXED WHERE name = ?1")?
        .query_row(params![name], |r| r.get(0))
        .optional()?)
}

pub(super) fn set_meta_blob(conn: &Connection, name: &str, value: &[u8]) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta(name, value) VALUES(?1, ?2)
         ON CONFLICT(name) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![name, value])?;
    Ok(())
}

/// Reads the metadata; when it names an integrity secret (every token since
/// schema 2), its MAC must match or the token is refused.
pub(crate) fn read_meta(conn: &Connection) -> Result<TokenMeta> {
    // The row and its MAC in one statement: one snapshot, so a writer
    // committing in between (a login writing its failure counter) cannot
    // pair a new row with the old MAC and raise a false tamper alarm.
    let (mut json, mut mac) = (None, None);
    let mut stmt = conn.prepare_cached(
        "SELECT name, value FROM meta NOT INDEXED WHERE name IN ('token', 'token_mac')",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let name: String = row.get(0)?;
        let value: Vec<u8> = row.get(1)?;
        match name.as_str() {
            "token" => json = Some(value),
            _ => mac = Some(value),
        }
    }
    let json = json.ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
    let meta: TokenMeta =
        serde_json::from_slice(&json).map_err(|_| err(CKR_TOKEN_NOT_RECOGNIZED))?;
    if let Some(secret) = &meta.integrity {
        let keys = Integrity::from_hex(secret)?;
        if mac.as_deref() != Some(&keys.meta_mac(&json)[..]) {
            crate::log::error(format_args!(
                "token {}: metadata failed authentication (corrupted or edited)",
                meta.serial
            ));
            return Err(err(CKR_DEVICE_ERROR));
        }
    }
    Ok(meta)
}

pub(super) fn write_meta(conn: &Connection, meta: &TokenMeta) -> Result<()> {
    let json = serde_json::to_vec(meta).map_err(|_| err(CKR_DEVICE_ERROR))?;
    set_meta_blob(conn, "token", &json)?;
    if let Some(secret) = &meta.integrity {
        set_meta_blob(
            conn,
            "token_mac",
            &Integrity::from_hex(secret)?.meta_mac(&json),
        )?;
    }
    Ok(())
}

/// The object-set digest (see `integrity`).
pub(super) fn digest(conn: &Connection) -> Result<Tag> {
    let mut d = [0u8; MAC_LEN];
    if let Some(v) = meta_blob(conn, "objects_digest")?
        && v.len() == MAC_LEN
    {
        d.copy_from_slice(&v);
    }
    Ok(d)
}

/// The stored MAC of object `uid`, if it exists.
pub(super) fn stored_mac(conn: &Connection, uid: &Uid) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .prepare_cached("SELECT mac FROM objects WHERE uid = ?1")?
        .query_row(params![&uid[..]], |r| r.get(0))
        .optional()?)
}

/// Upgrades a schema 1 file in place (one transaction): a fresh integrity
/// secret, the MAC of every record as it stands, the object-set digest.
/// The records are trusted as they are at this moment.
pub(super) fn upgrade_from_1(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version = meta_number(&tx, "schema")?;
    if version == SCHEMA_VERSION as u64 {
        return Ok(()); // another process upgraded it first
    }
    tx.execute_batch("ALTER TABLE objects ADD COLUMN mac BLOB NOT NULL DEFAULT x''")?;
    let mut meta = read_meta(&tx)?;
    let mut secret = [0u8; MAC_LEN];
    crate::storage::seal::random_bytes(&mut secret)?;
    meta.integrity = Some(crate::storage::seal::hex(&secret));
    secret.fill(0);
    let keys = Integrity::from_hex(meta.integrity.as_deref().unwrap_or_default())?;
    /// uid, generation, class, private, attrs.
    type Row = (Vec<u8>, i64, i64, bool, Vec<u8>);
    let rows: Vec<Row> = tx
        .prepare("SELECT uid, generation, class, private, attrs FROM objects")?
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut d = [0u8; MAC_LEN];
    for (uid, g, class, private, attrs) in rows {
        let tag = keys.record_mac(&uid, g as u64, class as u64, private, &attrs);
        toggle(&mut d, &tag);
        tx.execute(
            "UPDATE objects SET mac = ?1 WHERE uid = ?2",
            params![&tag[..], uid],
        )?;
    }
    set_meta_blob(&tx, "objects_digest", &d)?;
    write_meta(&tx, &meta)?;
    set_meta_number(&tx, "schema", SCHEMA_VERSION as u64)?;
    tx.commit()?;
    crate::log::info(format_args!(
        "token {}: upgraded to schema 2 (record MACs)",
        meta.serial
    ));
    Ok(())
}

/// A numeric metadata row (0 when absent).
pub(super) fn meta_number(conn: &Connection, name: &str) -> Result<u64> {
    let g: Option<i64> = conn
        .prepare_cached("SELECT value FROM meta NOT INDEXED WHERE name = ?1")?
        .query_row(params![name], |r| r.get(0))
        .optional()?;
    Ok(g.unwrap_or(0) as u64)
}

pub(super) fn set_meta_number(conn: &Connection, name: &str, value: u64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta(name, value) VALUES(?1, ?2)
         ON CONFLICT(name) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![name, value as i64])?;
    Ok(())
}

pub(super) fn generation(conn: &Connection) -> Result<u64> {
    meta_number(conn, "generation")
}

pub(super) fn bump_generation(conn: &Connection) -> Result<u64> {
    let g = generation(conn)? + 1;
    set_meta_number(conn, "generation", g)?;
    Ok(g)
}

/// At most every [`PURGE_EVERY`] generations, drops the tombstones older
/// than [`TOMBSTONE_GENERATIONS`] and raises the floor below which readers
/// reload everything. True when it purged.
pub(super) fn purge_tombstones(conn: &Connection, generation: u64) -> Result<bool> {
    let Some(floor) =
        crate::storage::store::tombstone_purge(generation, meta_number(conn, "tombstone_floor")?)
    else {
        return Ok(false);
    };
    conn.execute(
        "DELETE FROM tombstones WHERE generation <= ?1",
        params![floor as i64],
    )?;
    set_meta_number(conn, "tombstone_floor", floor)?;
    Ok(true)
}

pub(super) fn uid_from(v: Vec<u8>) -> rusqlite::Result<Uid> {
    v.try_into().map_err(|_| {
        rusqlite::Error::InvalidColumnType(0, "uid".into(), rusqlite::types::Type::Blob)
    })
}

/// Makes `keys` the keys of `meta`'s integrity secret (derived again only
/// when the secret changed).
pub(super) fn keys_of(keys: &mut Option<Integrity>, meta: &TokenMeta) -> Result<()> {
    Integrity::follow(keys, meta.integrity.as_deref())
}
