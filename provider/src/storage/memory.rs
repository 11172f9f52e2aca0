//! The memory store: nothing touches disk; the token lives as long as the
//! process that created it.

use super::integrity::{Integrity, Tag};
use super::store::{Changes, Expect, ObjectRecord, TokenMeta, TokenStore, Uid, Written};
use crate::error::{Result, err};
use std::collections::HashMap;

/// A token kept in process memory.
pub struct MemoryStore {
    meta: TokenMeta,
    objects: HashMap<Uid, ObjectRecord>,
    generation: u64,
    /// The GCM IV counters by key-value fingerprint (see `iv_counters`).
    iv_counters: HashMap<Tag, u64>,
    /// No IV counter starts below this (the highest value reserved
    /// before the last re-initialisation).
    iv_floor: u64,
    /// The integrity keys of `meta` (made on first use).
    keys: Option<Integrity>,
}

impl MemoryStore {
    /// A new, empty token.
    pub fn new(meta: TokenMeta) -> Self {
        MemoryStore {
            meta,
            objects: HashMap::new(),
            generation: 0,
            iv_counters: HashMap::new(),
            iv_floor: 0,
            keys: None,
        }
    }
}

impl TokenStore for MemoryStore {
    fn serial(&self) -> String {
        self.meta.serial.clone()
    }

    fn meta(&mut self) -> Result<TokenMeta> {
        Ok(self.meta.clone())
    }

    fn update_meta(
        &mut self,
        change: &mut dyn FnMut(&mut TokenMeta) -> Result<()>,
    ) -> Result<TokenMeta> {
        let mut m = self.meta.clone();
        change(&mut m)?;
        self.meta = m.clone();
        Ok(m)
    }

    fn reinitialize(&mut self, meta: &TokenMeta) -> Result<()> {
        // The new integrity secret changes every fingerprint: the values
        // used so far become the floor.
        self.iv_floor = self
            .iv_counters
            .drain()
            .map(|(_, next)| next)
            .fold(self.iv_floor, u64::max);
        self.objects.clear();
        self.meta = meta.clone();
        self.generation += 1;
        Ok(())
    }

    fn changes_since(&mut self, epoch: &str, generation: u64) -> Result<Option<Changes>> {
        // Only this process can write a memory token, and it already knows
        // what it wrote: there is never anything new unless the epoch moved.
        if epoch == self.meta.epoch && generation == self.generation {
            return Ok(None);
        }
        Ok(Some(Changes {
            generation: self.generation,
            reset: epoch != self.meta.epoch,
            full: false,
            upserts: self
                .objects
                .values()
                .filter(|r| r.generation > generation || epoch != self.meta.epoch)
                .cloned()
                .collect(),
            deletes: Vec::new(),
            damaged: Vec::new(),
        }))
    }

    fn put(&mut self, records: &[&ObjectRecord], expect: &[Expect]) -> Result<Written> {
        for (uid, generation) in expect {
            match self.objects.get(uid) {
                None => return Ok(Written::Gone),
                Some(r) if r.generation != *generation => return Ok(Written::Stale),
                Some(_) => {}
            }
        }
        self.generation += 1;
        for r in records {
            let mut r = (*r).clone();
            r.generation = self.generation;
            self.objects.insert(r.uid, r);
        }
        Ok(Written::At(self.generation))
    }

    fn reserve_iv_counter(&mut self, key: &[u8], count: u64) -> Result<u64> {
        let secret = self.meta.integrity.as_deref();
        let secret = secret.ok_or(err(cryptoki_sys::CKR_DEVICE_ERROR))?;
        let keys = match self.keys.take() {
            Some(k) if k.is_of(secret) => k,
            _ => Integrity::from_hex(secret)?,
        };
        let keys = self.keys.insert(keys);
        let fingerprint = keys.iv_fingerprint(key);
        let stored = self.iv_counters.get(&fingerprint).copied();
        let (first, next) = super::iv_counters::block(stored, self.iv_floor, count)?;
        self.iv_counters.insert(fingerprint, next);
        Ok(first)
    }

    fn delete(&mut self, uid: &Uid) -> Result<Option<u64>> {
        if self.objects.remove(uid).is_none() {
            return Ok(None);
        }
        self.generation += 1;
        Ok(Some(self.generation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iv_counters_continue_per_key_value_and_across_reinitialisation() {
        let meta = crate::storage::sqlite::tests::meta("m");
        let mut s = MemoryStore::new(meta.clone());
        assert_eq!(s.reserve_iv_counter(b"a", 10).unwrap(), 0);
        assert_eq!(s.reserve_iv_counter(b"b", 30).unwrap(), 0);
        assert_eq!(s.reserve_iv_counter(b"a", 10).unwrap(), 10);
        let mut again = meta;
        again.integrity = Some("6b".repeat(32));
        s.reinitialize(&again).unwrap();
        assert_eq!(s.reserve_iv_counter(b"a", 1).unwrap(), 30);
        assert_eq!(s.reserve_iv_counter(b"a", 1).unwrap(), 31);
    }
}
