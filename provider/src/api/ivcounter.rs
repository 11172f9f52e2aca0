//! This process's share of a token's GCM IV counters: the invocation field
//! of `CKG_GENERATE_COUNTER` IVs (mechanisms spec 3.0 §2.12,
//! `CK_GCM_MESSAGE_PARAMS`; NIST SP 800-38D §8.2.1).
//!
//! The counter of an AES key value lives in its token's store, which hands
//! out blocks of values, each at most once
//! ([`TokenStore::reserve_iv_counter`](crate::storage::TokenStore::reserve_iv_counter)).
//! This process keeps one block per key value per token ([`IvCounters`]),
//! shared by every operation on every object with that value; a block is
//! used up before the next one is reserved. The first block of a key value
//! in a process is [`FIRST_BLOCK`] values and each next one twice the last,
//! up to [`MAX_BLOCK`]: a process that encrypts a few messages skips few
//! values, one that encrypts many pays one storage transaction per
//! [`MAX_BLOCK`] messages. Values of a block a process never uses (it
//! ended, or was killed) are skipped, never handed out again.
//!
//! A key value is recognised by a fingerprint (HMAC-SHA256 under a random
//! key of this process), computed once per parsed key (the object's cached
//! `KeyMaterial`): later operations on the same object find its block by
//! the address of that `KeyMaterial`, which a weak reference held here
//! keeps from being reused by another allocation.
//!
//! Locks: a session's operations, then a key value's block
//! ([`KeyCounter`]), then (for a reservation) the token's store.

use crate::error::{Result, err};
use crate::mechanisms::keys::KeyMaterial;
use cryptoki_sys::{CKR_DATA_LEN_RANGE, CKR_GENERAL_ERROR, CKR_KEY_TYPE_INCONSISTENT};
use hmac::{Hmac, KeyInit, Mac};
use parking_lot::Mutex;
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};
use zeroize::Zeroizing;

/// Values in the first block a process reserves for a key value.
pub const FIRST_BLOCK: u64 = 256;
/// The largest block (each block doubles the last, up to this).
pub const MAX_BLOCK: u64 = 1 << 16;
/// Key values whose blocks are kept while no operation uses them; beyond
/// this, idle ones are dropped (the rest of their blocks skipped). The
/// same bound applies to the parsed keys remembered by address.
const KEEP_IDLE: usize = 1024;

/// The blocks of one token in this process, by key value.
#[derive(Default)]
pub struct IvCounters {
    /// The key of this process's fingerprints of key values (random, made
    /// on first use), so no key value is kept here.
    local: OnceLock<Zeroizing<[u8; 32]>>,
    maps: Mutex<Maps>,
}

#[derive(Default)]
struct Maps {
    /// Blocks by key-value fingerprint.
    blocks: HashMap<[u8; 32], Arc<KeyCounter>>,
    /// Blocks by the address of a parsed key; the weak reference keeps the
    /// address from being reused while the entry exists.
    parsed: HashMap<usize, (Weak<KeyMaterial>, Arc<KeyCounter>)>,
}

/// The block of counter values of one key value in this process.
#[derive(Default)]
pub struct KeyCounter {
    block: Mutex<Block>,
}

#[derive(Default)]
struct Block {
    /// The next value to hand out.
    next: u64,
    /// The end of the block (`next == end`: used up, or none yet).
    end: u64,
    /// How many values the last reservation took.
    size: u64,
}

impl IvCounters {
    /// The counter block of the value of the AES key `key`.
    pub fn of(&self, key: &Arc<KeyMaterial>) -> Result<Arc<KeyCounter>> {
        let address = Arc::as_ptr(key) as usize;
        if let Some((seen, c)) = self.maps.lock().parsed.get(&address)
            && std::ptr::eq(seen.as_ptr(), Arc::as_ptr(key))
        {
            return Ok(c.clone());
        }
        let KeyMaterial::Aes(aes) = &**key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        let fingerprint = self.fingerprint(aes.bytes())?;
        let mut maps = self.maps.lock();
        if maps.parsed.len() >= KEEP_IDLE {
            maps.parsed.retain(|_, (k, _)| k.strong_count() > 0);
        }
        if maps.blocks.len() >= KEEP_IDLE {
            maps.blocks.retain(|_, c| Arc::strong_count(c) > 1);
        }
        let c = maps
            .blocks
            .entry(fingerprint)
            .or_insert_with(|| Arc::new(KeyCounter::default()))
            .clone();
        maps.parsed
            .insert(address, (Arc::downgrade(key), c.clone()));
        Ok(c)
    }

    /// Forgets the parsed keys remembered by address (at logout and
    /// finalize): their weak references would keep the parsed keys' heap
    /// blocks allocated, and so out of the zeroing the allocator gives a
    /// block when it is freed (`ffi::alloc`). The blocks of counter values,
    /// found by fingerprint, stay.
    pub fn forget_parsed_keys(&self) {
        self.maps.lock().parsed.clear();
    }

    /// This process's fingerprint of the key value `value`.
    fn fingerprint(&self, value: &[u8]) -> Result<[u8; 32]> {
        let local = match self.local.get() {
            Some(k) => k,
            None => {
                let mut k = Zeroizing::new([0u8; 32]);
                crate::mechanisms::random::os_fill(&mut k[..])?;
                // A thread that raced here first wins; both keys are fine.
                let _ = self.local.set(k);
                self.local.get().ok_or(err(CKR_GENERAL_ERROR))?
            }
        };
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&local[..])
            .map_err(|_| err(CKR_GENERAL_ERROR))?;
        mac.update(value);
        Ok(mac.finalize().into_bytes().into())
    }
}

