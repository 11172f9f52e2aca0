//! Attribute policy: one table of rules per object class and key type.
//!
//! Each rule names an attribute, the shape of its value, its default and its
//! flags; the flags are the footnotes of the PKCS#11 3.0 base specification,
//! §4.2 ("Common attribute footnotes", table 10) as used by the attribute
//! tables of §4.3–§4.9 and of the current mechanisms specification (§2.3
//! EC, §2.1 RSA, AES §2.8, generic secret §2.7.x). Create, generate, copy,
//! set and get all consult these tables (`api::template`); no function has
//! special cases of its own.

use cryptoki_sys::*;

/// Shape of an attribute value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `CK_BBOOL`, one byte.
    Bool,
    /// `CK_ULONG`.
    Ulong,
    /// Any byte string.
    Bytes,
    /// `CK_DATE` (8 digits) or empty.
    Date,
    /// Array of `CK_MECHANISM_TYPE`.
    MechanismList,
    /// A nested template (array of `CK_ATTRIBUTE`), kept encoded by
    /// `attributes::encode_template`.
    Template,
}

/// Value used when the template does not give one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// No default: absent unless given (or computed by the token).
    None,
    /// A boolean.
    Bool(bool),
    /// A `CK_ULONG`.
    Ulong(CK_ULONG),
    /// The empty byte string.
    Empty,
}

/// Footnote 1: must be specified when the object is created with `C_CreateObject`.
pub const REQUIRED_ON_CREATE: u16 = 1 << 0;
/// Footnote 2: must not be specified when the object is created with `C_CreateObject`.
pub const NOT_ON_CREATE: u16 = 1 << 1;
/// Footnote 3: must be specified when the object is generated.
pub const REQUIRED_ON_GENERATE: u16 = 1 << 2;
/// Footnote 4: must not be specified when the object is generated.
pub const NOT_ON_GENERATE: u16 = 1 << 3;
/// Footnote 6: must not be specified when the object is unwrapped.
pub const NOT_ON_UNWRAP: u16 = 1 << 4;
/// Footnote 7: sensitive: not revealed if `CKA_SENSITIVE` is true or
/// `CKA_EXTRACTABLE` is false; sealed at rest in private objects.
pub const SENSITIVE: u16 = 1 << 5;
/// Footnote 8: may be modified after creation (`C_SetAttributeValue`, `C_CopyObject`).
pub const MODIFIABLE: u16 = 1 << 6;
/// Footnote 10: may be set to true only by the SO.
pub const SO_SETS_TRUE: u16 = 1 << 7;
/// Footnote 11: once true, may not be changed.
pub const STICKY_TRUE: u16 = 1 << 8;
/// Footnote 12: once false, may not be changed.
pub const STICKY_FALSE: u16 = 1 << 9;
/// May be changed in `C_CopyObject` though not by `C_SetAttributeValue`
/// (base spec §5.7 C_CopyObject: `CKA_TOKEN`, `CKA_PRIVATE`, and the
/// true-to-false changes of `CKA_MODIFIABLE` / `CKA_COPYABLE` / `CKA_DESTROYABLE`).
pub const COPY_MAY_CHANGE: u16 = 1 << 10;
/// Computed by the token: footnotes 2, 4 and 6 together; the caller never sets it.
pub const COMPUTED: u16 = NOT_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP;

/// One attribute's rule.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// Attribute type.
    pub ty: CK_ATTRIBUTE_TYPE,
    /// Value shape.
    pub kind: Kind,
    /// Footnote flags.
    pub flags: u16,
    /// Default value.
    pub default: Fallback,
}

const fn r(ty: CK_ATTRIBUTE_TYPE, kind: Kind, flags: u16, default: Fallback) -> Rule {
    Rule {
        ty,
        kind,
        flags,
        default,
    }
}

use Fallback as D;
use Kind as K;

