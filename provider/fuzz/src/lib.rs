//! Shared harness of the fuzz targets: the module reached only through its
//! exported function list (as a consumer reaches it), a token in memory
//! storage set up once per process with a logged-in user and a key of every
//! type, and the two failure rules every target applies to every call:
//! `CKR_GENERAL_ERROR` (the module caught a panic) and a call that takes
//! more than a second are failures.

pub mod ike;
pub mod tls;

use arbitrary::Arbitrary;
use cryptoki_sys::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Longest any call may take.
pub const CALL_LIMIT: Duration = Duration::from_secs(1);

/// The function list, the token's slot and the fixed keys.
pub struct Harness {
    /// `C_GetFunctionList` of the module.
    pub f: &'static CK_FUNCTION_LIST,
    /// Slot of the fuzzing token.
    pub slot: CK_SLOT_ID,
    /// Keys made once: `(name, handle)`, public and private halves apart.
    pub keys: Vec<(&'static str, CK_OBJECT_HANDLE)>,
}

/// Runs one call under the failure rules.
pub fn call(name: &str, body: impl FnOnce() -> CK_RV) -> CK_RV {
    let start = Instant::now();
    let rv = body();
    let took = start.elapsed();
    assert!(took < CALL_LIMIT, "{name} took {took:?}");
    assert_ne!(
        rv, CKR_GENERAL_ERROR,
        "{name} returned CKR_GENERAL_ERROR (a caught panic)"
    );
    rv
}

/// A `CK_ATTRIBUTE` over `value`.
pub fn attr(ty: CK_ATTRIBUTE_TYPE, value: &mut [u8]) -> CK_ATTRIBUTE {
    CK_ATTRIBUTE {
        type_: ty,
        pValue: if value.is_empty() {
            null_mut()
        } else {
            value.as_mut_ptr() as *mut c_void
        },
        ulValueLen: value.len() as CK_ULONG,
    }
}

fn ulong(v: CK_ULONG) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

/// The harness, set up on first use.
pub fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(setup)
}

const SO_PIN: &[u8] = b"fuzz-so-pin";
const USER_PIN: &[u8] = b"fuzz-user-pin";
/// DER of the P-256 and P-384 OIDs and the Ed25519 name.
pub const P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
pub const P384: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];
pub const ED25519: &[u8] = b"\x13\x0cedwards25519";

fn ok(name: &str, rv: CK_RV) {
    assert_eq!(rv, CKR_OK, "set-up call {name}");
}