/// True when `value` fits in a counter field of `bits` bits.
fn fits(value: u64, bits: usize) -> bool {
    bits >= 64 || value >> bits == 0
}

impl KeyCounter {
    /// The next counter value, for a counter field of `bits` bits.
    /// `reserve(count)` reserves `count` values in the store and returns
    /// the first; it is called when this process's block is used up.
    /// `CKR_DATA_LEN_RANGE` when the next value does not fit in `bits`
    /// (the value stays for a caller with a wider field).
    pub fn next(&self, bits: usize, reserve: impl FnOnce(u64) -> Result<u64>) -> Result<u64> {
        let mut b = self.block.lock();
        if b.next == b.end {
            // The store's counter is past `end`: if `end` does not fit,
            // no new block would.
            if !fits(b.end, bits) {
                return Err(err(CKR_DATA_LEN_RANGE));
            }
            let size = if b.size == 0 {
                FIRST_BLOCK
            } else {
                (b.size * 2).min(MAX_BLOCK)
            };
            let first = reserve(size)?;
            *b = Block {
                next: first,
                end: first.checked_add(size).ok_or(err(CKR_DATA_LEN_RANGE))?,
                size,
            };
        }
        if !fits(b.next, bits) {
            return Err(err(CKR_DATA_LEN_RANGE));
        }
        let value = b.next;
        b.next += 1;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_grow_and_values_follow_the_store() {
        let c = KeyCounter::default();
        let mut asked = Vec::new();
        let mut store = 1000u64;
        let mut take = |bits| {
            c.next(bits, |n| {
                asked.push(n);
                store += 5; // another process reserved in between
                let first = store;
                store += n;
                Ok(first)
            })
        };
        assert_eq!(take(32).unwrap(), 1005);
        for i in 1..FIRST_BLOCK {
            assert_eq!(take(32).unwrap(), 1005 + i);
        }
        assert_eq!(take(32).unwrap(), 1005 + FIRST_BLOCK + 5);
        for _ in 0..(MAX_BLOCK * 4) {
            take(64).unwrap();
        }
        let mut sizes = vec![FIRST_BLOCK];
        while sizes.len() < asked.len() {
            sizes.push((sizes.last().unwrap() * 2).min(MAX_BLOCK));
        }
        assert_eq!(asked, sizes);
    }

    #[test]
    fn a_value_that_does_not_fit_the_field_is_refused_and_kept() {
        let c = KeyCounter::default();
        let first = (1u64 << 32) - 2;
        assert_eq!(c.next(32, |_| Ok(first)).unwrap(), first);
        assert_eq!(c.next(32, |_| unreachable!()).unwrap(), first + 1);
        assert_eq!(
            c.next(32, |_| unreachable!()).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        // A wider field takes the value the narrow one could not.
        assert_eq!(c.next(33, |_| unreachable!()).unwrap(), first + 2);
        assert!(fits(u64::MAX, 64) && fits(u64::MAX, 200) && !fits(1 << 40, 40));
        // A used-up block whose end does not fit reserves nothing.
        let c = KeyCounter::default();
        c.next(64, |_| Ok((1 << 32) - FIRST_BLOCK)).unwrap();
        for _ in 1..FIRST_BLOCK {
            c.next(32, |_| unreachable!()).unwrap();
        }
        assert_eq!(
            c.next(32, |_| panic!("no reservation")).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
    }

    fn aes(value: &[u8]) -> Arc<KeyMaterial> {
        let get = |ty| -> Result<Option<Zeroizing<Vec<u8>>>> {
            Ok((ty == cryptoki_sys::CKA_VALUE).then(|| Zeroizing::new(value.to_vec())))
        };
        let key = crate::mechanisms::keys::load(
            cryptoki_sys::CKO_SECRET_KEY,
            Some(cryptoki_sys::CKK_AES),
            &get,
        );
        Arc::new(key.unwrap())
    }

    #[test]
    fn one_block_per_key_value() {
        let ivc = IvCounters::default();
        let k = aes(&[1; 16]);
        let a = ivc.of(&k).unwrap();
        assert!(Arc::ptr_eq(&a, &ivc.of(&k).unwrap()), "the same parsed key");
        let copy = aes(&[1; 16]);
        assert!(Arc::ptr_eq(&a, &ivc.of(&copy).unwrap()), "a copy");
        assert!(!Arc::ptr_eq(&a, &ivc.of(&aes(&[2; 16])).unwrap()));
        assert!(!Arc::ptr_eq(&a, &ivc.of(&aes(&[1; 32])).unwrap()));
        // Idle entries go once there are many; those in use stay.
        let mut keep = Vec::new();
        for i in 0..(KEEP_IDLE as u32 + 10) {
            let key = aes(&[&i.to_le_bytes()[..], &[9; 12]].concat());
            ivc.of(&key).unwrap();
            if i % 100 == 0 {
                keep.push(key);
            }
        }
        let maps = ivc.maps.lock();
        assert!(maps.blocks.len() <= KEEP_IDLE + 10);
        assert!(maps.parsed.len() < KEEP_IDLE);
        drop(maps);
        assert!(Arc::ptr_eq(&a, &ivc.of(&k).unwrap()));
        assert!(Arc::ptr_eq(&a, &ivc.of(&copy).unwrap()));
    }
}