/// §4.4 Common attributes and §4.5 storage objects.
const STORAGE: &[Rule] = &[
    r(CKA_CLASS, K::Ulong, REQUIRED_ON_CREATE, D::None),
    r(CKA_TOKEN, K::Bool, COPY_MAY_CHANGE, D::Bool(false)),
    r(CKA_PRIVATE, K::Bool, COPY_MAY_CHANGE, D::Bool(false)),
    r(
        CKA_MODIFIABLE,
        K::Bool,
        COPY_MAY_CHANGE | STICKY_FALSE,
        D::Bool(true),
    ),
    r(CKA_LABEL, K::Bytes, MODIFIABLE, D::Empty),
    r(
        CKA_COPYABLE,
        K::Bool,
        COPY_MAY_CHANGE | STICKY_FALSE,
        D::Bool(true),
    ),
    r(
        CKA_DESTROYABLE,
        K::Bool,
        COPY_MAY_CHANGE | STICKY_FALSE,
        D::Bool(true),
    ),
    r(CKA_UNIQUE_ID, K::Bytes, COMPUTED, D::None),
];

/// §4.6 Data objects.
const DATA: &[Rule] = &[
    r(CKA_APPLICATION, K::Bytes, MODIFIABLE, D::Empty),
    r(CKA_OBJECT_ID, K::Bytes, MODIFIABLE, D::Empty),
    r(CKA_VALUE, K::Bytes, MODIFIABLE, D::Empty),
];

/// §4.6.2 Certificate objects, common part.
const CERTIFICATE: &[Rule] = &[
    r(CKA_CERTIFICATE_TYPE, K::Ulong, REQUIRED_ON_CREATE, D::None),
    r(
        CKA_TRUSTED,
        K::Bool,
        MODIFIABLE | SO_SETS_TRUE,
        D::Bool(false),
    ),
    r(CKA_CERTIFICATE_CATEGORY, K::Ulong, 0, D::Ulong(0)),
    r(CKA_CHECK_VALUE, K::Bytes, 0, D::None),
    r(CKA_START_DATE, K::Date, MODIFIABLE, D::Empty),
    r(CKA_END_DATE, K::Date, MODIFIABLE, D::Empty),
    r(CKA_PUBLIC_KEY_INFO, K::Bytes, 0, D::Empty),
];

/// §4.6.3 X.509 public key certificates.
const X509: &[Rule] = &[
    r(CKA_SUBJECT, K::Bytes, REQUIRED_ON_CREATE, D::None),
    r(CKA_ID, K::Bytes, MODIFIABLE, D::Empty),
    r(CKA_ISSUER, K::Bytes, MODIFIABLE, D::Empty),
    r(CKA_SERIAL_NUMBER, K::Bytes, MODIFIABLE, D::Empty),
    r(CKA_VALUE, K::Bytes, REQUIRED_ON_CREATE, D::None),
    r(CKA_URL, K::Bytes, 0, D::Empty),
    r(CKA_HASH_OF_SUBJECT_PUBLIC_KEY, K::Bytes, 0, D::Empty),
    r(CKA_HASH_OF_ISSUER_PUBLIC_KEY, K::Bytes, 0, D::Empty),
    r(CKA_JAVA_MIDP_SECURITY_DOMAIN, K::Ulong, 0, D::Ulong(0)),
    r(CKA_NAME_HASH_ALGORITHM, K::Ulong, 0, D::Ulong(CKM_SHA_1)),
];

/// §4.7 Key objects, common part.
const KEY: &[Rule] = &[
    r(CKA_KEY_TYPE, K::Ulong, REQUIRED_ON_CREATE, D::None),
    r(CKA_ID, K::Bytes, MODIFIABLE, D::Empty),
    r(CKA_START_DATE, K::Date, MODIFIABLE, D::Empty),
    r(CKA_END_DATE, K::Date, MODIFIABLE, D::Empty),
    r(CKA_DERIVE, K::Bool, MODIFIABLE, D::Bool(false)),
    r(CKA_LOCAL, K::Bool, COMPUTED, D::None),
    r(CKA_KEY_GEN_MECHANISM, K::Ulong, COMPUTED, D::None),
    r(CKA_ALLOWED_MECHANISMS, K::MechanismList, 0, D::Empty),
    r(CKA_DERIVE_TEMPLATE, K::Template, 0, D::None),
];

/// §4.8 Public key objects.
const PUBLIC_KEY: &[Rule] = &[
    r(CKA_SUBJECT, K::Bytes, MODIFIABLE, D::Empty),
    r(CKA_ENCRYPT, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_VERIFY, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_VERIFY_RECOVER, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_WRAP, K::Bool, MODIFIABLE, D::Bool(true)),
    r(
        CKA_TRUSTED,
        K::Bool,
        MODIFIABLE | SO_SETS_TRUE,
        D::Bool(false),
    ),
    r(CKA_WRAP_TEMPLATE, K::Template, 0, D::None),
    r(CKA_PUBLIC_KEY_INFO, K::Bytes, 0, D::None),
];