fn setup() -> Harness {
    // SAFETY: set before the module reads its configuration, single-threaded.
    unsafe {
        std::env::set_var("DALEK_PKCS11_STORAGE", "memory");
        std::env::remove_var("DALEK_PKCS11_CONFIG");
        std::env::remove_var("DALEK_PKCS11_LOG");
    }
    let mut list: *mut CK_FUNCTION_LIST = null_mut();
    // SAFETY: the module's exported entry point with a valid out-pointer; the
    // list it returns is static. Every call below passes live buffers of the
    // lengths it states.
    unsafe {
        ok(
            "C_GetFunctionList",
            dalek_pkcs11::ffi::C_GetFunctionList(&mut list),
        );
        let f: &'static CK_FUNCTION_LIST = &*list;
        ok("C_Initialize", (f.C_Initialize.unwrap())(null_mut()));
        let slot = 0;
        let mut label = [b' '; 32];
        label[..4].copy_from_slice(b"fuzz");
        ok(
            "C_InitToken",
            (f.C_InitToken.unwrap())(
                slot,
                SO_PIN.as_ptr() as *mut u8,
                SO_PIN.len() as CK_ULONG,
                label.as_mut_ptr(),
            ),
        );
        let mut s = 0;
        let flags = CKF_SERIAL_SESSION | CKF_RW_SESSION;
        ok(
            "C_OpenSession",
            (f.C_OpenSession.unwrap())(slot, flags, null_mut(), None, &mut s),
        );
        ok(
            "C_Login SO",
            (f.C_Login.unwrap())(
                s,
                CKU_SO,
                SO_PIN.as_ptr() as *mut u8,
                SO_PIN.len() as CK_ULONG,
            ),
        );
        ok(
            "C_InitPIN",
            (f.C_InitPIN.unwrap())(s, USER_PIN.as_ptr() as *mut u8, USER_PIN.len() as CK_ULONG),
        );
        ok("C_Logout", (f.C_Logout.unwrap())(s));
        // This session stays open, with the user logged in, for the whole run.
        ok(
            "C_Login",
            (f.C_Login.unwrap())(
                s,
                CKU_USER,
                USER_PIN.as_ptr() as *mut u8,
                USER_PIN.len() as CK_ULONG,
            ),
        );
        let mut keys = Vec::new();
        let gen_key = |mech: CK_MECHANISM_TYPE, mut t: Vec<(CK_ATTRIBUTE_TYPE, Vec<u8>)>| {
            let mut m = CK_MECHANISM {
                mechanism: mech,
                pParameter: null_mut(),
                ulParameterLen: 0,
            };
            let mut raw: Vec<CK_ATTRIBUTE> = t.iter_mut().map(|(ty, v)| attr(*ty, v)).collect();
            let mut h = 0;
            ok(
                "C_GenerateKey",
                (f.C_GenerateKey.unwrap())(
                    s,
                    &mut m,
                    raw.as_mut_ptr(),
                    raw.len() as CK_ULONG,
                    &mut h,
                ),
            );
            h
        };
        let yes = vec![1u8];
        let no = vec![0u8];
        let usage = |extra: &[(CK_ATTRIBUTE_TYPE, Vec<u8>)]| {
            let mut t = vec![
                (CKA_TOKEN, no.clone()),
                (CKA_ENCRYPT, yes.clone()),
                (CKA_SIGN, yes.clone()),
                (CKA_VERIFY, yes.clone()),
                (CKA_DERIVE, yes.clone()),
                (CKA_EXTRACTABLE, yes.clone()),
            ];
            t.extend_from_slice(extra);
            t
        };
        keys.push((
            "aes-data",
            gen_key(
                CKM_AES_KEY_GEN,
                usage(&[(CKA_VALUE_LEN, ulong(32)), (CKA_DECRYPT, yes.clone())]),
            ),
        ));
        keys.push((
            "aes-kek",
            gen_key(
                CKM_AES_KEY_GEN,
                usage(&[
                    (CKA_VALUE_LEN, ulong(16)),
                    (CKA_DECRYPT, no.clone()),
                    (CKA_WRAP, yes.clone()),
                    (CKA_UNWRAP, yes.clone()),
                ]),
            ),
        ));
        keys.push((
            "des3",
            gen_key(
                CKM_DES3_KEY_GEN,
                usage(&[
                    (CKA_DECRYPT, yes.clone()),
                    (CKA_WRAP, yes.clone()),
                    (CKA_UNWRAP, yes.clone()),
                ]),
            ),
        ));
        keys.push((
            "chacha20",
            gen_key(CKM_CHACHA20_KEY_GEN, usage(&[(CKA_DECRYPT, yes.clone())])),
        ));
        keys.push((
            "secret",
            gen_key(
                CKM_GENERIC_SECRET_KEY_GEN,
                usage(&[(CKA_VALUE_LEN, ulong(32))]),
            ),
        ));
        // An HOTP key taking a caller's counter (so CK_OTP_PARAMS reach the
        // counter checks); OTP keys only sign and verify.
        keys.push((
            "hotp",
            gen_key(
                CKM_HOTP_KEY_GEN,
                vec![
                    (CKA_TOKEN, no.clone()),
                    (CKA_SIGN, yes.clone()),
                    (CKA_VERIFY, yes.clone()),
                    (CKA_OTP_COUNTER_REQUIREMENT, ulong(CK_OTP_PARAM_OPTIONAL)),
                ],
            ),
        ));
        let gen_pair = |mech: CK_MECHANISM_TYPE, mut public: Vec<(CK_ATTRIBUTE_TYPE, Vec<u8>)>| {
            let mut m = CK_MECHANISM {
                mechanism: mech,
                pParameter: null_mut(),
                ulParameterLen: 0,
            };
            public.extend([
                (CKA_TOKEN, no.clone()),
                (CKA_WRAP, yes.clone()),
                (CKA_ENCRYPT, yes.clone()),
                (CKA_VERIFY, yes.clone()),
            ]);
            let mut private = vec![
                (CKA_TOKEN, no.clone()),
                (CKA_SIGN, yes.clone()),
                (CKA_DERIVE, yes.clone()),
                (CKA_DECRYPT, yes.clone()),
                (CKA_UNWRAP, yes.clone()),
                (CKA_EXTRACTABLE, yes.clone()),
            ];
            let mut pub_raw: Vec<CK_ATTRIBUTE> =
                public.iter_mut().map(|(ty, v)| attr(*ty, v)).collect();
            let mut priv_raw: Vec<CK_ATTRIBUTE> =
                private.iter_mut().map(|(ty, v)| attr(*ty, v)).collect();
            let (mut p, mut q) = (0, 0);
            ok(
                "C_GenerateKeyPair",
                (f.C_GenerateKeyPair.unwrap())(
                    s,
                    &mut m,
                    pub_raw.as_mut_ptr(),
                    pub_raw.len() as CK_ULONG,
                    priv_raw.as_mut_ptr(),
                    priv_raw.len() as CK_ULONG,
                    &mut p,
                    &mut q,
                ),
            );
            (p, q)
        };
        for (name, mech, public) in [
            (
                "p256",
                CKM_EC_KEY_PAIR_GEN,
                vec![(CKA_EC_PARAMS, P256.to_vec())],
            ),
            (
                "p384",
                CKM_EC_KEY_PAIR_GEN,
                vec![(CKA_EC_PARAMS, P384.to_vec())],
            ),
            (
                "ed25519",
                CKM_EC_EDWARDS_KEY_PAIR_GEN,
                vec![(CKA_EC_PARAMS, ED25519.to_vec())],
            ),
            (
                "rsa2048",
                CKM_RSA_PKCS_KEY_PAIR_GEN,
                vec![(CKA_MODULUS_BITS, ulong(2048))],
            ),
        ] {
            let (p, q) = gen_pair(mech, public);
            keys.push((name, p));
            keys.push((name, q));
        }
        Harness { f, slot, keys }
    }
}

