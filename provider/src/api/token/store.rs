//! Access to a token's objects (base spec §5.7 object management; §4.4
//! token and session objects, §6.7 visibility): importing other processes'
//! changes (`refresh`), lookups, and the conditional writes through which
//! every object is added, changed and destroyed.
//!
//! Locking: the store mutex is taken before the object table's lock, never
//! after; the login lock comes last.

use super::state::Token;
use crate::api::object::Object;
use crate::attributes::{Attr, Attributes};
use crate::error::{Result, err};
use crate::storage::seal::hex;
use crate::storage::{Uid, Written};
use cryptoki_sys::*;
use std::sync::Arc;

impl Token {
    /// Imports what other processes changed since we last looked.
    pub fn refresh(&self) -> Result<()> {
        let mut store = self.store();
        let Some(s) = store.as_mut() else {
            return Ok(());
        };
        let (epoch, generation) = {
            let t = self.objects.read();
            (
                t.epoch.clone(),
                if t.epoch.is_empty() {
                    u64::MAX
                } else {
                    t.generation
                },
            )
        };
        let Some(changes) = s.changes_since(&epoch, generation)? else {
            return Ok(());
        };
        self.note_public_seal(Some(&**s));
        let meta_epoch = if changes.reset || epoch.is_empty() {
            Some(s.meta()?.epoch)
        } else {
            None
        };
        let mut t = self.objects.write();
        t.reserve(changes.upserts.len());
        if let Some(e) = meta_epoch {
            if !t.epoch.is_empty() && t.epoch != e {
                // Re-initialised by another process: everything we knew is
                // gone, and the sessions opened on the old token end.
                let mut login = self.login.write();
                login.user = None;
                login.key = None;
                self.incarnation
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            t.take_where(|o| o.token);
            // Only now, with nothing of the old token left here, may this
            // process write into the new one.
            s.accept_epoch(&e);
            t.epoch = e;
        }
        if changes.full {
            // Every object is listed: the token objects not in the list are gone.
            let listed: std::collections::HashSet<Uid> =
                changes.upserts.iter().map(|r| r.uid).collect();
            t.take_where(|o| o.token && !listed.contains(&o.uid));
        }
        for rec in &changes.upserts {
            let existing = t.by_uid.get(&rec.uid).copied();
            if let Some(h) = existing
                && t.by_handle.get(&h).is_some_and(|o| {
                    // A full list is the truth even if its generations went
                    // back (a log lost to tampering).
                    o.generation() == rec.generation
                        || (!changes.full && o.generation() > rec.generation)
                })
            {
                continue;
            }
            let handle = existing.unwrap_or_else(|| self.handles.next());
            match Object::from_record(handle, rec) {
                Ok(o) => t.add(Arc::new(o)),
                Err(e) => crate::log::error(format_args!(
                    "skipping unreadable object {}: {e}",
                    hex(&rec.uid)
                )),
            }
        }
        // Destroyed objects go, and so do objects whose stored record no
        // longer authenticates: never served in a state nobody wrote.
        for uid in changes.deletes.iter().chain(&changes.damaged) {
            if let Some(h) = t.by_uid.get(uid).copied() {
                t.take(h);
            }
        }
        t.generation = t.generation.max(changes.generation);
        if changes.reset || changes.full || generation == u64::MAX {
            t.generation = changes.generation;
        }
        Ok(())
    }

    /// The outcome of a store write. One refused because another process
    /// re-initialised the token (`CKR_DEVICE_REMOVED`) drops this process's
    /// state of the old token at once (login, token key, token objects:
    /// [`Self::refresh`]), so the next call finds a new token.
    pub(super) fn settle<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r
            && e.rv() == CKR_DEVICE_REMOVED
        {
            let _ = self.refresh();
        }
        r
    }

    /// Visibility rule of §4.4 / §6.7: private objects only while the user is logged in.
    pub fn visible(&self, obj: &Object) -> bool {
        !obj.private || self.user_logged_in()
    }