/// §4.9 Private key objects. Private and secret keys default to
/// `CKA_PRIVATE = true` (the spec leaves the default to the token).
const PRIVATE_KEY: &[Rule] = &[
    r(CKA_PRIVATE, K::Bool, COPY_MAY_CHANGE, D::Bool(true)),
    r(CKA_SUBJECT, K::Bytes, MODIFIABLE, D::Empty),
    r(
        CKA_SENSITIVE,
        K::Bool,
        MODIFIABLE | STICKY_TRUE,
        D::Bool(true),
    ),
    r(CKA_DECRYPT, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_SIGN, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_SIGN_RECOVER, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_UNWRAP, K::Bool, MODIFIABLE, D::Bool(true)),
    r(
        CKA_EXTRACTABLE,
        K::Bool,
        MODIFIABLE | STICKY_FALSE,
        D::Bool(false),
    ),
    r(CKA_ALWAYS_SENSITIVE, K::Bool, COMPUTED, D::None),
    r(CKA_NEVER_EXTRACTABLE, K::Bool, COMPUTED, D::None),
    r(
        CKA_WRAP_WITH_TRUSTED,
        K::Bool,
        MODIFIABLE | STICKY_TRUE,
        D::Bool(false),
    ),
    r(CKA_UNWRAP_TEMPLATE, K::Template, 0, D::None),
    r(CKA_ALWAYS_AUTHENTICATE, K::Bool, 0, D::Bool(false)),
    r(CKA_PUBLIC_KEY_INFO, K::Bytes, MODIFIABLE, D::None),
];

/// §4.10 Secret key objects. `CKA_SENSITIVE` defaults to false as in
/// SoftHSM2 (so `pkcs11-tool --keygen --extractable` yields a readable
/// key); `CKA_EXTRACTABLE` defaults to false, so by default the value still
/// never leaves the token.
const SECRET_KEY: &[Rule] = &[
    r(CKA_PRIVATE, K::Bool, COPY_MAY_CHANGE, D::Bool(true)),
    r(
        CKA_SENSITIVE,
        K::Bool,
        MODIFIABLE | STICKY_TRUE,
        D::Bool(false),
    ),
    r(CKA_ENCRYPT, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_DECRYPT, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_SIGN, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_VERIFY, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_WRAP, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_UNWRAP, K::Bool, MODIFIABLE, D::Bool(true)),
    r(
        CKA_EXTRACTABLE,
        K::Bool,
        MODIFIABLE | STICKY_FALSE,
        D::Bool(false),
    ),
    r(CKA_ALWAYS_SENSITIVE, K::Bool, COMPUTED, D::None),
    r(CKA_NEVER_EXTRACTABLE, K::Bool, COMPUTED, D::None),
    r(CKA_CHECK_VALUE, K::Bytes, COMPUTED, D::None),
    r(
        CKA_WRAP_WITH_TRUSTED,
        K::Bool,
        MODIFIABLE | STICKY_TRUE,
        D::Bool(false),
    ),
    r(
        CKA_TRUSTED,
        K::Bool,
        MODIFIABLE | SO_SETS_TRUE,
        D::Bool(false),
    ),
    r(CKA_WRAP_TEMPLATE, K::Template, 0, D::None),
    r(CKA_UNWRAP_TEMPLATE, K::Template, 0, D::None),
];

/// Mechanisms spec §2.3.3/§2.3.4 (EC) and §2.3.5/§2.3.6 (Edwards) public keys.
const EC_PUBLIC: &[Rule] = &[
    r(
        CKA_EC_PARAMS,
        K::Bytes,
        REQUIRED_ON_CREATE | REQUIRED_ON_GENERATE,
        D::None,
    ),
    r(
        CKA_EC_POINT,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE,
        D::None,
    ),
];

