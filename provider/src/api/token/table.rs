//! The object table of a token (base spec §5.7 `C_FindObjectsInit` and
//! object lookups; §4.4 / §6.7 visibility of private objects): the objects
//! this process knows, indexed by handle, unique id, `CKA_LABEL` and
//! `CKA_ID`, and the sealing keys a pass over them opens values with.

use crate::api::handles::HandleMap;
use crate::api::object::Object;
use crate::api::template::{self, Reveal};
use crate::attributes::{Attr, Value};
use crate::storage::Uid;
use crate::storage::seal::TokenKey;
use cryptoki_sys::*;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The objects of a token in this process, indexed by handle, unique id,
/// `CKA_LABEL` and `CKA_ID` (so `C_FindObjectsInit` by label or id does not
/// look at every object).
#[derive(Default)]
pub(super) struct ObjectTable {
    pub(super) by_handle: HandleMap<Arc<Object>>,
    pub(super) by_uid: HashMap<Uid, CK_OBJECT_HANDLE>,
    pub(super) by_label: HashMap<Vec<u8>, BTreeSet<CK_OBJECT_HANDLE>>,
    pub(super) by_id: HashMap<Vec<u8>, BTreeSet<CK_OBJECT_HANDLE>>,
    pub(super) epoch: String,
    pub(super) generation: u64,
}

/// `CKA_LABEL` and `CKA_ID` of an object, as indexed.
fn index_keys(obj: &Object) -> (Vec<u8>, Vec<u8>) {
    obj.with_attrs(|a| {
        (
            a.bytes(CKA_LABEL).unwrap_or_default().to_vec(),
            a.bytes(CKA_ID).unwrap_or_default().to_vec(),
        )
    })
}

fn unindex(
    map: &mut HashMap<Vec<u8>, BTreeSet<CK_OBJECT_HANDLE>>,
    key: &[u8],
    handle: CK_OBJECT_HANDLE,
) {
    if let Some(set) = map.get_mut(key) {
        set.remove(&handle);
        if set.is_empty() {
            map.remove(key);
        }
    }
}

impl ObjectTable {
    /// Adds (or replaces) an object.
    pub(super) fn add(&mut self, obj: Arc<Object>) {
        if let Some(old) = self.by_handle.get(&obj.handle).cloned() {
            self.take(old.handle);
        }
        let (label, id) = index_keys(&obj);
        self.by_label.entry(label).or_default().insert(obj.handle);
        self.by_id.entry(id).or_default().insert(obj.handle);
        if obj.token {
            self.by_uid.insert(obj.uid, obj.handle);
        }
        self.by_handle.insert(obj.handle, obj);
    }

    /// Removes an object; its cached key is dropped.
    pub(super) fn take(&mut self, handle: CK_OBJECT_HANDLE) -> Option<Arc<Object>> {
        let obj = self.by_handle.remove(&handle)?;
        let (label, id) = index_keys(&obj);
        unindex(&mut self.by_label, &label, handle);
        unindex(&mut self.by_id, &id, handle);
        if obj.token && self.by_uid.get(&obj.uid) == Some(&handle) {
            self.by_uid.remove(&obj.uid);
        }
        obj.forget_key();
        Some(obj)
    }

    /// Makes room for `n` more objects (a token's first load adds them
    /// all at once).
    pub(super) fn reserve(&mut self, n: usize) {
        self.by_handle.reserve(n);
        self.by_uid.reserve(n);
        self.by_label.reserve(n);
        self.by_id.reserve(n);
    }

    /// Removes every object (cached keys dropped), without unindexing
    /// them one by one.
    pub(super) fn clear(&mut self) {
        for obj in self.by_handle.values() {
            obj.forget_key();
        }
        self.by_handle.clear();
        self.by_uid.clear();
        self.by_label.clear();
        self.by_id.clear();
    }

    /// Removes every object matching `doomed`.
    pub(super) fn take_where(&mut self, doomed: impl Fn(&Object) -> bool) {
        let handles: Vec<_> = self
            .by_handle
            .values()
            .filter(|o| doomed(o))
            .map(|o| o.handle)
            .collect();
        for h in handles {
            self.take(h);
        }
    }

    /// Handles of visible objects matching `template`, ascending.
    ///
    /// An attribute takes part in matching only if `C_GetAttributeValue`
    /// would reveal it (§5.7 rules 1–5): a template naming a sensitive or
    /// unextractable value (or a sealed one) matches no object, so
    /// `C_FindObjects` is never an equality oracle on key material.
    pub(super) fn find(
        &self,
        template: &[Attr],
        user: bool,
        keys: &SealKeys,
    ) -> Vec<CK_OBJECT_HANDLE> {
        let matches = |o: &Object| {
            if o.private && !user {
                return false;
            }
            // Readable values stored sealed (a private object's CKA_VALUE)
            // are opened after the attribute lock is released.
            let mut sealed = Vec::new();
            let plain_match = o.with_attrs(|a| {
                template
                    .iter()
                    .all(|t| match template::reveal(a, o.tables, t.ty) {
                        Reveal::Value(Value::Plain(v)) => **v == *t.value,
                        Reveal::Value(Value::Sealed(_)) => {
                            sealed.push(t);
                            true
                        }
                        _ => false,
                    })
            });
            plain_match
                && sealed.iter().all(|t| {
                    matches!(
                        o.plain_value(t.ty, keys.for_object(o).map(|k| &**k)),
                        Ok(Some(v)) if *v == *t.value
                    )
                })
        };
        let indexed = template.iter().find_map(|t| match t.ty {
            CKA_LABEL => Some(self.by_label.get(t.value.as_slice())),
            CKA_ID => Some(self.by_id.get(t.value.as_slice())),
            _ => None,
        });
        let mut found: Vec<_> = match indexed {
            Some(None) => Vec::new(),
            Some(Some(set)) => set
                .iter()
                .filter(|h| self.by_handle.get(h).is_some_and(|o| matches(o)))
                .copied()
                .collect(),
            None => self
                .by_handle
                .values()
                .filter(|o| matches(o))
                .map(|o| o.handle)
                .collect(),
        };
        found.sort_unstable();
        found
    }
}

/// The keys sealed values are under (see `Token::seal_key`).
pub struct SealKeys {
    pub(super) private: Option<Arc<TokenKey>>,
    pub(super) public: Option<Arc<TokenKey>>,
}

impl SealKeys {
    /// The key of `obj`'s sealed values.
    pub fn for_object(&self, obj: &Object) -> Option<&Arc<TokenKey>> {
        if obj.private {
            self.private.as_ref()
        } else if obj.token {
            self.public.as_ref()
        } else {
            None
        }
    }
}