    /// Looks up a visible object (`CKR_OBJECT_HANDLE_INVALID` otherwise).
    pub fn object(&self, handle: CK_OBJECT_HANDLE) -> Result<Arc<Object>> {
        let obj = self.objects.read().by_handle.get(&handle).cloned();
        match obj {
            Some(o) if self.visible(&o) => Ok(o),
            _ => Err(err(CKR_OBJECT_HANDLE_INVALID)),
        }
    }

    /// Looks up a key for a cryptographic operation: an invisible private
    /// key gives `CKR_USER_NOT_LOGGED_IN`, an unknown handle `CKR_KEY_HANDLE_INVALID`.
    pub fn key(&self, handle: CK_OBJECT_HANDLE) -> Result<Arc<Object>> {
        let obj = self.objects.read().by_handle.get(&handle).cloned();
        match obj {
            Some(o) if self.visible(&o) => Ok(o),
            Some(_) => Err(err(CKR_USER_NOT_LOGGED_IN)),
            None => Err(err(CKR_KEY_HANDLE_INVALID)),
        }
    }

    /// Handles of the visible objects matching `template` (all of its
    /// attributes equal; sealed values never match), ascending.
    pub fn find(&self, template: &[Attr]) -> Vec<CK_OBJECT_HANDLE> {
        let user = self.user_logged_in();
        let keys = self.seal_keys();
        self.objects.read().find(template, user, &keys)
    }

    /// A fresh handle.
    pub fn next_handle(&self) -> CK_OBJECT_HANDLE {
        self.handles.next()
    }

    /// Adds new objects (all token or all session objects), storing token
    /// objects in one transaction. Sensitive values of private token
    /// objects are sealed first. With `source` (the object a copy or
    /// derivation was made from), the write lands only if that object still
    /// stands as read: `Ok(None)` asks the caller to refresh and try again,
    /// a destroyed source gives `CKR_OBJECT_HANDLE_INVALID`.
    pub fn insert(
        &self,
        objects: Vec<Object>,
        source: Option<(&Object, u64)>,
    ) -> Result<Option<Vec<CK_OBJECT_HANDLE>>> {
        let r = self.insert_locked(objects, source);
        self.settle(r)
    }

    fn insert_locked(
        &self,
        objects: Vec<Object>,
        source: Option<(&Object, u64)>,
    ) -> Result<Option<Vec<CK_OBJECT_HANDLE>>> {
        let token_objects = objects.iter().any(|o| o.token);
        let mut store = self.store();
        if token_objects {
            let public = store.as_ref().and_then(|s| s.public_seal_key());
            let private = self.token_key();
            for o in objects.iter().filter(|o| o.token) {
                if o.private {
                    o.seal_sensitive(private.as_deref().ok_or(err(CKR_USER_NOT_LOGGED_IN))?)?;
                } else if let Some(k) = public.as_deref() {
                    o.seal_sensitive(k)?;
                }
            }
            let records: Vec<_> = objects
                .iter()
                .filter(|o| o.token)
                .map(Object::to_record)
                .collect();
            let refs: Vec<_> = records.iter().collect();
            let expect: Vec<_> = source
                .filter(|(o, _)| o.token)
                .map(|(o, read_at)| (o.uid, read_at))
                .into_iter()
                .collect();
            let s = store.as_mut().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
            let g = match s.put(&refs, &expect)? {
                Written::At(g) => g,
                Written::Stale => return Ok(None),
                Written::Gone => {
                    if let Some((src, _)) = source {
                        self.objects.write().take(src.handle);
                    }
                    return Err(err(CKR_OBJECT_HANDLE_INVALID));
                }
            };
            let mut t = self.objects.write();
            if t.generation + 1 == g {
                t.generation = g;
            }
            for o in &objects {
                o.set_generation(g);
            }
            drop(t);
        }
        let mut t = self.objects.write();
        let handles = objects.iter().map(|o| o.handle).collect();
        for o in objects {
            t.add(Arc::new(o));
        }
        Ok(Some(handles))
    }

