//! Attribute values as the token keeps them, and their on-disk encoding.
//!
//! An [`Attributes`] set maps `CK_ATTRIBUTE_TYPE` to a [`Value`]: plain bytes,
//! or bytes sealed under the token key (sensitive values of private token
//! objects stay sealed in memory too; only parsed key material is cached in
//! the clear, and that cache is dropped at logout). Values are zeroized when
//! dropped.

use crate::error::{Result, err};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// Size of a `CK_ULONG` in attribute values.
pub const ULONG_LEN: usize = std::mem::size_of::<CK_ULONG>();

/// Longest value kept inline (no allocation): flags, `CK_ULONG`s, short
/// labels and ids, which are most of an object's attributes.
const INLINE: usize = 22;

/// The bytes of a plain value, zeroized when dropped: inline up to
/// [`INLINE`] bytes, on the heap beyond. Loading a token object then
/// allocates only for its few long values.
#[derive(Clone)]
pub enum PlainBytes {
    /// Short value.
    Inline {
        /// Used length of `buf`.
        len: u8,
        /// The bytes, zero beyond `len`.
        buf: [u8; INLINE],
    },
    /// Long value.
    Heap(Zeroizing<Vec<u8>>),
}

impl PlainBytes {
    /// A copy as an owned, zeroizing vector.
    pub fn to_zeroizing(&self) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(self.to_vec())
    }
}

impl std::ops::Deref for PlainBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            PlainBytes::Inline { len, buf } => &buf[..*len as usize],
            PlainBytes::Heap(v) => v,
        }
    }
}

impl From<&[u8]> for PlainBytes {
    fn from(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..bytes.len()].copy_from_slice(bytes);
            PlainBytes::Inline {
                len: bytes.len() as u8,
                buf,
            }
        } else {
            PlainBytes::Heap(Zeroizing::new(bytes.to_vec()))
        }
    }
}

impl From<Zeroizing<Vec<u8>>> for PlainBytes {
    fn from(v: Zeroizing<Vec<u8>>) -> Self {
        if v.len() <= INLINE {
            PlainBytes::from(v.as_slice())
        } else {
            PlainBytes::Heap(v)
        }
    }
}

impl Drop for PlainBytes {
    fn drop(&mut self) {
        if let PlainBytes::Inline { buf, .. } = self {
            zeroize::Zeroize::zeroize(buf);
        }
    }
}

impl PartialEq for PlainBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for PlainBytes {}

impl std::fmt::Debug for PlainBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One attribute value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// The value itself.
    Plain(PlainBytes),
    /// Format byte ‖ nonce ‖ AES-256-GCM ciphertext ‖ tag (see
    /// `object::seal_aad`; format 1 is the unbound form of schema 1 files,
    /// format 2 binds the object's protection attributes).
    Sealed(Vec<u8>),
}

impl Value {
    /// A plain value.
    pub fn plain(bytes: &[u8]) -> Value {
        Value::Plain(PlainBytes::from(bytes))
    }

    /// The plain bytes, if not sealed.
    pub fn as_plain(&self) -> Option<&[u8]> {
        match self {
            Value::Plain(v) => Some(v),
            Value::Sealed(_) => None,
        }
    }
}

/// A set of attributes, ordered by type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    entries: Vec<(CK_ATTRIBUTE_TYPE, Value)>,
}

/// One attribute of a caller's template: type and plain value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    /// `CK_ATTRIBUTE.type`.
    pub ty: CK_ATTRIBUTE_TYPE,
    /// The bytes at `pValue`.
    pub value: Zeroizing<Vec<u8>>,
}

impl Attr {
    /// An attribute from bytes.
    pub fn new(ty: CK_ATTRIBUTE_TYPE, value: &[u8]) -> Attr {
        Attr {
            ty,
            value: Zeroizing::new(value.to_vec()),
        }
    }

    /// A `CK_BBOOL` attribute.
    pub fn bool(ty: CK_ATTRIBUTE_TYPE, v: bool) -> Attr {
        Attr::new(ty, &[v as u8])
    }

    /// A `CK_ULONG` attribute.
    pub fn ulong(ty: CK_ATTRIBUTE_TYPE, v: CK_ULONG) -> Attr {
        Attr::new(ty, &v.to_ne_bytes())
    }
}