/// A session for one fuzz input; closing it ends its operations and
/// destroys its session objects.
pub struct FuzzSession {
    /// The handle.
    pub h: CK_SESSION_HANDLE,
}

impl FuzzSession {
    /// Opens a read/write session (the user is logged in already).
    pub fn open() -> FuzzSession {
        let hs = harness();
        let mut h = 0;
        // SAFETY: valid out-pointer.
        let rv = call("C_OpenSession", || unsafe {
            (hs.f.C_OpenSession.unwrap())(
                hs.slot,
                CKF_SERIAL_SESSION | CKF_RW_SESSION,
                null_mut(),
                None,
                &mut h,
            )
        });
        assert_eq!(rv, CKR_OK);
        FuzzSession { h }
    }
}

impl Drop for FuzzSession {
    fn drop(&mut self) {
        let hs = harness();
        // SAFETY: a plain call with a handle.
        let rv = call("C_CloseSession", || unsafe {
            (hs.f.C_CloseSession.unwrap())(self.h)
        });
        assert_eq!(rv, CKR_OK);
    }
}

/// Attribute types the fuzzer draws from (index into it, or a raw type).
pub const TYPES: &[CK_ATTRIBUTE_TYPE] = &[
    CKA_CLASS,
    CKA_TOKEN,
    CKA_PRIVATE,
    CKA_LABEL,
    CKA_VALUE,
    CKA_KEY_TYPE,
    CKA_ID,
    CKA_SENSITIVE,
    CKA_EXTRACTABLE,
    CKA_EC_PARAMS,
    CKA_EC_POINT,
    CKA_SIGN,
    CKA_VERIFY,
    CKA_ENCRYPT,
    CKA_DECRYPT,
    CKA_WRAP,
    CKA_UNWRAP,
    CKA_DERIVE,
    CKA_MODIFIABLE,
    CKA_COPYABLE,
    CKA_DESTROYABLE,
    CKA_ALLOWED_MECHANISMS,
    CKA_START_DATE,
    CKA_END_DATE,
    CKA_VALUE_LEN,
    CKA_MODULUS,
    CKA_MODULUS_BITS,
    CKA_PUBLIC_EXPONENT,
    CKA_PRIVATE_EXPONENT,
    CKA_PRIME_1,
    CKA_PRIME_2,
    CKA_EXPONENT_1,
    CKA_EXPONENT_2,
    CKA_COEFFICIENT,
    CKA_CERTIFICATE_TYPE,
    CKA_SUBJECT,
    CKA_ISSUER,
    CKA_SERIAL_NUMBER,
    CKA_TRUSTED,
    CKA_WRAP_WITH_TRUSTED,
    CKA_ALWAYS_AUTHENTICATE,
    CKA_APPLICATION,
    CKA_OBJECT_ID,
    CKA_UNIQUE_ID,
    CKA_WRAP_TEMPLATE,
    CKA_UNWRAP_TEMPLATE,
    CKA_DERIVE_TEMPLATE,
    CKA_CHECK_VALUE,
    CKA_PUBLIC_KEY_INFO,
    // PKCS#11 3.2: post-quantum keys and key encapsulation.
    CKA_PARAMETER_SET,
    CKA_SEED,
    CKA_ENCAPSULATE,
    CKA_DECAPSULATE,
    CKA_ENCAPSULATE_TEMPLATE,
    CKA_DECAPSULATE_TEMPLATE,
];

