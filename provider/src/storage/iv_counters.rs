//! The GCM IV counters of a token: the invocation field of the
//! deterministic IV construction of NIST SP 800-38D §8.2.1, which
//! `CKG_GENERATE_COUNTER` IVs of message-based AES-GCM use (mechanisms spec
//! 3.0 §2.12, `CK_GCM_MESSAGE_PARAMS`).
//!
//! There is one counter per AES key *value*, not per object or operation,
//! so copies of a key (`C_CopyObject`, the same value imported twice, a
//! session copy of a token key) share it. It is named by the value's
//! fingerprint (`Integrity::iv_fingerprint`, an HMAC under a key derived
//! from the token's integrity secret). Values are handed out in blocks
//! ([`TokenStore::reserve_iv_counter`](super::TokenStore::reserve_iv_counter)):
//! the stored counter moves past a block in the transaction that reserves
//! it, before any of its values is used, so a value is never handed out
//! twice — not to two processes, not after a restart — and a process that
//! dies only loses (skips) the rest of its block.
//!
//! Layout ([`IvTable`]; SQLite's is made by the first reservation, a file
//! without it opens as before, and a module that predates it ignores it;
//! PostgreSQL keeps the same values in its own rows, `postgres::schema`):
//! - table `iv_counters(fingerprint, next, mac)`: the first value of the
//!   key's counter not yet reserved, with
//!   `mac = Integrity::iv_counter_mac(fingerprint, next)`;
//! - the metadata row `iv_counters`: the *floor*, below which no counter
//!   starts (8 bytes, big-endian), and the set's tag
//!   `Integrity::iv_set_tag(floor, XOR of every row's mac)`.
//!
//! Each reservation checks the set's tag against every row's stored MAC (a
//! row deleted, added by hand or put back from an older copy of the file,
//! or an edited floor, no longer adds up) and its own row's MAC (an edited
//! value); on any mismatch it refuses with `CKR_DEVICE_ERROR` and a log
//! line rather than hand out a value that may have been used. As for
//! every MAC of the token, the keys come from a secret kept in the file:
//! this catches corruption and careless edits, not someone who knows the
//! format (see `integrity`); a rollback of the whole file to an older copy
//! rolls the counters back with it and is not detected.
//!
//! `C_InitToken` gives the token a new integrity secret, so no key value
//! has the same fingerprint afterwards: [`carry_over`] raises the floor to
//! the highest value reserved so far and empties the table, so the same
//! value imported after the re-initialisation still gets new values.

use super::integrity::{Integrity, MAC_LEN, Tag, toggle};
use crate::error::{Error, Result, err};
use cryptoki_sys::{CKR_DATA_LEN_RANGE, CKR_DEVICE_ERROR};
use rusqlite::{Connection, OptionalExtension, params};

/// Counters stay below this (SQLite stores integers as signed 64-bit).
pub const LIMIT: u64 = i64::MAX as u64;

/// The block of `count` values reserved for a key whose stored counter is
/// `stored` (`None` for a key never seen), when no counter starts below
/// `floor`: `(first, next)`, where `next` is the value to store.
/// `CKR_DATA_LEN_RANGE` once the counter would pass [`LIMIT`].
pub fn block(stored: Option<u64>, floor: u64, count: u64) -> Result<(u64, u64)> {
    let first = stored.unwrap_or(0).max(floor);
    let next = first
        .checked_add(count)
        .filter(|&n| n <= LIMIT)
        .ok_or(err(CKR_DATA_LEN_RANGE))?;
    Ok((first, next))
}

/// Where a token's counters are kept, read and written in the caller's
/// write transaction: the SQLite file (below) or the PostgreSQL rows
/// (`postgres::iv`). The checks and the arithmetic are this file's, for both.
pub(crate) trait IvTable {
    /// The stored state (floor ‖ set tag), if any.
    fn state_blob(&self) -> Result<Option<Vec<u8>>>;
    /// Stores the state.
    fn set_state_blob(&self, blob: &[u8]) -> Result<()>;
    /// The stored MAC of every row.
    fn row_macs(&self) -> Result<Vec<Vec<u8>>>;
    /// The fingerprint of every row.
    fn fingerprints(&self) -> Result<Vec<Vec<u8>>>;
    /// The row of `fingerprint`: its stored next value and MAC.
    fn row(&self, fingerprint: &Tag) -> Result<Option<(i64, Vec<u8>)>>;
    /// Inserts or replaces the row of `fingerprint`.
    fn set_row(&self, fingerprint: &Tag, next: u64, mac: &Tag) -> Result<()>;
    /// Deletes every row (the state stays).
    fn clear_rows(&self) -> Result<()>;
}

