//! A token or session object: fixed identity (handle, unique id, class, key
//! type, token/private flags), its attributes, and the parsed key material
//! cached for cryptographic operations.

use super::template::{self, Tables};
use crate::attributes::{Attributes, Value};
use crate::error::{Result, err};
use crate::mechanisms::keys::KeyMaterial;
use crate::storage::seal::{TokenKey, hex};
use crate::storage::{ObjectRecord, Uid};
use cryptoki_sys::*;
use parking_lot::RwLock;
use std::sync::Arc;
use zeroize::Zeroizing;

/// An object as the module holds it.
pub struct Object {
    /// Handle in this process.
    pub handle: CK_OBJECT_HANDLE,
    /// Unique id (`CKA_UNIQUE_ID` is its hex form; associated data of sealed values).
    pub uid: Uid,
    /// `CKA_CLASS`.
    pub class: CK_OBJECT_CLASS,
    /// `CKA_KEY_TYPE`, for keys.
    pub key_type: Option<CK_KEY_TYPE>,
    /// `CKA_TOKEN`.
    pub token: bool,
    /// `CKA_PRIVATE`.
    pub private: bool,
    /// For session objects, the session that created it.
    pub session: CK_SESSION_HANDLE,
    /// The attribute rule tables of this object.
    pub tables: Tables,
    state: RwLock<State>,
    key: RwLock<Option<Arc<KeyMaterial>>>,
}

struct State {
    attrs: Attributes,
    generation: u64,
}

/// The attributes that decide what may be done with an object's secret
/// values: its identity, where it lives, its protection and usage flags, and
/// the mechanisms and templates it allows. A sealed value is bound to them
/// (see [`seal_aad`]).
const BOUND_ATTRIBUTES: &[CK_ATTRIBUTE_TYPE] = &[
    CKA_CLASS,
    CKA_KEY_TYPE,
    CKA_TOKEN,
    CKA_PRIVATE,
    CKA_SENSITIVE,
    CKA_EXTRACTABLE,
    CKA_ALWAYS_SENSITIVE,
    CKA_NEVER_EXTRACTABLE,
    CKA_WRAP_WITH_TRUSTED,
    CKA_ALWAYS_AUTHENTICATE,
    CKA_TRUSTED,
    CKA_COPYABLE,
    CKA_MODIFIABLE,
    CKA_DESTROYABLE,
    CKA_ENCRYPT,
    CKA_DECRYPT,
    CKA_SIGN,
    CKA_SIGN_RECOVER,
    CKA_VERIFY,
    CKA_VERIFY_RECOVER,
    CKA_WRAP,
    CKA_UNWRAP,
    CKA_DERIVE,
    CKA_ALLOWED_MECHANISMS,
    CKA_WRAP_TEMPLATE,
    CKA_UNWRAP_TEMPLATE,
    CKA_DERIVE_TEMPLATE,
];

/// Format byte of a value sealed unbound (schema 1 files): associated data
/// uid ‖ type.
const SEALED_UNBOUND: u8 = 1;
/// Format byte of a value sealed bound to [`BOUND_ATTRIBUTES`].
const SEALED_BOUND: u8 = 2;

/// SHA-256 of the [`BOUND_ATTRIBUTES`] of `attrs` (type, length and value
/// of each; a distinct marker for an absent one).
pub fn binding(attrs: &Attributes) -> [u8; 32] {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for &ty in BOUND_ATTRIBUTES {
        h.update(ty.to_le_bytes());
        match attrs.get(ty).and_then(Value::as_plain) {
            Some(v) => {
                h.update((v.len() as u64).to_le_bytes());
                h.update(v);
            }
            None => h.update(u64::MAX.to_le_bytes()),
        }
    }
    h.finalize().into()
}

/// Associated data of a sealed value: the object's unique id, the
/// attribute type and the [`binding`] of the object's protection
/// attributes. A value moved to another object or attribute, or read back
/// after someone edited `CKA_SENSITIVE`, `CKA_EXTRACTABLE` or any other bound
/// attribute in the file, fails authentication: editing those flags needs
/// the key the value is sealed under, not just write access to the file.
pub fn seal_aad(uid: &Uid, ty: CK_ATTRIBUTE_TYPE, binding: &[u8; 32]) -> [u8; 56] {
    let mut aad = [0u8; 56];
    aad[..16].copy_from_slice(uid);
    aad[16..24].copy_from_slice(&ty.to_le_bytes());
    aad[24..].copy_from_slice(binding);
    aad
}

