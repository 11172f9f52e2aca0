//! The memory store: nothing touches disk; the token lives as long as the
//! process that created it.

use super::{Changes, Expect, ObjectRecord, TokenMeta, TokenStore, Uid, Written};
use crate::error::Result;
use std::collections::HashMap;

/// A token kept in process memory.
pub struct MemoryStore {
    meta: TokenMeta,
    objects: HashMap<Uid, ObjectRecord>,
    generation: u64,
}

impl MemoryStore {
    /// A new, empty token.
    pub fn new(meta: TokenMeta) -> Self {
        MemoryStore {
            meta,
            objects: HashMap::new(),
            generation: 0,
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

    fn delete(&mut self, uid: &Uid) -> Result<Option<u64>> {
        if self.objects.remove(uid).is_none() {
            return Ok(None);
        }
        self.generation += 1;
        Ok(Some(self.generation))
    }
}
