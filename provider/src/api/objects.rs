//! Object management (base spec §5.7): create, copy, destroy, attribute
//! get/set, size, and search. Attribute rules come from `template` and the
//! policy tables; this file adds the session and login rules of §6.7
//! ("Session objects and token objects"; access by session state).

use super::key_policy::{self, ChangeKind, Rules};
use super::object::Object;
use super::operations::Find;
use super::session::Session;
use super::template::{self, Change, Origin, Reveal, Tables};
use crate::attributes::{Attr, Attributes, Value};
use crate::error::{Result, err};
use crate::mechanisms::keys;
use crate::storage::seal::random_bytes;
use crate::storage::{UID_LEN, Uid};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// A fresh random object id.
pub fn new_uid() -> Result<Uid> {
    let mut uid = [0u8; UID_LEN];
    random_bytes(&mut uid)?;
    Ok(uid)
}

/// A new object owned by `session` (for session objects), with a fresh
/// handle and unique id; not stored yet.
///
/// Every new object passes here (created, generated, derived, unwrapped,
/// copied), so the key-management policy's checks of a finished key
/// (`key_policy::check_new`) run here once.
pub fn new_object(session: &Session, attrs: Attributes, tables: Tables) -> Result<Object> {
    key_policy::check_new(&attrs, Rules::of(session.token.config()))?;
    Ok(Object::new(
        session.token.next_handle(),
        new_uid()?,
        attrs,
        tables,
        session.handle,
    ))
}

/// Makes and stores one new object; its handle.
pub fn insert_new(
    session: &Session,
    attrs: Attributes,
    tables: Tables,
) -> Result<CK_OBJECT_HANDLE> {
    let obj = new_object(session, attrs, tables)?;
    Ok(insert_objects(session, vec![obj])?[0])
}

/// Stores new objects made on `session`. If the session was closed while
/// they were being made (by another thread), its session objects are
/// removed again and the call fails with `CKR_SESSION_CLOSED`: nothing
/// outlives the session it belongs to. (Closing marks the session closed
/// before it removes the session's objects, and this checks the mark after
/// storing, so one of the two always sees the other.)
pub fn insert_objects(session: &Session, objects: Vec<Object>) -> Result<Vec<CK_OBJECT_HANDLE>> {
    let handles = session
        .token
        .insert(objects, None)?
        .ok_or(err(CKR_GENERAL_ERROR))?;
    check_still_open(session)?;
    Ok(handles)
}

/// The session-closed half of [`insert_objects`].
fn check_still_open(session: &Session) -> Result<()> {
    if !session.open.load(std::sync::atomic::Ordering::SeqCst) {
        session
            .token
            .drop_session_objects(Some(session.handle), false);
        return Err(err(CKR_SESSION_CLOSED));
    }
    Ok(())
}

/// How many times a write made through a view another process changed
/// meanwhile is re-applied to the fresh object before giving up. Each retry
/// means another writer committed in between, so this is only reached
/// under sustained contention on one object.
pub(super) const STALE_RETRIES: usize = 64;

/// May this session create or change an object with these flags?
/// Token objects need a read/write session; private objects need the user.
pub fn check_write_access(session: &Session, token_object: bool, private: bool) -> Result<()> {
    if token_object {
        session.require_rw()?;
    }
    if private && !session.token.user_logged_in() {
        return Err(err(CKR_USER_NOT_LOGGED_IN));
    }
    Ok(())
}

/// Sets the attributes the token computes for keys made by `origin`
/// (§4.7–4.10: `CKA_LOCAL`, `CKA_KEY_GEN_MECHANISM`, `CKA_ALWAYS_SENSITIVE`,
/// `CKA_NEVER_EXTRACTABLE`).
pub fn set_key_origin(
    attrs: &mut Attributes,
    origin: Origin,
    mechanism: Option<CK_MECHANISM_TYPE>,
) {
    let class = attrs.ulong(CKA_CLASS);
    if class == Some(CKO_DOMAIN_PARAMETERS) {
        // §4.13 domain parameters: CKA_LOCAL only.
        attrs.set_flag(CKA_LOCAL, origin == Origin::Generate);
        return;
    }
    if !matches!(
        class,
        Some(CKO_PUBLIC_KEY | CKO_PRIVATE_KEY | CKO_SECRET_KEY | CKO_OTP_KEY)
    ) {
        return;
    }
    attrs.set_flag(CKA_LOCAL, origin == Origin::Generate);
    attrs.set_ulong(
        CKA_KEY_GEN_MECHANISM,
        mechanism
            .filter(|_| origin == Origin::Generate)
            .unwrap_or(CK_UNAVAILABLE_INFORMATION),
    );
    if matches!(class, Some(CKO_PRIVATE_KEY | CKO_SECRET_KEY | CKO_OTP_KEY)) {
        let local = matches!(origin, Origin::Generate);
        attrs.set_flag(CKA_ALWAYS_SENSITIVE, local && attrs.flag(CKA_SENSITIVE));
        attrs.set_flag(CKA_NEVER_EXTRACTABLE, local && !attrs.flag(CKA_EXTRACTABLE));
    }
}

/// `C_CreateObject`.
pub fn create(session: &Session, template: &[Attr]) -> Result<CK_OBJECT_HANDLE> {
    let token = &session.token;
    let (class, key_type, tables) = template::tables_for_new(template, None, None)?;
    let is_so = token.logged_in() == Some(CKU_SO);
    let mut attrs = key_policy::build(
        template,
        tables,
        Origin::Create,
        is_so,
        Rules::of(token.config()),
    )?;
    check_write_access(session, attrs.flag(CKA_TOKEN), attrs.flag(CKA_PRIVATE))?;
    attrs.set_ulong(CKA_CLASS, class);
    // Checking a key parses it: its stack is wiped before the object is
    // built and stored (see `crate::hygiene`).
    crate::hygiene::wiping(|| keys::complete_import(class, key_type, &mut attrs))?;
    set_key_origin(&mut attrs, Origin::Create, None);
    insert_new(session, attrs, tables)
}