/// Associated data of a value sealed by schema 1 (uid ‖ type).
fn unbound_aad(uid: &Uid, ty: CK_ATTRIBUTE_TYPE) -> [u8; 24] {
    let mut aad = [0u8; 24];
    aad[..16].copy_from_slice(uid);
    aad[16..].copy_from_slice(&ty.to_le_bytes());
    aad
}

/// Seals `plain` as attribute `ty` of the object `uid` whose attributes
/// will be `attrs`.
fn seal_value(
    key: &TokenKey,
    uid: &Uid,
    ty: CK_ATTRIBUTE_TYPE,
    attrs: &Attributes,
    plain: &[u8],
) -> Result<Vec<u8>> {
    let sealed = key.seal(&seal_aad(uid, ty, &binding(attrs)), plain)?;
    let mut out = Vec::with_capacity(sealed.len() + 1);
    out.push(SEALED_BOUND);
    out.extend_from_slice(&sealed);
    Ok(out)
}

/// Opens attribute `ty` of object `uid` whose attributes are `attrs`.
fn unseal_value(
    key: &TokenKey,
    uid: &Uid,
    ty: CK_ATTRIBUTE_TYPE,
    attrs: &Attributes,
    sealed: &[u8],
) -> Result<Zeroizing<Vec<u8>>> {
    match sealed.split_first() {
        Some((&SEALED_BOUND, rest)) => key.unseal(&seal_aad(uid, ty, &binding(attrs)), rest),
        Some((&SEALED_UNBOUND, rest)) => key.unseal(&unbound_aad(uid, ty), rest),
        _ => Err(err(CKR_DEVICE_ERROR)),
    }
}

impl Object {
    /// A new object from checked attributes. `CKA_UNIQUE_ID` is set here.
    pub fn new(
        handle: CK_OBJECT_HANDLE,
        uid: Uid,
        mut attrs: Attributes,
        tables: Tables,
        session: CK_SESSION_HANDLE,
    ) -> Object {
        attrs.set_bytes(CKA_UNIQUE_ID, hex(&uid).as_bytes());
        Object {
            handle,
            uid,
            class: attrs.ulong(CKA_CLASS).unwrap_or(CKO_DATA),
            key_type: attrs.ulong(CKA_KEY_TYPE),
            token: attrs.flag(CKA_TOKEN),
            private: attrs.flag(CKA_PRIVATE),
            session: if attrs.flag(CKA_TOKEN) { 0 } else { session },
            tables,
            state: RwLock::new(State {
                attrs,
                generation: 0,
            }),
            key: RwLock::new(None),
        }
    }

    /// Rebuilds a token object from its stored record.
    pub fn from_record(handle: CK_OBJECT_HANDLE, rec: &ObjectRecord) -> Result<Object> {
        let attrs = Attributes::decode(&rec.attrs)?;
        let class = attrs.ulong(CKA_CLASS).ok_or(err(CKR_DEVICE_ERROR))?;
        let key_type = attrs.ulong(CKA_KEY_TYPE);
        let cert_type = attrs.ulong(CKA_CERTIFICATE_TYPE);
        let tables =
            super::policy::tables(class, key_type, cert_type).ok_or(err(CKR_DEVICE_ERROR))?;
        let obj = Object::new(handle, rec.uid, attrs, tables, 0);
        obj.state.write().generation = rec.generation;
        Ok(obj)
    }

    /// The record to store for this token object.
    pub fn to_record(&self) -> ObjectRecord {
        self.record_with(&self.state.read().attrs)
    }

    /// The record this token object would have with `attrs` (not yet its own).
    pub fn record_with(&self, attrs: &Attributes) -> ObjectRecord {
        ObjectRecord {
            uid: self.uid,
            generation: self.generation(),
            class: self.class,
            private: self.private,
            label: attrs.bytes(CKA_LABEL).unwrap_or_default().to_vec(),
            id: attrs.bytes(CKA_ID).unwrap_or_default().to_vec(),
            attrs: attrs.encode(),
        }
    }

