//! The key-block split binding of `CKM_TLS12_KEY_AND_MAC_DERIVE` under the
//! `default` key policy (docs/SECURITY.md, "TLS 1.2"): the key block is a
//! function of (master secret, PRF, client random, server random) only,
//! and the split into MAC keys, write keys and IVs is the caller's choice
//! per call. The IVs come back in the clear, so a second split of the same
//! key block could return another split's key bytes as "IVs". The first
//! split derived from a token-secret master is recorded here, per tuple,
//! and a different split of the same tuple is refused.
//!
//! The table holds no key material: each tuple is named by an HMAC-SHA-256
//! under a random key made once per process. It is bounded
//! ([`MAX_ENTRIES`]) and never evicts (an eviction a caller could force
//! would re-open the tuple): when it is full, derivations that would
//! return IVs are refused (fail closed).

use crate::error::{Result, err};
use cryptoki_sys::*;
use hmac::{KeyInit, Mac};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use zeroize::Zeroizing;

/// How many tuples the table records.
pub const MAX_ENTRIES: usize = 65536;

/// A split: (MAC key, write key, IV) lengths in bytes.
pub type Split = (usize, usize, usize);

type Table = HashMap<[u8; 32], Split>;

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The per-process key naming tuples.
fn tag_key() -> Result<&'static Zeroizing<[u8; 32]>> {
    static KEY: OnceLock<Zeroizing<[u8; 32]>> = OnceLock::new();
    if let Some(k) = KEY.get() {
        return Ok(k);
    }
    let mut k = Zeroizing::new([0u8; 32]);
    crate::mechanisms::random::os_fill(&mut k[..])?;
    Ok(KEY.get_or_init(|| k))
}

#[allow(clippy::unnecessary_cast)] // CK_ULONG is 32 bits wide on some platforms
/// The name of one (master, PRF, client random, server random) tuple.
fn tag(master: &[u8], prf: CK_MECHANISM_TYPE, client: &[u8], server: &[u8]) -> Result<[u8; 32]> {
    let mut m = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&tag_key()?[..])
        .map_err(|_| err(CKR_GENERAL_ERROR))?;
    m.update(&(master.len() as u64).to_be_bytes());
    m.update(master);
    m.update(&(prf as u64).to_be_bytes());
    m.update(client);
    m.update(server);
    Ok(m.finalize().into_bytes().into())
}

/// Records `split` for the tuple, or checks it against the split recorded
/// first: a different split is `CKR_MECHANISM_PARAM_INVALID`. When the
/// table is full, a split with IVs is refused and one without is let
/// through unrecorded (no later IV split of any new tuple can pass).
pub fn bind(
    master: &[u8],
    prf: CK_MECHANISM_TYPE,
    client: &[u8],
    server: &[u8],
    split: Split,
) -> Result<()> {
    let tag = tag(master, prf, client, server)?;
    let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
    match t.get(&tag) {
        Some(first) if *first == split => Ok(()),
        Some(_) => Err(err(CKR_MECHANISM_PARAM_INVALID)),
        None if t.len() >= MAX_ENTRIES => {
            if split.2 > 0 {
                Err(err(CKR_MECHANISM_PARAM_INVALID))
            } else {
                Ok(())
            }
        }
        None => {
            t.insert(tag, split);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_split_wins_per_tuple() {
        let m = [7u8; 48];
        let (c, s) = ([1u8; 32], [2u8; 32]);
        bind(&m, CKM_SHA256, &c, &s, (32, 16, 0)).unwrap();
        bind(&m, CKM_SHA256, &c, &s, (32, 16, 0)).unwrap();
        assert_eq!(
            bind(&m, CKM_SHA256, &c, &s, (0, 32, 12)).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
        // Another PRF or random is another tuple.
        bind(&m, CKM_SHA384, &c, &s, (0, 32, 12)).unwrap();
        bind(&m, CKM_SHA256, &s, &c, (0, 32, 12)).unwrap();
    }
}