/// One fuzzed attribute value.
#[derive(Arbitrary, Debug, Clone)]
pub enum Value {
    /// A `CK_BBOOL`.
    Bool(bool),
    /// A `CK_ULONG` (classes, key types, lengths).
    Ulong(u64),
    /// Small `CK_ULONG` (a plausible class, key type or length).
    Small(u8),
    /// Any bytes.
    Bytes(Vec<u8>),
    /// A known curve's parameters.
    Curve(u8),
    /// A nested template (for the `*_TEMPLATE` attributes).
    Nested(Vec<(u8, u8)>),
}

/// One fuzzed attribute: a type (an index into [`TYPES`] or raw) and value.
#[derive(Arbitrary, Debug, Clone)]
pub struct FuzzAttr {
    /// Index into [`TYPES`]; values past the end give raw types.
    pub ty: u16,
    /// The value.
    pub value: Value,
}

impl FuzzAttr {
    /// The attribute type.
    pub fn ty(&self) -> CK_ATTRIBUTE_TYPE {
        TYPES
            .get(self.ty as usize)
            .copied()
            .unwrap_or(self.ty as CK_ATTRIBUTE_TYPE ^ 0x8000_0000)
    }
}

/// A template built from fuzzed attributes, with storage for every value
/// (nested templates included) that outlives the raw array.
pub struct Template {
    values: Vec<Vec<u8>>,
    nested: Vec<Vec<CK_ATTRIBUTE>>,
    /// The raw attributes.
    pub raw: Vec<CK_ATTRIBUTE>,
}

/// The attribute types whose value is an array of `CK_ATTRIBUTE`.
const TEMPLATE_TYPES: [CK_ATTRIBUTE_TYPE; 3] =
    [CKA_WRAP_TEMPLATE, CKA_UNWRAP_TEMPLATE, CKA_DERIVE_TEMPLATE];