    /// Generation of the stored copy this object reflects.
    pub fn generation(&self) -> u64 {
        self.state.read().generation
    }

    /// Records that the stored copy is now at `generation`.
    pub fn set_generation(&self, generation: u64) {
        self.state.write().generation = generation;
    }

    /// Runs `f` with the attributes.
    pub fn with_attrs<T>(&self, f: impl FnOnce(&Attributes) -> T) -> T {
        f(&self.state.read().attrs)
    }

    /// A copy of the attributes and the generation they belong to (read
    /// together, for a change that must apply to exactly this state).
    pub fn attrs_at(&self) -> (Attributes, u64) {
        let st = self.state.read();
        (st.attrs.clone(), st.generation)
    }

    /// A copy of the attributes.
    pub fn attrs(&self) -> Attributes {
        self.state.read().attrs.clone()
    }

    /// Replaces the attributes (after `template::change` checked them and
    /// the store took them) and the generation they were stored at, and
    /// drops the cached key material, which may depend on them.
    pub fn replace_attrs(&self, attrs: Attributes, generation: u64) {
        {
            let mut st = self.state.write();
            st.attrs = attrs;
            st.generation = generation;
        }
        self.forget_key();
    }

    /// A boolean attribute.
    pub fn flag(&self, ty: CK_ATTRIBUTE_TYPE) -> bool {
        self.state.read().attrs.flag(ty)
    }

    /// True if the object is a key that permits `mechanism`
    /// (`CKA_ALLOWED_MECHANISMS` empty or listing it; §4.7).
    pub fn allows_mechanism(&self, mechanism: CK_MECHANISM_TYPE) -> bool {
        self.with_attrs(|a| match a.bytes(CKA_ALLOWED_MECHANISMS) {
            None | Some([]) => true,
            Some(list) => list
                .chunks_exact(std::mem::size_of::<CK_ULONG>())
                .any(|c| c.try_into().map(CK_ULONG::from_ne_bytes).ok() == Some(mechanism)),
        })
    }

    /// The plain value of `ty`, unsealing with `key` when it is sealed.
    pub fn plain_value(
        &self,
        ty: CK_ATTRIBUTE_TYPE,
        key: Option<&TokenKey>,
    ) -> Result<Option<Zeroizing<Vec<u8>>>> {
        let st = self.state.read();
        match st.attrs.get(ty) {
            None => Ok(None),
            Some(Value::Plain(v)) => Ok(Some(v.to_zeroizing())),
            Some(Value::Sealed(s)) => {
                let key = key.ok_or(err(CKR_USER_NOT_LOGGED_IN))?;
                unseal_value(key, &self.uid, ty, &st.attrs, s).map(Some)
            }
        }
    }

    /// Seals, in place, every sensitive value of a private token object.
    pub fn seal_sensitive(&self, key: &TokenKey) -> Result<()> {
        self.seal_into(&mut self.state.write().attrs, key)
    }

    /// Seals, in `attrs` (this object's attributes to be), every secret
    /// value of a token object (under the token key for a private object,
    /// the token's public sealing key otherwise; see `Token::seal_key`),
    /// and the `CKA_VALUE` of any private token object.
    pub fn seal_into(&self, attrs: &mut Attributes, key: &TokenKey) -> Result<()> {
        if !self.token {
            return Ok(());
        }
        let bound = attrs.clone();
        for (ty, v) in attrs.values_mut() {
            if let Value::Plain(p) = v
                && (template::is_sealed_attribute(self.tables, ty)
                    || (self.private && ty == CKA_VALUE))
            {
                *v = Value::Sealed(seal_value(key, &self.uid, ty, &bound, p)?);
            }
        }
        Ok(())
    }