/// EC and Edwards private keys. `CKA_EC_POINT` is not in the spec's table
/// for private keys; we keep it (computed) because consumers such as
/// OpenSSL's pkcs11 engine read the public point from the private key.
const EC_PRIVATE: &[Rule] = &[
    r(
        CKA_EC_PARAMS,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP,
        D::None,
    ),
    r(
        CKA_VALUE,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
    r(CKA_EC_POINT, K::Bytes, COMPUTED, D::None),
];

/// §2.1.2 RSA public keys.
const RSA_PUBLIC: &[Rule] = &[
    r(
        CKA_MODULUS,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE,
        D::None,
    ),
    r(
        CKA_MODULUS_BITS,
        K::Ulong,
        NOT_ON_CREATE | REQUIRED_ON_GENERATE,
        D::None,
    ),
    r(CKA_PUBLIC_EXPONENT, K::Bytes, REQUIRED_ON_CREATE, D::None),
];

/// §2.1.3 RSA private keys.
const RSA_PRIVATE: &[Rule] = &[
    r(
        CKA_MODULUS,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP,
        D::None,
    ),
    r(
        CKA_PUBLIC_EXPONENT,
        K::Bytes,
        NOT_ON_GENERATE | NOT_ON_UNWRAP,
        D::None,
    ),
    r(
        CKA_PRIVATE_EXPONENT,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
    r(
        CKA_PRIME_1,
        K::Bytes,
        NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
    r(
        CKA_PRIME_2,
        K::Bytes,
        NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
    r(
        CKA_EXPONENT_1,
        K::Bytes,
        NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
    r(
        CKA_EXPONENT_2,
        K::Bytes,
        NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
    r(
        CKA_COEFFICIENT,
        K::Bytes,
        NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
];

/// Finite-field public keys, DSA (mechanisms spec §2.2.2) and
/// Diffie-Hellman (§2.5.2): p, g and y (`CKA_VALUE`); DSA adds q
/// ([`DSA_SUBPRIME_PUBLIC`]).
const FFC_PUBLIC: &[Rule] = &[
    r(
        CKA_PRIME,
        K::Bytes,
        REQUIRED_ON_CREATE | REQUIRED_ON_GENERATE,
        D::None,
    ),
    r(
        CKA_BASE,
        K::Bytes,
        REQUIRED_ON_CREATE | REQUIRED_ON_GENERATE,
        D::None,
    ),
    r(
        CKA_VALUE,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE,
        D::None,
    ),
];

/// §2.2.2: q of a DSA public key.
const DSA_SUBPRIME_PUBLIC: &[Rule] = &[r(
    CKA_SUBPRIME,
    K::Bytes,
    REQUIRED_ON_CREATE | REQUIRED_ON_GENERATE,
    D::None,
)];

/// Finite-field private keys, DSA (§2.2.3) and Diffie-Hellman (§2.5.3): p,
/// g and x (`CKA_VALUE`, sensitive).
const FFC_PRIVATE: &[Rule] = &[
    r(
        CKA_PRIME,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP,
        D::None,
    ),
    r(
        CKA_BASE,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP,
        D::None,
    ),
    r(
        CKA_VALUE,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
];

/// §2.2.3: q of a DSA private key.
const DSA_SUBPRIME_PRIVATE: &[Rule] = &[r(
    CKA_SUBPRIME,
    K::Bytes,
    REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP,
    D::None,
)];

/// §2.5.3: `CKA_VALUE_BITS` of a Diffie-Hellman private key (the length
/// of x) may be asked for on generation and is computed otherwise
/// (footnotes 2 and 6).
const DH_VALUE_BITS: &[Rule] = &[r(
    CKA_VALUE_BITS,
    K::Ulong,
    NOT_ON_CREATE | NOT_ON_UNWRAP,
    D::None,
)];

/// PKCS#11 3.2 mechanisms spec, ML-DSA and ML-KEM public keys: the
/// parameter set and the encoded key (pkEncode, ek).
const ML_DSA_PUBLIC: &[Rule] = &[
    r(
        CKA_PARAMETER_SET,
        K::Ulong,
        REQUIRED_ON_CREATE | REQUIRED_ON_GENERATE,
        D::None,
    ),
    r(
        CKA_VALUE,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE,
        D::None,
    ),
];

/// ML-DSA and ML-KEM private keys: the seed (ξ, d‖z: `CKA_SEED`) and
/// the expanded key (skEncode, dk: `CKA_VALUE`), both sensitive. The parameter set may appear in a
/// generation's private template (it must then agree with the public one);
/// an unwrapped key takes it from the PKCS#8 OID.
const ML_DSA_PRIVATE: &[Rule] = &[
    r(CKA_PARAMETER_SET, K::Ulong, REQUIRED_ON_CREATE, D::None),
    r(
        CKA_SEED,
        K::Bytes,
        NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
    r(
        CKA_VALUE,
        K::Bytes,
        NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
];

/// PKCS#11 3.2 §4.8 `CKA_ENCAPSULATE` (true unless the template says
/// otherwise, as the token's other usage flags) and
/// `CKA_ENCAPSULATE_TEMPLATE`, on the public keys of a KEM (ML-KEM).
const ENCAPSULATION_PUBLIC: &[Rule] = &[
    r(CKA_ENCAPSULATE, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_ENCAPSULATE_TEMPLATE, K::Template, 0, D::None),
];

/// §4.9 `CKA_DECAPSULATE` and `CKA_DECAPSULATE_TEMPLATE` on a KEM's
/// private keys.
const DECAPSULATION_PRIVATE: &[Rule] = &[
    r(CKA_DECAPSULATE, K::Bool, MODIFIABLE, D::Bool(true)),
    r(CKA_DECAPSULATE_TEMPLATE, K::Template, 0, D::None),
];

/// PKCS#11 3.2 mechanisms spec, SLH-DSA public keys: the parameter set
/// and PK.seed ‖ PK.root, with the rules of ML-DSA's.
const SLH_DSA_PUBLIC: &[Rule] = ML_DSA_PUBLIC;

/// SLH-DSA private keys: SK.seed ‖ SK.prf ‖ PK.seed ‖ PK.root
/// (`CKA_VALUE`), sensitive. The parameter set as for ML-DSA.
const SLH_DSA_PRIVATE: &[Rule] = &[
    r(CKA_PARAMETER_SET, K::Ulong, REQUIRED_ON_CREATE, D::None),
    r(
        CKA_VALUE,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
];

/// §4.13 Domain parameter objects, common part.
const DOMAIN_PARAMETERS: &[Rule] = &[
    r(CKA_KEY_TYPE, K::Ulong, REQUIRED_ON_CREATE, D::None),
    r(CKA_LOCAL, K::Bool, COMPUTED, D::None),
];

/// Finite-field domain parameters, DSA (mechanisms spec §2.2.4) and
/// Diffie-Hellman (§2.5.4): p and g; `CKA_PRIME_BITS` is computed on
/// creation and asked for by the parameter generations.
const FFC_DOMAIN: &[Rule] = &[
    r(
        CKA_PRIME,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE,
        D::None,
    ),
    r(
        CKA_BASE,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE,
        D::None,
    ),
    r(
        CKA_PRIME_BITS,
        K::Ulong,
        NOT_ON_CREATE | REQUIRED_ON_GENERATE,
        D::None,
    ),
];

/// §2.2.4: q of DSA domain parameters, and `CKA_SUBPRIME_BITS` (the
/// optional N of a 2048-bit generation, §2.2.10).
const DSA_SUBPRIME_DOMAIN: &[Rule] = &[
    r(
        CKA_SUBPRIME,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE,
        D::None,
    ),
    r(CKA_SUBPRIME_BITS, K::Ulong, NOT_ON_CREATE, D::None),
];

/// §2.7.2 generic secret, §2.8.2 AES and the HMAC key types: the key value
/// and its length.
const SECRET_VALUE: &[Rule] = &[
    r(
        CKA_VALUE,
        K::Bytes,
        REQUIRED_ON_CREATE | NOT_ON_GENERATE | NOT_ON_UNWRAP | SENSITIVE,
        D::None,
    ),
    r(
        CKA_VALUE_LEN,
        K::Ulong,
        NOT_ON_CREATE | NOT_ON_UNWRAP,
        D::None,
    ),
];

/// Base spec 3.0 §4.12 "OTP key objects" for HOTP keys, over the
/// secret-key tables. None is modifiable (no footnote 8), `CKA_OTP_COUNTER`
/// included: only the token moves the counter (`C_Sign` / `C_Verify`), so
/// no caller rewinds it to replay past OTPs. Defaults: six decimal digits,
/// every parameter requirement ignored, counter 0 (`otp::complete_import`).
/// An OTP key computes OTPs only: the other usage flags default to false
/// and are not modifiable, and it is not copyable (a copy would repeat its
/// OTPs); the import checks refuse them true.
const OTP_KEY: &[Rule] = &[
    r(CKA_OTP_FORMAT, K::Ulong, 0, D::Ulong(CK_OTP_FORMAT_DECIMAL)),
    r(CKA_OTP_LENGTH, K::Ulong, 0, D::Ulong(6)),
    r(CKA_OTP_USER_FRIENDLY_MODE, K::Bool, 0, NO),
    r(CKA_OTP_CHALLENGE_REQUIREMENT, K::Ulong, 0, IGNORED),
    r(CKA_OTP_TIME_REQUIREMENT, K::Ulong, 0, IGNORED),
    r(CKA_OTP_COUNTER_REQUIREMENT, K::Ulong, 0, IGNORED),
    r(CKA_OTP_PIN_REQUIREMENT, K::Ulong, 0, IGNORED),
    r(CKA_OTP_COUNTER, K::Bytes, 0, D::None),
    r(CKA_OTP_TIME, K::Bytes, 0, D::Empty),
    r(CKA_OTP_USER_IDENTIFIER, K::Bytes, 0, D::Empty),
    r(CKA_OTP_SERVICE_IDENTIFIER, K::Bytes, 0, D::Empty),
    r(CKA_OTP_SERVICE_LOGO, K::Bytes, 0, D::Empty),
    r(CKA_OTP_SERVICE_LOGO_TYPE, K::Bytes, 0, D::Empty),
    r(CKA_ENCRYPT, K::Bool, 0, NO),
    r(CKA_DECRYPT, K::Bool, 0, NO),
    r(CKA_WRAP, K::Bool, 0, NO),
    r(CKA_UNWRAP, K::Bool, 0, NO),
    r(CKA_DERIVE, K::Bool, 0, NO),
    r(CKA_COPYABLE, K::Bool, COPY_MAY_CHANGE | STICKY_FALSE, NO),
];
const NO: Fallback = D::Bool(false);
const IGNORED: Fallback = D::Ulong(CK_OTP_PARAM_IGNORED);

/// The rule tables that apply to an object of `class` and `key_type`, or
/// `None` if the combination is not supported (`CKR_TEMPLATE_INCONSISTENT`
/// or `CKR_ATTRIBUTE_VALUE_INVALID` for the caller).
pub fn tables(
    class: CK_OBJECT_CLASS,
    key_type: Option<CK_KEY_TYPE>,
    cert_type: Option<CK_CERTIFICATE_TYPE>,
) -> Option<&'static [&'static [Rule]]> {
    Some(match (class, key_type) {
        (CKO_DATA, _) => &[STORAGE, DATA],
        (CKO_CERTIFICATE, _) => match cert_type {
            Some(CKC_X_509) | None => &[STORAGE, CERTIFICATE, X509],
            _ => return None,
        },
        (CKO_PUBLIC_KEY, Some(CKK_EC | CKK_EC_EDWARDS | CKK_EC_MONTGOMERY)) => {
            &[STORAGE, KEY, PUBLIC_KEY, EC_PUBLIC]
        }
        (CKO_PRIVATE_KEY, Some(CKK_EC | CKK_EC_EDWARDS | CKK_EC_MONTGOMERY)) => {
            &[STORAGE, KEY, PRIVATE_KEY, EC_PRIVATE]
        }
        (CKO_PUBLIC_KEY, Some(CKK_RSA)) => &[STORAGE, KEY, PUBLIC_KEY, RSA_PUBLIC],
        (CKO_PRIVATE_KEY, Some(CKK_RSA)) => &[STORAGE, KEY, PRIVATE_KEY, RSA_PRIVATE],
        (CKO_PUBLIC_KEY, Some(CKK_DSA)) => {
            &[STORAGE, KEY, PUBLIC_KEY, FFC_PUBLIC, DSA_SUBPRIME_PUBLIC]
        }
        (CKO_PUBLIC_KEY, Some(CKK_ML_DSA)) => &[STORAGE, KEY, PUBLIC_KEY, ML_DSA_PUBLIC],
        (CKO_PRIVATE_KEY, Some(CKK_ML_DSA)) => &[STORAGE, KEY, PRIVATE_KEY, ML_DSA_PRIVATE],
        (CKO_PUBLIC_KEY, Some(CKK_ML_KEM)) => &[
            STORAGE,
            KEY,
            PUBLIC_KEY,
            ML_DSA_PUBLIC,
            ENCAPSULATION_PUBLIC,
        ],
        (CKO_PRIVATE_KEY, Some(CKK_ML_KEM)) => &[
            STORAGE,
            KEY,
            PRIVATE_KEY,
            ML_DSA_PRIVATE,
            DECAPSULATION_PRIVATE,
        ],
        (CKO_PUBLIC_KEY, Some(CKK_SLH_DSA)) => &[STORAGE, KEY, PUBLIC_KEY, SLH_DSA_PUBLIC],
        (CKO_PRIVATE_KEY, Some(CKK_SLH_DSA)) => &[STORAGE, KEY, PRIVATE_KEY, SLH_DSA_PRIVATE],
        (CKO_PRIVATE_KEY, Some(CKK_DSA)) => {
            &[STORAGE, KEY, PRIVATE_KEY, FFC_PRIVATE, DSA_SUBPRIME_PRIVATE]
        }
        (CKO_DOMAIN_PARAMETERS, Some(CKK_DSA)) => {
            &[STORAGE, DOMAIN_PARAMETERS, FFC_DOMAIN, DSA_SUBPRIME_DOMAIN]
        }
        (CKO_PUBLIC_KEY, Some(CKK_DH)) => &[STORAGE, KEY, PUBLIC_KEY, FFC_PUBLIC],
        (CKO_PRIVATE_KEY, Some(CKK_DH)) => &[STORAGE, KEY, PRIVATE_KEY, FFC_PRIVATE, DH_VALUE_BITS],
        (CKO_DOMAIN_PARAMETERS, Some(CKK_DH)) => &[STORAGE, DOMAIN_PARAMETERS, FFC_DOMAIN],
        (
            CKO_SECRET_KEY,
            Some(
                CKK_GENERIC_SECRET | CKK_AES | CKK_CHACHA20 | CKK_DES | CKK_DES2 | CKK_DES3
                | CKK_SHA_1_HMAC | CKK_SHA224_HMAC | CKK_SHA256_HMAC | CKK_SHA384_HMAC
                | CKK_SHA512_HMAC | CKK_HKDF | CKK_SHA512_224_HMAC | CKK_SHA512_256_HMAC
                | CKK_SHA3_224_HMAC | CKK_SHA3_256_HMAC | CKK_SHA3_384_HMAC | CKK_SHA3_512_HMAC,
            ),
        ) => &[STORAGE, KEY, SECRET_KEY, SECRET_VALUE],
        (CKO_OTP_KEY, Some(CKK_HOTP)) => &[STORAGE, KEY, SECRET_KEY, SECRET_VALUE, OTP_KEY],
        _ => return None,
    })
}

/// Finds the rule for `ty` in `tables`; later tables override earlier ones
/// (a key type's rule for `CKA_VALUE` wins over a generic one).
pub fn find(tables: &[&'static [Rule]], ty: CK_ATTRIBUTE_TYPE) -> Option<&'static Rule> {
    tables
        .iter()
        .rev()
        .find_map(|t| t.iter().find(|r| r.ty == ty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_combination_has_class_and_storage_rules() {
        for (class, kt) in [
            (CKO_DATA, None),
            (CKO_CERTIFICATE, None),
            (CKO_PUBLIC_KEY, Some(CKK_EC_EDWARDS)),
            (CKO_PRIVATE_KEY, Some(CKK_EC_EDWARDS)),
            (CKO_PUBLIC_KEY, Some(CKK_EC_MONTGOMERY)),
            (CKO_PRIVATE_KEY, Some(CKK_EC_MONTGOMERY)),
            (CKO_PRIVATE_KEY, Some(CKK_RSA)),
            (CKO_PUBLIC_KEY, Some(CKK_DSA)),
            (CKO_PRIVATE_KEY, Some(CKK_DSA)),
            (CKO_DOMAIN_PARAMETERS, Some(CKK_DSA)),
            (CKO_PUBLIC_KEY, Some(CKK_DH)),
            (CKO_PRIVATE_KEY, Some(CKK_DH)),
            (CKO_DOMAIN_PARAMETERS, Some(CKK_DH)),
            (CKO_PUBLIC_KEY, Some(CKK_ML_DSA)),
            (CKO_PRIVATE_KEY, Some(CKK_ML_DSA)),
            (CKO_PUBLIC_KEY, Some(CKK_ML_KEM)),
            (CKO_PRIVATE_KEY, Some(CKK_ML_KEM)),
            (CKO_PUBLIC_KEY, Some(CKK_SLH_DSA)),
            (CKO_PRIVATE_KEY, Some(CKK_SLH_DSA)),
            (CKO_SECRET_KEY, Some(CKK_AES)),
            (CKO_SECRET_KEY, Some(CKK_CHACHA20)),
            (CKO_SECRET_KEY, Some(CKK_DES3)),
            (CKO_OTP_KEY, Some(CKK_HOTP)),
        ] {
            let t = tables(class, kt, None).unwrap();
            assert!(find(t, CKA_CLASS).is_some());
            assert!(find(t, CKA_TOKEN).is_some());
            assert!(find(t, CKA_UNIQUE_ID).unwrap().flags & COMPUTED == COMPUTED);
        }
        assert!(tables(CKO_SECRET_KEY, Some(CKK_CAST5), None).is_none());
        assert!(tables(CKO_CERTIFICATE, None, Some(CKC_WTLS)).is_none());
    }

    #[test]
    fn key_value_rules_override_generic_ones() {
        for kt in [
            CKK_EC_EDWARDS,
            CKK_EC_MONTGOMERY,
            CKK_ML_DSA,
            CKK_ML_KEM,
            CKK_SLH_DSA,
        ] {
            let t = tables(CKO_PRIVATE_KEY, Some(kt), None).unwrap();
            let v = find(t, CKA_VALUE).unwrap();
            assert!(v.flags & SENSITIVE != 0, "{kt:#x}");
        }
        // ML-DSA: the seed is as secret as the expanded key; the public
        // key's value is not secret.
        let t = tables(CKO_PRIVATE_KEY, Some(CKK_ML_DSA), None).unwrap();
        assert!(find(t, CKA_SEED).unwrap().flags & SENSITIVE != 0);
        let t = tables(CKO_PUBLIC_KEY, Some(CKK_ML_DSA), None).unwrap();
        assert!(find(t, CKA_VALUE).unwrap().flags & SENSITIVE == 0);
        assert!(find(t, CKA_PARAMETER_SET).unwrap().flags & REQUIRED_ON_GENERATE != 0);
        let t = tables(CKO_PRIVATE_KEY, Some(CKK_ML_KEM), None).unwrap();
        assert!(find(t, CKA_SEED).unwrap().flags & SENSITIVE != 0);
        assert!(find(t, CKA_DECAPSULATE).is_some());
        assert!(find(t, CKA_ENCAPSULATE).is_none());
        let t = tables(CKO_PUBLIC_KEY, Some(CKK_ML_KEM), None).unwrap();
        assert!(find(t, CKA_ENCAPSULATE).is_some());
        assert!(find(t, CKA_SIGN).is_none());
        // SLH-DSA: the same, with the whole private key in CKA_VALUE.
        let t = tables(CKO_PUBLIC_KEY, Some(CKK_SLH_DSA), None).unwrap();
        assert!(find(t, CKA_VALUE).unwrap().flags & SENSITIVE == 0);
        assert!(find(t, CKA_PARAMETER_SET).unwrap().flags & REQUIRED_ON_GENERATE != 0);
        let t = tables(CKO_PRIVATE_KEY, Some(CKK_SLH_DSA), None).unwrap();
        assert!(find(t, CKA_VALUE).unwrap().flags & REQUIRED_ON_CREATE != 0);
        assert!(find(t, CKA_SEED).is_none());
        let t = tables(CKO_PRIVATE_KEY, Some(CKK_EC_EDWARDS), None).unwrap();
        assert!(find(t, CKA_MODULUS).is_none());
        let d = tables(CKO_DATA, None, None).unwrap();
        assert!(find(d, CKA_VALUE).unwrap().flags & SENSITIVE == 0);
    }

    #[test]
    fn no_table_lists_an_attribute_twice() {
        for t in [
            STORAGE,
            DATA,
            CERTIFICATE,
            X509,
            KEY,
            PUBLIC_KEY,
            PRIVATE_KEY,
            SECRET_KEY,
            EC_PUBLIC,
            EC_PRIVATE,
            RSA_PUBLIC,
            RSA_PRIVATE,
            ML_DSA_PUBLIC,
            ML_DSA_PRIVATE,
            ENCAPSULATION_PUBLIC,
            DECAPSULATION_PRIVATE,
            SLH_DSA_PRIVATE,
            SECRET_VALUE,
            OTP_KEY,
        ] {
            for (i, a) in t.iter().enumerate() {
                assert!(
                    t[i + 1..].iter().all(|b| b.ty != a.ty),
                    "duplicate {:#x}",
                    a.ty
                );
            }
        }
    }
}