    /// Changes the attributes of `obj` to `change(current)`, where
    /// `current` are its attributes with sealed values opened, read under
    /// the store lock (so threads of this process never undo each other's
    /// changes: every token-object write takes that lock). Nothing changes
    /// unless the store took the new record: the new attribute set is
    /// sealed and written first and only then swapped in, so a failed call
    /// leaves the object as it was (PKCS#11 3.0 §5.7 `C_SetAttributeValue`).
    /// The write lands only if the stored object is still the one `obj`
    /// reflects: `Ok(false)` when another process changed it since (refresh
    /// and try again), `CKR_OBJECT_HANDLE_INVALID` when it was destroyed.
    pub fn modify(
        &self,
        obj: &Arc<Object>,
        change: impl FnOnce(&Attributes) -> Result<Attributes>,
    ) -> Result<bool> {
        let r = self.modify_locked(obj, change);
        self.settle(r)
    }

    fn modify_locked(
        &self,
        obj: &Arc<Object>,
        change: impl FnOnce(&Attributes) -> Result<Attributes>,
    ) -> Result<bool> {
        let mut store = self.store();
        let (current, read_at) = obj.unsealed_attrs(self.seal_key(obj).as_deref())?;
        let mut attrs = change(&current)?;
        let mut generation = read_at + 1;
        if obj.token {
            let key = if obj.private {
                Some(self.token_key().ok_or(err(CKR_USER_NOT_LOGGED_IN))?)
            } else {
                store.as_ref().and_then(|s| s.public_seal_key())
            };
            if let Some(key) = key {
                obj.seal_into(&mut attrs, &key)?;
            }
            let s = store.as_mut().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
            let record = obj.record_with(&attrs);
            match s.put(&[&record], &[(obj.uid, read_at)])? {
                Written::At(g) => generation = g,
                Written::Stale => return Ok(false),
                Written::Gone => {
                    self.objects.write().take(obj.handle);
                    return Err(err(CKR_OBJECT_HANDLE_INVALID));
                }
            }
        }
        // Re-index under the new label and id; an object another thread
        // destroyed meanwhile stays destroyed.
        let mut t = self.objects.write();
        match t.take(obj.handle) {
            Some(current) if Arc::ptr_eq(&current, obj) => {}
            Some(current) => {
                t.add(current);
                return Ok(false);
            }
            None => return Err(err(CKR_OBJECT_HANDLE_INVALID)),
        }
        obj.replace_attrs(attrs, generation);
        t.add(obj.clone());
        if obj.token && t.generation + 1 == generation {
            t.generation = generation;
        }
        Ok(true)
    }

    /// Destroys an object. One that another process destroyed first is
    /// `CKR_OBJECT_HANDLE_INVALID` (and forgotten here).
    pub fn remove(&self, obj: &Object) -> Result<()> {
        let r = self.remove_locked(obj);
        self.settle(r)
    }

    fn remove_locked(&self, obj: &Object) -> Result<()> {
        let mut store = self.store();
        let gone = if obj.token {
            let s = store.as_mut().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
            let g = s.delete(&obj.uid)?;
            let mut t = self.objects.write();
            if let Some(g) = g
                && t.generation + 1 == g
            {
                t.generation = g;
            }
            g.is_none()
        } else {
            false
        };
        let taken = self.objects.write().take(obj.handle);
        if gone || taken.is_none() {
            return Err(err(CKR_OBJECT_HANDLE_INVALID));
        }
        Ok(())
    }

    /// Removes the session objects of `session` (all sessions if `None`)
    /// and, with `private_only`, only the private ones.
    pub fn drop_session_objects(&self, session: Option<CK_SESSION_HANDLE>, private_only: bool) {
        self.objects.write().take_where(|o| {
            !o.token && session.is_none_or(|s| o.session == s) && (!private_only || o.private)
        });
    }
}