impl Template {
    /// Builds the raw template (at most 64 attributes). A nested-template
    /// attribute always gets a real `CK_ATTRIBUTE` array (a consumer passing
    /// anything else there would hand the module wild pointers): fuzzed
    /// bytes become `(type, value)` pairs of it.
    pub fn new(attrs: &[FuzzAttr]) -> Template {
        let attrs: Vec<FuzzAttr> = attrs
            .iter()
            .take(64)
            .map(|a| match &a.value {
                Value::Nested(_) => a.clone(),
                _ if TEMPLATE_TYPES.contains(&a.ty()) => {
                    let bytes = match &a.value {
                        Value::Bytes(b) => b.clone(),
                        _ => Vec::new(),
                    };
                    let pairs = bytes
                        .chunks(2)
                        .map(|c| (c[0], *c.get(1).unwrap_or(&0)))
                        .collect();
                    FuzzAttr {
                        ty: a.ty,
                        value: Value::Nested(pairs),
                    }
                }
                _ => a.clone(),
            })
            .collect();
        let attrs = &attrs[..];
        let mut t = Template {
            values: Vec::new(),
            nested: Vec::new(),
            raw: Vec::new(),
        };
        let bytes_of = |v: &Value| -> Vec<u8> {
            match v {
                Value::Bool(b) => vec![*b as u8],
                Value::Ulong(u) => ulong(*u as CK_ULONG),
                Value::Small(u) => ulong(*u as CK_ULONG),
                Value::Bytes(b) => b.iter().copied().take(4096).collect(),
                Value::Curve(c) => [P256, P384, ED25519][*c as usize % 3].to_vec(),
                Value::Nested(_) => Vec::new(),
            }
        };
        for a in attrs.iter().take(64) {
            t.values.push(bytes_of(&a.value));
            if let Value::Nested(inner) = &a.value {
                let mut entries = Vec::new();
                for (ty, v) in inner.iter().take(8) {
                    t.values.push(vec![*v; 1 + (*v as usize % 3)]);
                    let ty = TYPES[*ty as usize % TYPES.len()];
                    let last = t.values.len() - 1;
                    entries.push(attr(ty, &mut t.values[last]));
                }
                t.nested.push(entries);
            }
        }
        // Pointers are taken once every buffer is in place.
        let mut next_value = 0;
        let mut next_nested = 0;
        for a in attrs.iter().take(64) {
            let ty = a.ty();
            let v = &mut t.values[next_value];
            next_value += 1;
            if let Value::Nested(inner) = &a.value {
                next_value += inner.len().min(8);
                let n = &mut t.nested[next_nested];
                next_nested += 1;
                t.raw.push(CK_ATTRIBUTE {
                    type_: ty,
                    pValue: n.as_mut_ptr() as *mut c_void,
                    ulValueLen: (n.len() * std::mem::size_of::<CK_ATTRIBUTE>()) as CK_ULONG,
                });
            } else {
                t.raw.push(attr(ty, v));
            }
        }
        t
    }

    /// `(pointer, count)` for a `C_*` call.
    pub fn parts(&mut self) -> (*mut CK_ATTRIBUTE, CK_ULONG) {
        if self.raw.is_empty() {
            (null_mut(), 0)
        } else {
            (self.raw.as_mut_ptr(), self.raw.len() as CK_ULONG)
        }
    }
}

/// A fuzzed output buffer: the size-query convention and short buffers.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum OutBuf {
    /// `NULL`: ask for the length.
    Query,
    /// A buffer of this many bytes.
    Sized(u16),
}

impl OutBuf {
    /// A buffer (or none) and its length variable.
    pub fn make(self) -> (Option<Vec<u8>>, CK_ULONG) {
        match self {
            OutBuf::Query => (None, 0),
            OutBuf::Sized(n) => (Some(vec![0u8; n as usize]), n as CK_ULONG),
        }
    }
}

/// Pointer of an optional buffer.
pub fn out_ptr(b: &mut Option<Vec<u8>>) -> *mut u8 {
    b.as_mut().map_or(null_mut(), |v| v.as_mut_ptr())
}

/// Pointer of input bytes (`NULL` for none).
pub fn in_ptr(b: &[u8]) -> *mut u8 {
    if b.is_empty() {
        null::<u8>() as *mut u8
    } else {
        b.as_ptr() as *mut u8
    }
}