/// Creates the table (in the reserving transaction).
const TABLE: &str = "CREATE TABLE IF NOT EXISTS iv_counters (
    fingerprint BLOB PRIMARY KEY,
    next INTEGER NOT NULL,
    mac BLOB NOT NULL
)";

/// The name of the metadata row holding the floor and the set's tag.
const STATE: &str = "iv_counters";

fn table_exists(conn: &Connection) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'iv_counters'",
        )?
        .exists([])?)
}

/// SQLite layout (module documentation): the table is made by the first
/// reservation; the state is a `meta` row.
impl IvTable for Connection {
    fn state_blob(&self) -> Result<Option<Vec<u8>>> {
        Ok(self
            .prepare_cached("SELECT value FROM meta WHERE name = ?1")?
            .query_row(params![STATE], |r| r.get(0))
            .optional()?)
    }

    fn set_state_blob(&self, blob: &[u8]) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO meta(name, value) VALUES(?1, ?2)
             ON CONFLICT(name) DO UPDATE SET value = excluded.value",
        )?
        .execute(params![STATE, blob])?;
        Ok(())
    }

    fn row_macs(&self) -> Result<Vec<Vec<u8>>> {
        if !table_exists(self)? {
            return Ok(Vec::new());
        }
        let mut stmt = self.prepare_cached("SELECT mac FROM iv_counters")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn fingerprints(&self) -> Result<Vec<Vec<u8>>> {
        if !table_exists(self)? {
            return Ok(Vec::new());
        }
        let mut stmt = self.prepare_cached("SELECT fingerprint FROM iv_counters")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn row(&self, fingerprint: &Tag) -> Result<Option<(i64, Vec<u8>)>> {
        if !table_exists(self)? {
            return Ok(None);
        }
        Ok(self
            .prepare_cached("SELECT next, mac FROM iv_counters WHERE fingerprint = ?1")?
            .query_row(params![&fingerprint[..]], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    fn set_row(&self, fingerprint: &Tag, next: u64, mac: &Tag) -> Result<()> {
        self.execute_batch(TABLE)?;
        self.prepare_cached(
            "INSERT INTO iv_counters(fingerprint, next, mac) VALUES(?1, ?2, ?3)
             ON CONFLICT(fingerprint) DO UPDATE SET next = excluded.next, mac = excluded.mac",
        )?
        .execute(params![&fingerprint[..], next as i64, &mac[..]])?;
        Ok(())
    }

    fn clear_rows(&self) -> Result<()> {
        if table_exists(self)? {
            self.execute("DELETE FROM iv_counters", [])?;
        }
        Ok(())
    }
}

/// Logs that the counters of token `serial` failed authentication.
fn damaged(serial: &str, what: &str) -> Error {
    crate::log::error(format_args!(
        "token {serial}: GCM IV counters failed authentication ({what}); \
         counter IVs are refused until the token is re-initialised"
    ));
    err(CKR_DEVICE_ERROR)
}

/// The stored floor and set tag, if any.
fn state(conn: &(impl IvTable + ?Sized), serial: &str) -> Result<Option<(u64, Vec<u8>)>> {
    let Some(blob) = conn.state_blob()? else {
        return Ok(None);
    };
    if blob.len() != 8 + MAC_LEN {
        return Err(damaged(serial, "the set's tag has the wrong length"));
    }
    let mut floor = [0u8; 8];
    floor.copy_from_slice(&blob[..8]);
    Ok(Some((u64::from_be_bytes(floor), blob[8..].to_vec())))
}

fn set_state(
    conn: &(impl IvTable + ?Sized),
    keys: &Integrity,
    floor: u64,
    xor: &Tag,
) -> Result<()> {
    let mut blob = floor.to_be_bytes().to_vec();
    blob.extend_from_slice(&keys.iv_set_tag(floor, xor));
    conn.set_state_blob(&blob)
}

/// The floor and the XOR of the rows' stored MACs, once the set's tag
/// checked out under `keys` (a token that never reserved: floor 0, no rows).
fn verified_set(
    conn: &(impl IvTable + ?Sized),
    keys: &Integrity,
    serial: &str,
) -> Result<(u64, Tag)> {
    let mut xor = [0u8; MAC_LEN];
    let macs = conn.row_macs()?;
    for mac in &macs {
        if mac.len() != MAC_LEN {
            return Err(damaged(serial, "a counter's MAC has the wrong length"));
        }
        toggle(&mut xor, mac);
    }
    match state(conn, serial)? {
        None if macs.is_empty() => Ok((0, xor)),
        None => Err(damaged(serial, "counters without the set's tag")),
        Some((floor, tag)) if tag[..] == keys.iv_set_tag(floor, &xor)[..] => Ok((floor, xor)),
        Some(_) => Err(damaged(
            serial,
            "the set of counters or its floor was changed outside the module",
        )),
    }
}

/// A row's stored value, once its MAC checked out.
fn verified_row(
    conn: &(impl IvTable + ?Sized),
    keys: &Integrity,
    serial: &str,
    fingerprint: &Tag,
) -> Result<Option<(u64, Vec<u8>)>> {
    let Some((next, mac)) = conn.row(fingerprint)? else {
        return Ok(None);
    };
    let next = u64::try_from(next).map_err(|_| damaged(serial, "a negative counter"))?;
    if mac[..] != keys.iv_counter_mac(fingerprint, next)[..] {
        return Err(damaged(serial, "a counter was edited"));
    }
    Ok(Some((next, mac)))
}

/// Reserves `count` values of the counter of the AES key value `key`
/// (see the module documentation) and returns the first, in the caller's
/// write transaction on `conn`; `keys` are those of the metadata as it
/// is in that transaction.
pub(crate) fn reserve(
    conn: &(impl IvTable + ?Sized),
    keys: &Integrity,
    serial: &str,
    key: &[u8],
    count: u64,
) -> Result<u64> {
    let (floor, mut xor) = verified_set(conn, keys, serial)?;
    let fingerprint = keys.iv_fingerprint(key);
    let stored = verified_row(conn, keys, serial, &fingerprint)?;
    let (first, next) = block(stored.as_ref().map(|(n, _)| *n), floor, count)?;
    let mac = keys.iv_counter_mac(&fingerprint, next);
    conn.set_row(&fingerprint, next, &mac)?;
    if let Some((_, old)) = &stored {
        toggle(&mut xor, old);
    }
    toggle(&mut xor, &mac);
    set_state(conn, keys, floor, &xor)?;
    Ok(first)
}

/// Checks every counter and the set's tag under `keys` (a token copied
/// between stores, `storage::image`).
pub(crate) fn verify_all(
    conn: &(impl IvTable + ?Sized),
    keys: &Integrity,
    serial: &str,
) -> Result<()> {
    verified_set(conn, keys, serial)?;
    for fp in conn.fingerprints()? {
        let fp: Tag = fp[..]
            .try_into()
            .map_err(|_| damaged(serial, "a fingerprint has the wrong length"))?;
        verified_row(conn, keys, serial, &fp)?;
    }
    Ok(())
}

/// [`reserve`] under the keys of the metadata as it is in the caller's
/// write transaction (`secret`, its integrity secret): another process may
/// have re-initialised the token since this one looked, so the keys this
/// process holds (`known`) serve only while they are still that secret's.
pub(crate) fn reserve_current(
    conn: &(impl IvTable + ?Sized),
    known: Option<&Integrity>,
    secret: Option<&str>,
    serial: &str,
    key: &[u8],
    count: u64,
) -> Result<u64> {
    let secret = secret.ok_or(err(CKR_DEVICE_ERROR))?;
    let fresh;
    let keys = match known {
        Some(k) if k.is_of(secret) => k,
        _ => {
            fresh = Integrity::from_hex(secret)?;
            &fresh
        }
    };
    reserve(conn, keys, serial, key, count)
}

/// At `C_InitToken`, in its transaction: the counters verified under the
/// outgoing integrity keys `old` become one floor (the highest value
/// reserved so far) tagged under the incoming `new`, and the table is
/// emptied. Counters that fail authentication are left as they are (and
/// logged): they then fail under the new keys too, so counter IVs stay
/// refused on this token rather than start again from an unknown point.
pub(crate) fn carry_over(
    conn: &(impl IvTable + ?Sized),
    old: Option<&Integrity>,
    new: &Integrity,
    serial: &str,
) -> Result<()> {
    let fingerprints = conn.fingerprints()?;
    if fingerprints.is_empty() && state(conn, serial).ok().flatten().is_none() {
        return Ok(()); // never used
    }
    let Some(old) = old else {
        let _ = damaged(serial, "no integrity secret to check them with");
        return Ok(());
    };
    let highest = (|| -> Result<u64> {
        let (floor, _) = verified_set(conn, old, serial)?;
        let mut highest = floor;
        for fp in &fingerprints {
            let fp: Tag = fp[..]
                .try_into()
                .map_err(|_| damaged(serial, "a fingerprint has the wrong length"))?;
            if let Some((next, _)) = verified_row(conn, old, serial, &fp)? {
                highest = highest.max(next);
            }
        }
        Ok(highest)
    })();
    let Ok(highest) = highest else {
        return Ok(()); // logged; left to fail
    };
    conn.clear_rows()?;
    set_state(conn, new, highest, &[0; MAC_LEN])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(b: &str) -> Integrity {
        Integrity::from_hex(&b.repeat(32)).unwrap()
    }

    fn db() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL)")
            .unwrap();
        c
    }

    #[test]
    fn blocks_follow_the_stored_value_and_the_floor() {
        assert_eq!(block(None, 0, 16).unwrap(), (0, 16));
        assert_eq!(block(Some(40), 0, 16).unwrap(), (40, 56));
        assert_eq!(block(Some(40), 100, 16).unwrap(), (100, 116));
        assert_eq!(block(None, 100, 1).unwrap(), (100, 101));
        assert_eq!(block(Some(LIMIT - 4), 0, 4).unwrap(), (LIMIT - 4, LIMIT));
        assert_eq!(
            block(Some(LIMIT - 4), 0, 5).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        assert_eq!(
            block(Some(u64::MAX), 0, 1).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
    }

    #[test]
    fn reservations_never_overlap_per_key_value() {
        let c = db();
        let k = keys("5a");
        assert_eq!(reserve(&c, &k, "t", b"key one", 10).unwrap(), 0);
        assert_eq!(reserve(&c, &k, "t", b"key one", 5).unwrap(), 10);
        assert_eq!(reserve(&c, &k, "t", b"key two", 3).unwrap(), 0);
        assert_eq!(reserve(&c, &k, "t", b"key one", 1).unwrap(), 15);
        assert_eq!(reserve(&c, &k, "t", b"key two", 1).unwrap(), 3);
        // No plain value of a key is stored.
        let stored: Vec<Vec<u8>> = c
            .prepare("SELECT fingerprint FROM iv_counters")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(stored.len(), 2);
        assert!(stored.iter().all(|f| f.len() == MAC_LEN));
    }

    #[test]
    fn edits_deletions_and_replays_are_refused() {
        let k = keys("5a");
        let edit = |sql: &str| {
            let c = db();
            reserve(&c, &k, "t", b"a", 10).unwrap();
            reserve(&c, &k, "t", b"b", 10).unwrap();
            c.execute_batch(sql).unwrap();
            reserve(&c, &k, "t", b"a", 1).map_err(|e| e.rv())
        };
        assert_eq!(edit(""), Ok(10), "untouched");
        for sql in [
            "UPDATE iv_counters SET next = 0",
            "UPDATE iv_counters SET next = -1",
            "DELETE FROM iv_counters",
            "DROP TABLE iv_counters",
            "UPDATE iv_counters SET mac = x'00'",
            "UPDATE meta SET value = zeroblob(40) WHERE name = 'iv_counters'",
            "DELETE FROM meta WHERE name = 'iv_counters'",
        ] {
            assert_eq!(edit(sql), Err(CKR_DEVICE_ERROR), "{sql}");
        }
        // A row put back as it was in an older copy (its MAC valid).
        let c = db();
        reserve(&c, &k, "t", b"a", 10).unwrap();
        let old: (Vec<u8>, i64, Vec<u8>) = c
            .query_row("SELECT fingerprint, next, mac FROM iv_counters", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        reserve(&c, &k, "t", b"a", 10).unwrap();
        c.execute(
            "UPDATE iv_counters SET next = ?2, mac = ?3 WHERE fingerprint = ?1",
            params![old.0, old.1, old.2],
        )
        .unwrap();
        assert_eq!(
            reserve(&c, &k, "t", b"a", 1).unwrap_err().rv(),
            CKR_DEVICE_ERROR
        );
        // Other keys' MACs do not open the set.
        let c = db();
        reserve(&c, &k, "t", b"a", 10).unwrap();
        assert_eq!(
            reserve(&c, &keys("6b"), "t", b"a", 1).unwrap_err().rv(),
            CKR_DEVICE_ERROR
        );
    }

    #[test]
    fn reinitialisation_keeps_every_value_used() {
        let c = db();
        let (old, new) = (keys("5a"), keys("6b"));
        // Nothing to carry: nothing is written.
        carry_over(&c, Some(&old), &new, "t").unwrap();
        assert!(state(&c, "t").unwrap().is_none());
        reserve(&c, &old, "t", b"a", 10).unwrap();
        reserve(&c, &old, "t", b"b", 70).unwrap();
        carry_over(&c, Some(&old), &new, "t").unwrap();
        // Under the new keys every value starts past the old ones.
        assert_eq!(reserve(&c, &new, "t", b"a", 5).unwrap(), 70);
        assert_eq!(reserve(&c, &new, "t", b"c", 5).unwrap(), 70);
        assert_eq!(reserve(&c, &new, "t", b"a", 5).unwrap(), 75);
        // Twice in a row.
        let newer = keys("7c");
        carry_over(&c, Some(&new), &newer, "t").unwrap();
        assert_eq!(reserve(&c, &newer, "t", b"b", 1).unwrap(), 80);
        // Damaged counters stay refused after a re-initialisation.
        c.execute_batch("DELETE FROM iv_counters").unwrap();
        let newest = keys("8d");
        carry_over(&c, Some(&newer), &newest, "t").unwrap();
        assert_eq!(
            reserve(&c, &newest, "t", b"b", 1).unwrap_err().rv(),
            CKR_DEVICE_ERROR
        );
    }

    #[test]
    fn two_connections_to_one_token_file_share_the_counters() {
        use crate::config::Durability;
        use crate::storage::TokenStore;
        use crate::storage::sqlite::{SqliteStore, tests::meta};
        let dir = tempfile::tempdir().unwrap();
        let mut a = SqliteStore::create(dir.path(), &meta("ivc"), Durability::Normal).unwrap();
        let mut b = SqliteStore::open(dir.path(), "ivc", Durability::Normal).unwrap();
        let mut blocks = Vec::new();
        for i in 0..20u64 {
            let s: &mut dyn TokenStore = if i % 3 == 0 { &mut a } else { &mut b };
            let count = 1 + i * 7;
            let first = s.reserve_iv_counter(b"one key", count).unwrap();
            blocks.push((first, first + count));
        }
        blocks.sort();
        for w in blocks.windows(2) {
            assert!(w[0].1 <= w[1].0, "blocks {:?} and {:?} overlap", w[0], w[1]);
        }
        let highest = blocks.last().unwrap().1;
        // C_InitToken through the other connection: the value imported
        // again continues past every value reserved.
        let mut m = meta("ivc");
        m.epoch = "e2".into();
        m.integrity = Some("6b".repeat(32));
        b.reinitialize(&m).unwrap();
        // The other connection works in the old token until it accepts the
        // new one (its user dropped the old token's state).
        assert_eq!(
            a.reserve_iv_counter(b"one key", 1).unwrap_err().rv(),
            cryptoki_sys::CKR_DEVICE_REMOVED
        );
        a.accept_epoch("e2");
        assert_eq!(a.reserve_iv_counter(b"one key", 1).unwrap(), highest);
        assert_eq!(b.reserve_iv_counter(b"another", 1).unwrap(), highest);
        drop((a, b));
        // Reopened (a restart): still going up.
        let mut c = SqliteStore::open(dir.path(), "ivc", Durability::Normal).unwrap();
        assert_eq!(c.reserve_iv_counter(b"one key", 1).unwrap(), highest + 1);
    }
}