/// Reads a `CK_BBOOL` value: exactly one byte; any non-zero byte is true.
pub fn decode_bool(v: &[u8]) -> Result<bool> {
    match v {
        [b] => Ok(*b != 0),
        _ => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
    }
}

/// Reads a `CK_ULONG` value in native byte order.
pub fn decode_ulong(v: &[u8]) -> Result<CK_ULONG> {
    let b: [u8; ULONG_LEN] = v.try_into().map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?;
    Ok(CK_ULONG::from_ne_bytes(b))
}

/// Number of records in an encoded set (a quick scan, to size the vector;
/// a malformed tail only makes it smaller).
fn count_records(mut input: &[u8]) -> usize {
    let mut n = 0;
    while input.len() >= 13 {
        let len = u32::from_le_bytes([input[9], input[10], input[11], input[12]]) as usize;
        let Some(rest) = input.get(13 + len..) else {
            break;
        };
        n += 1;
        input = rest;
    }
    n
}

impl Attributes {
    /// An empty set.
    pub fn new() -> Self {
        Attributes::default()
    }

    fn position(&self, ty: CK_ATTRIBUTE_TYPE) -> std::result::Result<usize, usize> {
        self.entries.binary_search_by_key(&ty, |(t, _)| *t)
    }

    /// The value of `ty`, if present.
    pub fn get(&self, ty: CK_ATTRIBUTE_TYPE) -> Option<&Value> {
        self.position(ty).ok().map(|i| &self.entries[i].1)
    }

    /// The plain bytes of `ty`, if present and not sealed.
    pub fn bytes(&self, ty: CK_ATTRIBUTE_TYPE) -> Option<&[u8]> {
        self.get(ty).and_then(Value::as_plain)
    }

    /// A boolean attribute; absent or malformed reads as `false`.
    pub fn flag(&self, ty: CK_ATTRIBUTE_TYPE) -> bool {
        self.bytes(ty)
            .and_then(|v| decode_bool(v).ok())
            .unwrap_or(false)
    }

    /// A `CK_ULONG` attribute.
    pub fn ulong(&self, ty: CK_ATTRIBUTE_TYPE) -> Option<CK_ULONG> {
        self.bytes(ty).and_then(|v| decode_ulong(v).ok())
    }

    /// True if `ty` is present.
    pub fn contains(&self, ty: CK_ATTRIBUTE_TYPE) -> bool {
        self.position(ty).is_ok()
    }

    /// Sets `ty` to `value`, replacing any previous value.
    pub fn set(&mut self, ty: CK_ATTRIBUTE_TYPE, value: Value) {
        match self.position(ty) {
            Ok(i) => self.entries[i].1 = value,
            Err(i) => self.entries.insert(i, (ty, value)),
        }
    }

    /// Sets a plain value.
    pub fn set_bytes(&mut self, ty: CK_ATTRIBUTE_TYPE, value: &[u8]) {
        self.set(ty, Value::plain(value))
    }

    /// Sets a boolean.
    pub fn set_flag(&mut self, ty: CK_ATTRIBUTE_TYPE, v: bool) {
        self.set_bytes(ty, &[v as u8])
    }

    /// Sets a `CK_ULONG`.
    pub fn set_ulong(&mut self, ty: CK_ATTRIBUTE_TYPE, v: CK_ULONG) {
        self.set_bytes(ty, &v.to_ne_bytes())
    }

    /// Removes `ty`.
    pub fn remove(&mut self, ty: CK_ATTRIBUTE_TYPE) {
        if let Ok(i) = self.position(ty) {
            self.entries.remove(i);
        }
    }

    /// All entries, ordered by type.
    pub fn iter(&self) -> impl Iterator<Item = &(CK_ATTRIBUTE_TYPE, Value)> {
        self.entries.iter()
    }

    /// Mutable access to every value (to seal or unseal in place).
    pub fn values_mut(&mut self) -> impl Iterator<Item = (CK_ATTRIBUTE_TYPE, &mut Value)> {
        self.entries.iter_mut().map(|(t, v)| (*t, v))
    }

    /// Total size of the values, for `C_GetObjectSize`.
    pub fn size(&self) -> usize {
        self.entries
            .iter()
            .map(|(_, v)| match v {
                Value::Plain(b) => b.len(),
                Value::Sealed(b) => b.len(),
            } + ULONG_LEN)
            .sum()
    }