    /// All attributes with sealed values opened (for copying an object).
    /// Also returns the generation they belong to.
    pub fn unsealed_attrs(&self, key: Option<&TokenKey>) -> Result<(Attributes, u64)> {
        let (mut attrs, generation) = self.attrs_at();
        let bound = attrs.clone();
        for (ty, v) in attrs.values_mut() {
            if let Value::Sealed(s) = v {
                let key = key.ok_or(err(CKR_USER_NOT_LOGGED_IN))?;
                *v = Value::Plain(unseal_value(key, &self.uid, ty, &bound, s)?.into());
            }
        }
        Ok((attrs, generation))
    }

    /// The parsed key, built once by `load` and cached until the object
    /// changes, is destroyed, or the user logs out.
    pub fn key_material(
        &self,
        load: impl FnOnce(&Object) -> Result<KeyMaterial>,
    ) -> Result<Arc<KeyMaterial>> {
        if let Some(k) = self.key.read().as_ref() {
            return Ok(k.clone());
        }
        let mut slot = self.key.write();
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        // Parsed below, and the stack the parsing (and unsealing) used
        // wiped, before the key is moved to its heap block: the block
        // would otherwise take stale stack bytes along in the space its
        // variant does not use (see `crate::hygiene`).
        let k = Arc::new(crate::hygiene::wiping(|| load(self))?);
        *slot = Some(k.clone());
        Ok(k)
    }

    /// Drops the cached key material (zeroized when the last operation using it ends).
    pub fn forget_key(&self) {
        *self.key.write() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::template::{Origin, build, tables_for_new};
    use crate::attributes::Attr;

    fn secret_object(token: bool) -> Object {
        let t = vec![
            Attr::ulong(CKA_CLASS, CKO_SECRET_KEY),
            Attr::ulong(CKA_KEY_TYPE, CKK_GENERIC_SECRET),
            Attr::new(CKA_VALUE, b"0123456789abcdef"),
            Attr::bool(CKA_TOKEN, token),
            Attr::bool(CKA_PRIVATE, true),
            Attr::new(CKA_ALLOWED_MECHANISMS, &CKM_SHA256_HMAC.to_ne_bytes()),
        ];
        let (_, _, tables) = tables_for_new(&t, None, None).unwrap();
        let attrs = build(&t, tables, Origin::Create, false, &[]).unwrap();
        Object::new(5, [3; 16], attrs, tables, 9)
    }

    #[test]
    fn seals_private_token_values_and_round_trips_records() {
        let key = TokenKey::generate().unwrap();
        let o = secret_object(true);
        assert_eq!(o.session, 0, "token objects belong to no session");
        o.seal_sensitive(&key).unwrap();
        assert!(
            o.with_attrs(|a| a.bytes(CKA_VALUE).is_none()),
            "sealed in memory"
        );
        assert_eq!(
            o.plain_value(CKA_VALUE, None).unwrap_err().rv(),
            CKR_USER_NOT_LOGGED_IN
        );
        assert_eq!(
            o.plain_value(CKA_VALUE, Some(&key))
                .unwrap()
                .unwrap()
                .as_slice(),
            b"0123456789abcdef"
        );
        let rec = o.to_record();
        assert!(
            !rec.attrs.windows(16).any(|w| w == b"0123456789abcdef"),
            "no plaintext on disk"
        );
        let back = Object::from_record(6, &rec).unwrap();
        assert_eq!(
            back.plain_value(CKA_VALUE, Some(&key))
                .unwrap()
                .unwrap()
                .as_slice(),
            b"0123456789abcdef"
        );
        assert_eq!(
            back.with_attrs(|a| a.bytes(CKA_UNIQUE_ID).map(|v| v.to_vec()))
                .unwrap(),
            hex(&[3; 16]).into_bytes()
        );
        let other = TokenKey::generate().unwrap();
        assert!(back.plain_value(CKA_VALUE, Some(&other)).is_err());
    }

    #[test]
    fn session_objects_stay_plain_and_allowed_mechanisms_apply() {
        let key = TokenKey::generate().unwrap();
        let o = secret_object(false);
        o.seal_sensitive(&key).unwrap();
        assert!(o.with_attrs(|a| a.bytes(CKA_VALUE).is_some()));
        assert_eq!(o.session, 9);
        assert!(o.allows_mechanism(CKM_SHA256_HMAC));
        assert!(!o.allows_mechanism(CKM_SHA512_HMAC));
    }
}