/// `C_CopyObject`. The copy is stored only if the source still stands as
/// it was read (a copy through a stale handle never revives an object
/// another process destroyed).
pub fn copy(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    template: &[Attr],
) -> Result<CK_OBJECT_HANDLE> {
    let token = &session.token;
    for _ in 0..STALE_RETRIES {
        let src = token.object(handle)?;
        if !src.flag(CKA_COPYABLE) {
            return Err(err(CKR_ACTION_PROHIBITED));
        }
        let is_so = token.logged_in() == Some(CKU_SO);
        let (current, read_at) = src.unsealed_attrs(token.seal_key(&src).as_deref())?;
        let attrs = template::change(&current, template, src.tables, Change::Copy, is_so)?;
        key_policy::check_change(
            &current,
            &attrs,
            ChangeKind::Copy,
            Rules::of(token.config()),
        )?;
        check_write_access(session, attrs.flag(CKA_TOKEN), attrs.flag(CKA_PRIVATE))?;
        let obj = new_object(session, attrs, src.tables)?;
        if let Some(handles) = token.insert(vec![obj], Some((&src, read_at)))? {
            check_still_open(session)?;
            return Ok(handles[0]);
        }
        token.refresh()?;
    }
    Err(err(CKR_FUNCTION_FAILED))
}

/// `C_DestroyObject`.
pub fn destroy(session: &Session, handle: CK_OBJECT_HANDLE) -> Result<()> {
    let token = &session.token;
    let obj = token.object(handle)?;
    check_write_access(session, obj.token, obj.private)?;
    if !obj.flag(CKA_DESTROYABLE) {
        return Err(err(CKR_ACTION_PROHIBITED));
    }
    token.remove(&obj)
}

/// `C_GetObjectSize`: the bytes the object's attribute values occupy.
pub fn size(session: &Session, handle: CK_OBJECT_HANDLE) -> Result<usize> {
    let obj = session.token.object(handle)?;
    Ok(obj.with_attrs(Attributes::size))
}

/// One attribute as `C_GetAttributeValue` reports it.
#[derive(Debug, PartialEq, Eq)]
pub enum AttrOut {
    /// `CKR_ATTRIBUTE_SENSITIVE`.
    Sensitive,
    /// `CKR_ATTRIBUTE_TYPE_INVALID`.
    Invalid,
    /// The value.
    Value(Zeroizing<Vec<u8>>),
}

/// `C_GetAttributeValue`: one answer per requested type, in order.
pub fn get_attributes(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    types: &[CK_ATTRIBUTE_TYPE],
) -> Result<Vec<AttrOut>> {
    let token = &session.token;
    let obj = token.object(handle)?;
    let key = token.seal_key(&obj);
    let attrs = obj.attrs();
    types
        .iter()
        .map(|&ty| {
            Ok(match template::reveal(&attrs, obj.tables, ty) {
                Reveal::Sensitive => AttrOut::Sensitive,
                Reveal::Invalid => AttrOut::Invalid,
                Reveal::Value(Value::Plain(v)) => AttrOut::Value(v.to_zeroizing()),
                Reveal::Value(Value::Sealed(_)) => match obj.plain_value(ty, key.as_deref())? {
                    Some(v) => AttrOut::Value(v),
                    None => AttrOut::Invalid,
                },
            })
        })
        .collect()
}

/// `C_SetAttributeValue`: changes only the attributes in `template`, on
/// the object as it is stored now (a change another process committed
/// since this one last looked is kept, not overwritten), and changes
/// nothing when the call fails.
pub fn set_attributes(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    template: &[Attr],
) -> Result<()> {
    let token = &session.token;
    for _ in 0..STALE_RETRIES {
        let obj = token.object(handle)?;
        check_write_access(session, obj.token, obj.private)?;
        if !obj.flag(CKA_MODIFIABLE) {
            return Err(err(CKR_ACTION_PROHIBITED));
        }
        let is_so = token.logged_in() == Some(CKU_SO);
        // The change is made on the opened values, which are sealed again
        // with the new attributes (their binding may change).
        let rules = Rules::of(token.config());
        let done = token.modify(&obj, |current| {
            let next = template::change(current, template, obj.tables, Change::Set, is_so)?;
            key_policy::check_change(current, &next, ChangeKind::Set, rules)?;
            Ok(next)
        })?;
        if done {
            return Ok(());
        }
        token.refresh()?;
    }
    Err(err(CKR_FUNCTION_FAILED))
}

/// `C_FindObjectsInit`: collects the matching visible objects now (a
/// consistent snapshot; objects created later are not returned).
pub fn find_init(session: &Session, template: &[Attr]) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.find.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    session.token.refresh()?;
    session.token.check_intact()?;
    let handles = session.token.find(template);
    ops.find = Some(Find { handles, next: 0 });
    Ok(())
}

/// `C_FindObjects`: up to `out.len()` more handles; returns how many.
pub fn find_next(session: &Session, out: &mut [CK_OBJECT_HANDLE]) -> Result<usize> {
    let mut ops = session.ops.lock();
    let find = ops
        .find
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let rest = &find.handles[find.next..];
    let n = rest.len().min(out.len());
    out[..n].copy_from_slice(&rest[..n]);
    find.next += n;
    Ok(n)
}

/// `C_FindObjectsFinal`.
pub fn find_final(session: &Session) -> Result<()> {
    session
        .ops
        .lock()
        .find
        .take()
        .map(drop)
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))
}