    /// Encodes as `[type u64][sealed u8][len u32][bytes]...`, little endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.size() + self.entries.len() * 13);
        for (ty, v) in &self.entries {
            let (tag, bytes): (u8, &[u8]) = match v {
                Value::Plain(b) => (0, &**b),
                // The format byte is the record's tag (1 or 2).
                Value::Sealed(b) => (b.first().copied().unwrap_or(1), b.get(1..).unwrap_or(&[])),
            };
            out.extend_from_slice(&(*ty).to_le_bytes());
            out.push(tag);
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }

    /// Decodes what [`Attributes::encode`] wrote; corrupt input is a device error.
    pub fn decode(mut input: &[u8]) -> Result<Attributes> {
        let corrupt = || err(CKR_DEVICE_ERROR);
        let mut attrs = Attributes {
            entries: Vec::with_capacity(count_records(input)),
        };
        while !input.is_empty() {
            if input.len() < 13 {
                return Err(corrupt());
            }
            let ty = u64::from_le_bytes(input[..8].try_into().map_err(|_| corrupt())?);
            let tag = input[8];
            let len = u32::from_le_bytes(input[9..13].try_into().map_err(|_| corrupt())?) as usize;
            input = &input[13..];
            if input.len() < len {
                return Err(corrupt());
            }
            let (bytes, rest) = input.split_at(len);
            let value = match tag {
                0 => Value::plain(bytes),
                1 | 2 => {
                    let mut sealed = Vec::with_capacity(bytes.len() + 1);
                    sealed.push(tag);
                    sealed.extend_from_slice(bytes);
                    Value::Sealed(sealed)
                }
                _ => return Err(corrupt()),
            };
            let ty = ty as CK_ATTRIBUTE_TYPE;
            // Stored in type order: append, unless the record is out of order.
            match attrs.entries.last() {
                Some((last, _)) if *last >= ty => attrs.set(ty, value),
                _ => attrs.entries.push((ty, value)),
            }
            input = rest;
        }
        Ok(attrs)
    }
}

/// The attributes whose value is itself a template, an array of
/// `CK_ATTRIBUTE` (base spec §4.7 `CKA_DERIVE_TEMPLATE`, §4.8
/// `CKA_WRAP_TEMPLATE`, §4.9/§4.10 `CKA_UNWRAP_TEMPLATE`). The token keeps
/// them encoded with [`encode_template`], never as the caller's structs
/// (whose pointers mean nothing once the call returns).
pub const TEMPLATE_ATTRIBUTES: [CK_ATTRIBUTE_TYPE; 3] =
    [CKA_WRAP_TEMPLATE, CKA_UNWRAP_TEMPLATE, CKA_DERIVE_TEMPLATE];

/// True if `ty` holds a nested template.
pub fn is_template_attribute(ty: CK_ATTRIBUTE_TYPE) -> bool {
    TEMPLATE_ATTRIBUTES.contains(&ty)
}

/// Encodes a nested template (as [`Attributes::encode`], plain values; a
/// type given twice keeps its last value).
pub fn encode_template(attrs: &[Attr]) -> Vec<u8> {
    let mut set = Attributes::default();
    for a in attrs {
        set.set(a.ty, Value::plain(&a.value));
    }
    set.encode()
}

/// Decodes a nested template written by [`encode_template`]: plain values
/// only, and no template nested in it (`CKR_ATTRIBUTE_VALUE_INVALID`
/// otherwise).
pub fn decode_template(bytes: &[u8]) -> Result<Attributes> {
    let invalid = || err(CKR_ATTRIBUTE_VALUE_INVALID);
    let set = Attributes::decode(bytes).map_err(|_| invalid())?;
    for (ty, v) in set.iter() {
        if is_template_attribute(*ty) || v.as_plain().is_none() {
            return Err(invalid());
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_templates_round_trip_and_refuse_nesting() {
        let t = [
            Attr::bool(CKA_SENSITIVE, true),
            Attr::ulong(CKA_KEY_TYPE, CKK_AES),
            Attr::bool(CKA_SENSITIVE, true),
        ];
        let enc = encode_template(&t);
        let back = decode_template(&enc).unwrap();
        assert_eq!(back.iter().count(), 2);
        assert!(back.flag(CKA_SENSITIVE));
        assert_eq!(back.ulong(CKA_KEY_TYPE), Some(CKK_AES));
        assert!(
            decode_template(&encode_template(&[]))
                .unwrap()
                .iter()
                .next()
                .is_none()
        );
        let nested = encode_template(&[Attr::new(CKA_WRAP_TEMPLATE, &enc)]);
        assert_eq!(
            decode_template(&nested).unwrap_err().rv(),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
        // What an older version stored: the caller's raw CK_ATTRIBUTE bytes.
        assert!(decode_template(&[0x11, 0x02, 0, 0, 0, 0, 0, 0, 0x78, 0x56]).is_err());
    }

    #[test]
    fn encode_round_trip() {
        let mut a = Attributes::new();
        a.set_ulong(CKA_CLASS, CKO_SECRET_KEY);
        a.set_flag(CKA_TOKEN, true);
        let mut sealed = vec![2u8];
        sealed.extend_from_slice(&[9; 40]);
        a.set(CKA_VALUE, Value::Sealed(sealed));
        a.set_bytes(CKA_LABEL, b"k");
        let b = Attributes::decode(&a.encode()).unwrap();
        assert_eq!(a, b);
        assert_eq!(b.ulong(CKA_CLASS), Some(CKO_SECRET_KEY));
        assert!(b.flag(CKA_TOKEN));
        assert_eq!(b.bytes(CKA_VALUE), None, "sealed values are not plain");
    }

    #[test]
    fn decode_rejects_truncation() {
        let mut a = Attributes::new();
        a.set_bytes(CKA_LABEL, b"label");
        let enc = a.encode();
        for cut in 1..enc.len() {
            assert!(Attributes::decode(&enc[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn set_replaces_and_keeps_order() {
        let mut a = Attributes::new();
        a.set_bytes(CKA_LABEL, b"x");
        a.set_bytes(CKA_CLASS, b"y");
        a.set_bytes(CKA_LABEL, b"z");
        let types: Vec<_> = a.iter().map(|(t, _)| *t).collect();
        assert_eq!(types, vec![CKA_CLASS, CKA_LABEL]);
        assert_eq!(a.bytes(CKA_LABEL), Some(&b"z"[..]));
        a.remove(CKA_LABEL);
        assert!(!a.contains(CKA_LABEL));
    }

    #[test]
    fn bool_and_ulong_lengths_are_checked() {
        assert!(decode_bool(&[]).is_err());
        assert!(decode_bool(&[1, 0]).is_err());
        assert!(decode_bool(&[2]).unwrap());
        assert!(decode_ulong(&[0; 4]).is_err());
        assert_eq!(decode_ulong(&7u64.to_ne_bytes()).unwrap(), 7);
    }

    /// Values on both sides of the inline limit keep their bytes, compare
    /// by content whatever their representation, and survive encoding.
    #[test]
    fn inline_and_heap_values() {
        for len in [0, 1, INLINE - 1, INLINE, INLINE + 1, 300] {
            let bytes: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
            let v = PlainBytes::from(bytes.as_slice());
            assert_eq!(&*v, bytes.as_slice(), "length {len}");
            assert_eq!(matches!(v, PlainBytes::Inline { .. }), len <= INLINE);
            assert_eq!(PlainBytes::from(Zeroizing::new(bytes.clone())), v);
            assert_eq!(*v.to_zeroizing(), bytes);
            let mut a = Attributes::new();
            a.set_bytes(CKA_ID, &bytes);
            let b = Attributes::decode(&a.encode()).unwrap();
            assert_eq!(b.bytes(CKA_ID), Some(bytes.as_slice()));
        }
    }

    /// Records stored out of type order still decode into a sorted set.
    #[test]
    fn decode_sorts_out_of_order_records() {
        let mut enc = Vec::new();
        for (ty, v) in [
            (CKA_LABEL, &b"l"[..]),
            (CKA_CLASS, &[1u8; 8][..]),
            (CKA_ID, b"i"),
        ] {
            enc.extend_from_slice(&ty.to_le_bytes());
            enc.push(0);
            enc.extend_from_slice(&(v.len() as u32).to_le_bytes());
            enc.extend_from_slice(v);
        }
        let a = Attributes::decode(&enc).unwrap();
        let types: Vec<_> = a.iter().map(|(t, _)| *t).collect();
        assert_eq!(types, vec![CKA_CLASS, CKA_LABEL, CKA_ID]);
        assert_eq!(count_records(&enc), 3);
        assert_eq!(count_records(&enc[..enc.len() - 1]), 2);
    }
}
