//! Mechanisms: a registry of what the token supports (`C_GetMechanismList`,
//! `C_GetMechanismInfo`) and the operations behind it.
//!
//! Each family lives in its own file and is the only place that calls its
//! crypto crate. Operations are small traits (`SignOperation`,
//! `VerifyOperation`, `DigestOperation`); a session holds them as enums that
//! dispatch statically, so starting an operation allocates nothing.

pub mod aes;
#[cfg(feature = "aws-lc")]
pub mod awslc;
pub mod block_modes;
pub mod cmac;
pub mod des;
pub mod digest;
pub mod dsa;
pub mod ec;
pub mod eddsa;
pub mod hmac;
pub mod kdf;
pub mod keys;
pub mod random;
pub mod rfc8410;
pub mod rsa;
pub mod x25519;

use crate::attributes::Attributes;
use crate::error::{Result, err};
use cryptoki_sys::*;
use keys::KeyMaterial;
use std::sync::Arc;
use zeroize::Zeroizing;

/// How a mechanism's parameter is laid out in memory (so the FFI layer
/// knows how to read `CK_MECHANISM.pParameter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// No parameter allowed.
    None,
    /// Optional `CK_EDDSA_PARAMS`.
    EdDsa,
    /// A byte string (an IV), required.
    Bytes,
    /// A byte string, optional (the IV of the AES key-wrap mechanisms).
    OptionalBytes,
    /// `CK_GCM_PARAMS`.
    Gcm,
    /// `CK_AES_CTR_PARAMS`.
    Ctr,
    /// `CK_RSA_PKCS_OAEP_PARAMS`.
    Oaep,
    /// `CK_RSA_PKCS_PSS_PARAMS`.
    Pss,
    /// `CK_ECDH1_DERIVE_PARAMS`.
    Ecdh1,
    /// `CK_MAC_GENERAL_PARAMS` (a `CK_ULONG` output length).
    MacLength,
    /// `CK_HKDF_PARAMS`.
    Hkdf,
    /// A `CK_OBJECT_HANDLE` (`CKM_CONCATENATE_BASE_AND_KEY`).
    Handle,
    /// `CK_KEY_DERIVATION_STRING_DATA`, read as [`Param::Bytes`].
    DerivationString,
    /// `CK_EXTRACT_PARAMS` (a bit index).
    BitIndex,
    /// `CK_AES_CBC_ENCRYPT_DATA_PARAMS`.
    AesCbcData,
    /// `CK_SP800_108_KDF_PARAMS` (counter, double pipeline) or
    /// `CK_SP800_108_FEEDBACK_KDF_PARAMS` (feedback), mechanisms spec 3.0
    /// §2.42; read only by `C_DeriveKey`, into owned values.
    Sp800108,
}

/// A mechanism parameter, read from the caller's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    /// No parameter.
    None,
    /// `CK_EDDSA_PARAMS`.
    EdDsa {
        /// `phFlag`: pre-hashed (Ed25519ph).
        prehash: bool,
        /// `pContextData`; `None` when `ulContextDataLen` is 0.
        context: Option<&'a [u8]>,
    },
    /// A byte-string parameter (an IV).
    Bytes(&'a [u8]),
    /// `CK_GCM_PARAMS`.
    Gcm {
        /// `pIv`.
        iv: &'a [u8],
        /// `pAAD`.
        aad: &'a [u8],
        /// `ulTagBits`.
        tag_bits: CK_ULONG,
    },
    /// `CK_AES_CTR_PARAMS`.
    Ctr {
        /// `ulCounterBits`: how many low bits of the block are the counter.
        counter_bits: CK_ULONG,
        /// `cb`: the initial counter block.
        block: [u8; 16],
    },
    /// `CK_RSA_PKCS_OAEP_PARAMS` (source `CKZ_DATA_SPECIFIED`).
    Oaep {
        /// `hashAlg`.
        hash: CK_MECHANISM_TYPE,
        /// `mgf` (`CKG_MGF1_*`).
        mgf: CK_RSA_PKCS_MGF_TYPE,
        /// The label (`pSourceData`), possibly empty.
        label: &'a [u8],
    },
    /// `CK_RSA_PKCS_PSS_PARAMS`.
    Pss {
        /// `hashAlg`.
        hash: CK_MECHANISM_TYPE,
        /// `mgf`.
        mgf: CK_RSA_PKCS_MGF_TYPE,
        /// `sLen`.
        salt_len: CK_ULONG,
    },
    /// `CK_ECDH1_DERIVE_PARAMS`.
    Ecdh1 {
        /// `kdf` (`CKD_*`).
        kdf: CK_EC_KDF_TYPE,
        /// `pSharedData`.
        shared: &'a [u8],
        /// `pPublicData`: the other party's point, raw or DER.
        public: &'a [u8],
    },
    /// `CK_MAC_GENERAL_PARAMS`: output length in bytes.
    MacLength(CK_ULONG),
    /// `CK_HKDF_PARAMS`.
    Hkdf(kdf::hkdf::Params<'a>),
    /// A key handle (`CKM_CONCATENATE_BASE_AND_KEY`).
    Handle(CK_OBJECT_HANDLE),
    /// `CK_EXTRACT_PARAMS`: the first bit to extract.
    BitIndex(CK_ULONG),
    /// `CK_AES_CBC_ENCRYPT_DATA_PARAMS`.
    AesCbcData {
        /// `iv`.
        iv: [u8; 16],
        /// `pData`.
        data: &'a [u8],
    },
    /// The SP 800-108 parameters (§2.42), owned by the FFI layer.
    Sp800108(&'a kdf::sp800_108::Params),
}

/// A `CK_MECHANISM` in safe form.
#[derive(Clone, Copy, Debug)]
pub struct Mechanism<'a> {
    /// `mechanism`.
    pub ty: CK_MECHANISM_TYPE,
    /// The decoded parameter.
    pub param: Param<'a>,
}

impl Mechanism<'_> {
    /// A mechanism without parameter.
    pub fn plain(ty: CK_MECHANISM_TYPE) -> Mechanism<'static> {
        Mechanism {
            ty,
            param: Param::None,
        }
    }
}

/// One registry entry.
#[derive(Clone, Copy, Debug)]
pub struct Descriptor {
    /// Mechanism type.
    pub ty: CK_MECHANISM_TYPE,
    /// `CK_MECHANISM_INFO.ulMinKeySize`.
    pub min_key: CK_ULONG,
    /// `CK_MECHANISM_INFO.ulMaxKeySize`.
    pub max_key: CK_ULONG,
    /// `CK_MECHANISM_INFO.flags`.
    pub flags: CK_FLAGS,
    /// Parameter layout.
    pub param: ParamKind,
}

const fn d(
    ty: CK_MECHANISM_TYPE,
    min_key: CK_ULONG,
    max_key: CK_ULONG,
    flags: CK_FLAGS,
    param: ParamKind,
) -> Descriptor {
    Descriptor {
        ty,
        min_key,
        max_key,
        flags,
        param,
    }
}

const EC_FLAGS: CK_FLAGS = CKF_EC_F_P | CKF_EC_OID | CKF_EC_UNCOMPRESS;
const SV: CK_FLAGS = CKF_SIGN | CKF_VERIFY;
const SVR: CK_FLAGS = CKF_SIGN_RECOVER | CKF_VERIFY_RECOVER;
const ED: CK_FLAGS = CKF_ENCRYPT | CKF_DECRYPT;
/// Message-based signing and verification (base spec 3.0 §5.21–5.22).
const MSV: CK_FLAGS = CKF_MESSAGE_SIGN | CKF_MESSAGE_VERIFY;
const WU: CK_FLAGS = CKF_WRAP | CKF_UNWRAP;
use ParamKind as P;

/// Every mechanism the token supports, in `C_GetMechanismList` order. Key
/// sizes are in bits for EC, Edwards, RSA and DSA keys and in bytes for AES,
/// DES and generic secret (HMAC) keys, as the mechanisms specification
/// defines them.
pub static REGISTRY: &[Descriptor] = &[
    d(
        CKM_EC_EDWARDS_KEY_PAIR_GEN,
        255,
        255,
        CKF_GENERATE_KEY_PAIR | EC_FLAGS,
        P::None,
    ),
    d(CKM_EDDSA, 255, 255, SV | MSV | EC_FLAGS, P::EdDsa),
    // X25519 (RFC 7748): 255-bit Montgomery keys.
    d(
        CKM_EC_MONTGOMERY_KEY_PAIR_GEN,
        255,
        255,
        CKF_GENERATE_KEY_PAIR | EC_FLAGS,
        P::None,
    ),
    d(
        CKM_EC_KEY_PAIR_GEN,
        192,
        521,
        CKF_GENERATE_KEY_PAIR | EC_FLAGS,
        P::None,
    ),
    d(CKM_ECDSA, 192, 521, SV | EC_FLAGS, P::None),
    d(CKM_ECDSA_SHA1, 192, 521, SV | EC_FLAGS, P::None),
    d(CKM_ECDSA_SHA224, 192, 521, SV | EC_FLAGS, P::None),
    d(CKM_ECDSA_SHA256, 192, 521, SV | EC_FLAGS, P::None),
    d(CKM_ECDSA_SHA384, 192, 521, SV | EC_FLAGS, P::None),
    d(CKM_ECDSA_SHA512, 192, 521, SV | EC_FLAGS, P::None),
    // 192–521: the Weierstrass curves; X25519 (Montgomery keys) is 255.
    d(CKM_ECDH1_DERIVE, 192, 521, CKF_DERIVE | EC_FLAGS, P::Ecdh1),
    // DSA (mechanisms spec §2.2): p of 1024 (legacy), 2048 or 3072 bits.
    d(CKM_DSA_PARAMETER_GEN, 1024, 3072, CKF_GENERATE, P::None),
    d(
        CKM_DSA_KEY_PAIR_GEN,
        1024,
        3072,
        CKF_GENERATE_KEY_PAIR,
        P::None,
    ),
    d(CKM_DSA, 1024, 3072, SV, P::None),
    d(CKM_DSA_SHA1, 1024, 3072, SV, P::None),
    d(CKM_DSA_SHA224, 1024, 3072, SV, P::None),
    d(CKM_DSA_SHA256, 1024, 3072, SV, P::None),
    d(CKM_DSA_SHA384, 1024, 3072, SV, P::None),
    d(CKM_DSA_SHA512, 1024, 3072, SV, P::None),
    d(
        CKM_RSA_PKCS_KEY_PAIR_GEN,
        1024,
        16384,
        CKF_GENERATE_KEY_PAIR,
        P::None,
    ),
    d(CKM_RSA_PKCS, 1024, 16384, SV | SVR | ED | WU, P::None),
    d(CKM_RSA_X_509, 1024, 16384, SV | SVR | ED, P::None),
    // Legacy: MD5 is broken (collisions); for SoftHSM2 migration.
    d(CKM_MD5_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_SHA1_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_SHA224_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_SHA256_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_SHA384_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_SHA512_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA1_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA224_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA256_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA384_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA512_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_RSA_PKCS_OAEP, 1024, 16384, ED | WU, P::Oaep),
    d(CKM_AES_KEY_GEN, 16, 32, CKF_GENERATE, P::None),
    d(CKM_AES_ECB, 16, 32, ED | WU, P::None),
    d(CKM_AES_CBC, 16, 32, ED | WU, P::Bytes),
    d(CKM_AES_CBC_PAD, 16, 32, ED | WU, P::Bytes),
    d(CKM_AES_CTR, 16, 32, ED, P::Ctr),
    d(
        CKM_AES_GCM,
        16,
        32,
        ED | CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT,
        P::Gcm,
    ),
    d(CKM_AES_KEY_WRAP, 16, 32, ED | WU, P::OptionalBytes),
    d(CKM_AES_KEY_WRAP_PAD, 16, 32, ED | WU, P::OptionalBytes),
    d(CKM_AES_CMAC, 16, 32, SV, P::None),
    d(CKM_AES_CMAC_GENERAL, 16, 32, SV, P::MacLength),
    // Legacy (SoftHSM2 migration; docs/mechanisms.md): Triple DES, key
    // sizes in bytes (16: two-key, 24: three-key).
    d(CKM_DES2_KEY_GEN, 16, 16, CKF_GENERATE, P::None),
    d(CKM_DES3_KEY_GEN, 24, 24, CKF_GENERATE, P::None),
    d(CKM_DES3_ECB, 16, 24, ED | WU, P::None),
    d(CKM_DES3_CBC, 16, 24, ED | WU, P::Bytes),
    d(CKM_DES3_CBC_PAD, 16, 24, ED | WU, P::Bytes),
    d(CKM_DES3_MAC, 16, 24, SV, P::None),
    d(CKM_DES3_MAC_GENERAL, 16, 24, SV, P::MacLength),
    d(CKM_DES3_CMAC, 16, 24, SV, P::None),
    d(CKM_DES3_CMAC_GENERAL, 16, 24, SV, P::MacLength),
    // Broken (a 56-bit key): single DES, for SoftHSM2 migration only.
    d(CKM_DES_KEY_GEN, 8, 8, CKF_GENERATE, P::None),
    d(CKM_DES_ECB, 8, 8, ED | WU, P::None),
    d(CKM_DES_CBC, 8, 8, ED | WU, P::Bytes),
    d(CKM_DES_CBC_PAD, 8, 8, ED | WU, P::Bytes),
    d(CKM_GENERIC_SECRET_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA_1_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA224_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA256_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA384_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA512_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    // Legacy (SoftHSM2 migration; docs/mechanisms.md): generic secrets only.
    d(CKM_MD5_HMAC, 1, 512, SV, P::None),
    d(CKM_MD5_HMAC_GENERAL, 1, 512, SV, P::MacLength),
    d(CKM_SHA_1_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA_1_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_SHA224_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA224_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_SHA256_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA256_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_SHA384_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA384_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_SHA512_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA512_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_HKDF_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_CONCATENATE_BASE_AND_KEY, 1, 512, CKF_DERIVE, P::Handle),
    d(
        CKM_CONCATENATE_BASE_AND_DATA,
        1,
        512,
        CKF_DERIVE,
        P::DerivationString,
    ),
    d(
        CKM_CONCATENATE_DATA_AND_BASE,
        1,
        512,
        CKF_DERIVE,
        P::DerivationString,
    ),
    d(
        CKM_XOR_BASE_AND_DATA,
        1,
        512,
        CKF_DERIVE,
        P::DerivationString,
    ),
    d(CKM_EXTRACT_KEY_FROM_KEY, 1, 512, CKF_DERIVE, P::BitIndex),
    d(
        CKM_AES_ECB_ENCRYPT_DATA,
        16,
        32,
        CKF_DERIVE,
        P::DerivationString,
    ),
    d(CKM_AES_CBC_ENCRYPT_DATA, 16, 32, CKF_DERIVE, P::AesCbcData),
    d(CKM_HKDF_DERIVE, 1, 512, CKF_DERIVE, P::Hkdf),
    d(CKM_HKDF_DATA, 1, 512, CKF_DERIVE, P::Hkdf),
    // Mechanisms spec 3.0 §2.42 (SP 800-108): base key sizes in bits, over
    // every PRF (HMAC keys of 1 to 512 bytes, AES keys of 16 to 32).
    d(CKM_SP800_108_COUNTER_KDF, 8, 4096, CKF_DERIVE, P::Sp800108),
    d(CKM_SP800_108_FEEDBACK_KDF, 8, 4096, CKF_DERIVE, P::Sp800108),
    d(
        CKM_SP800_108_DOUBLE_PIPELINE_KDF,
        8,
        4096,
        CKF_DERIVE,
        P::Sp800108,
    ),
    // Legacy: MD5 is broken (collisions), kept for SoftHSM2 migration.
    d(CKM_MD5, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA_1, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA224, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA256, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA384, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA512, 0, 0, CKF_DIGEST, P::None),
];

/// Slots of the registry's hash index: a power of two at least four times the
/// registry's length, so a lookup probes one or two slots.
const INDEX_SLOTS: usize = 1024;
/// An empty slot of the index.
const INDEX_EMPTY: u8 = u8::MAX;

/// Home slot of `ty`: Fibonacci hashing (the top bits of a multiplication by
/// 2^64/φ), which spreads the clustered `CKM_*` values over the index.
#[allow(clippy::unnecessary_cast)] // CK_ULONG is 32 bits wide on some platforms
fn home_slot(ty: CK_MECHANISM_TYPE) -> usize {
    ((ty as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - INDEX_SLOTS.trailing_zeros()))
        as usize
}

/// Open-addressing index from mechanism type to registry position, built once.
fn registry_index() -> &'static [u8; INDEX_SLOTS] {
    static INDEX: std::sync::OnceLock<[u8; INDEX_SLOTS]> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        // A quarter full at most (so positions also fit below INDEX_EMPTY).
        assert!(REGISTRY.len() * 4 <= INDEX_SLOTS, "grow INDEX_SLOTS");
        let mut index = [INDEX_EMPTY; INDEX_SLOTS];
        for (i, d) in REGISTRY.iter().enumerate() {
            let mut slot = home_slot(d.ty);
            while index[slot] != INDEX_EMPTY {
                slot = (slot + 1) % INDEX_SLOTS;
            }
            index[slot] = i as u8;
        }
        index
    })
}

/// The registry entry of `ty`.
///
/// Every `C_*Init` looks its mechanism up, so this is one multiplication and
/// (almost always) one probe of a hash index rather than a search: the index
/// is never more than a quarter full, and a probe ends at the first empty slot.
pub fn lookup(ty: CK_MECHANISM_TYPE) -> Result<&'static Descriptor> {
    let index = registry_index();
    let mut slot = home_slot(ty);
    loop {
        match index[slot] {
            INDEX_EMPTY => return Err(err(CKR_MECHANISM_INVALID)),
            i if REGISTRY[i as usize].ty == ty => return Ok(&REGISTRY[i as usize]),
            _ => slot = (slot + 1) % INDEX_SLOTS,
        }
    }
}

/// Checks that `mech` exists and supports `function` (a `CKF_*` flag).
pub fn require(mech: &Mechanism<'_>, function: CK_FLAGS) -> Result<&'static Descriptor> {
    let d = lookup(mech.ty)?;
    if d.flags & function == 0 {
        return Err(err(CKR_MECHANISM_INVALID));
    }
    Ok(d)
}

/// The length of an output: exact, or only bounded until computed (RSA
/// decryption, padded CBC decryption).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputLen {
    /// Exactly this many bytes.
    Exact(usize),
    /// At most this many bytes.
    AtMost(usize),
}

impl OutputLen {
    /// The bound, exact or not.
    pub fn bound(self) -> usize {
        match self {
            OutputLen::Exact(n) | OutputLen::AtMost(n) => n,
        }
    }
}

/// An encryption or decryption in progress (one trait for both directions).
pub trait CipherOperation {
    /// Output length of a single-part call on `input_len` bytes.
    fn output_len(&self, input_len: usize) -> OutputLen;
    /// Single-part: processes `data` into `out` (`out.len() >= output_len().bound()`).
    fn process(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize>;
    /// Output length of an update on `input_len` more bytes.
    fn update_len(&self, input_len: usize) -> OutputLen;
    /// Multi-part: processes more data (`out.len() >= update_len().bound()`).
    fn update(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize>;
    /// Output length of the final call.
    fn final_len(&self) -> OutputLen;
    /// Multi-part: finishes (`out.len() >= final_len().bound()`).
    fn finish(&mut self, out: &mut [u8]) -> Result<usize>;
}

/// A signature (or MAC) being computed.
pub trait SignOperation {
    /// Length of the output (exact for every supported mechanism so far).
    fn output_len(&self) -> usize;
    /// Single-part: signs `data` into `out` (`out.len() >= output_len()`).
    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize>;
    /// Multi-part: adds data.
    fn update(&mut self, data: &[u8]) -> Result<()>;
    /// Multi-part: writes the signature (`out.len() >= output_len()`).
    fn finish(&mut self, out: &mut [u8]) -> Result<usize>;
}

/// A signature (or MAC) being checked.
pub trait VerifyOperation {
    /// Single-part verification.
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()>;
    /// Multi-part: adds data.
    fn update(&mut self, data: &[u8]) -> Result<()>;
    /// Multi-part: checks the signature.
    fn finish(&mut self, signature: &[u8]) -> Result<()>;
}

/// A message digest being computed.
pub trait DigestOperation {
    /// Digest length.
    fn output_len(&self) -> usize;
    /// Adds data.
    fn update(&mut self, data: &[u8]);
    /// Writes the digest into `out` (`out.len() >= output_len()`) and resets.
    fn finish(&mut self, out: &mut [u8]) -> usize;
}

macro_rules! dispatch_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident($ty:ty)),* $(,)? }) => {
        $(#[$doc])*
        pub enum $name {
            $(
                #[allow(missing_docs)]
                $variant($ty),
            )*
        }
        macro_rules! $name {
            ($self:ident, $op:ident => $e:expr) => {
                match $self { $($name::$variant($op) => $e,)* }
            };
        }
    };
}

dispatch_enum!(
    /// Static dispatch over the families that sign or MAC.
    SignOp {
        EdDsa(eddsa::EdDsaSign),
        Ecdsa(ec::EcdsaSign),
        Dsa(dsa::DsaSign),
        Rsa(rsa::RsaSign),
        Hmac(hmac::HmacSign),
        Cmac(cmac::CmacSign),
        DesMac(des::mac::DesMac),
    }
);

impl SignOp {
    /// A copy of this MAC computation in its current state, for
    /// `C_GetOperationState`; `None` for signatures (their state is not
    /// saved: `CKR_STATE_UNSAVEABLE`).
    pub fn try_clone(&self) -> Option<SignOp> {
        match self {
            SignOp::Hmac(h) => Some(SignOp::Hmac(h.clone())),
            SignOp::Cmac(c) => Some(SignOp::Cmac(c.clone())),
            SignOp::DesMac(c) => Some(SignOp::DesMac(c.clone())),
            _ => None,
        }
    }
}

impl VerifyOp {
    /// As [`SignOp::try_clone`], for MAC verification.
    pub fn try_clone(&self) -> Option<VerifyOp> {
        match self {
            VerifyOp::Mac(MacVerify(mac)) => mac.try_clone().map(|m| VerifyOp::Mac(MacVerify(m))),
            _ => None,
        }
    }
}

impl SignOperation for SignOp {
    fn output_len(&self) -> usize {
        SignOp!(self, op => op.output_len())
    }
    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        SignOp!(self, op => op.sign(data, out))
    }
    fn update(&mut self, data: &[u8]) -> Result<()> {
        SignOp!(self, op => op.update(data))
    }
    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        SignOp!(self, op => op.finish(out))
    }
}

dispatch_enum!(
    /// Static dispatch over the families that verify.
    VerifyOp {
        EdDsa(eddsa::EdDsaVerify),
        Ecdsa(ec::EcdsaVerify),
        Dsa(dsa::DsaVerify),
        Rsa(rsa::RsaVerify),
        Mac(MacVerify),
    }
);

impl VerifyOperation for VerifyOp {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        VerifyOp!(self, op => op.verify(data, signature))
    }
    fn update(&mut self, data: &[u8]) -> Result<()> {
        VerifyOp!(self, op => op.update(data))
    }
    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        VerifyOp!(self, op => op.finish(signature))
    }
}

/// MAC verification: compute the MAC and compare in constant time.
pub struct MacVerify(SignOp);

impl VerifyOperation for MacVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        let mut mac = [0u8; 64];
        let n = self.0.output_len();
        if signature.len() != n {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        self.0.sign(data, &mut mac[..n])?;
        constant_time_eq(&mac[..n], signature)
    }
    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.0.update(data)
    }
    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        let mut mac = [0u8; 64];
        let n = self.0.output_len();
        if signature.len() != n {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        self.0.finish(&mut mac[..n])?;
        constant_time_eq(&mac[..n], signature)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> Result<()> {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    if a.len() == b.len() && std::hint::black_box(diff) == 0 {
        Ok(())
    } else {
        Err(err(CKR_SIGNATURE_INVALID))
    }
}

dispatch_enum!(
    /// Static dispatch over the families that encrypt or decrypt.
    CipherOp {
        Aes(aes::AesCipher),
        Des(des::cipher::DesCipher),
        Rsa(rsa::RsaCipher),
        RsaRecover(rsa::RsaRecover),
    }
);

impl CipherOperation for CipherOp {
    fn output_len(&self, input_len: usize) -> OutputLen {
        CipherOp!(self, op => op.output_len(input_len))
    }
    fn process(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        CipherOp!(self, op => op.process(data, out))
    }
    fn update_len(&self, input_len: usize) -> OutputLen {
        CipherOp!(self, op => op.update_len(input_len))
    }
    fn update(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        CipherOp!(self, op => op.update(data, out))
    }
    fn final_len(&self) -> OutputLen {
        CipherOp!(self, op => op.final_len())
    }
    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        CipherOp!(self, op => op.finish(out))
    }
}

/// Direction of a cipher operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `C_EncryptInit` (and `C_WrapKey`).
    Encrypt,
    /// `C_DecryptInit` (and `C_UnwrapKey`).
    Decrypt,
}

fn is_hmac(ty: CK_MECHANISM_TYPE) -> bool {
    matches!(
        ty,
        CKM_MD5_HMAC
            | CKM_MD5_HMAC_GENERAL
            | CKM_SHA_1_HMAC
            | CKM_SHA_1_HMAC_GENERAL
            | CKM_SHA224_HMAC
            | CKM_SHA224_HMAC_GENERAL
            | CKM_SHA256_HMAC
            | CKM_SHA256_HMAC_GENERAL
            | CKM_SHA384_HMAC
            | CKM_SHA384_HMAC_GENERAL
            | CKM_SHA512_HMAC
            | CKM_SHA512_HMAC_GENERAL
    )
}

fn mac_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Option<SignOp>> {
    Ok(Some(match mech.ty {
        t if is_hmac(t) => SignOp::Hmac(hmac::HmacSign::new(mech, key)?),
        CKM_AES_CMAC | CKM_AES_CMAC_GENERAL => SignOp::Cmac(cmac::CmacSign::new(mech, key)?),
        CKM_DES3_MAC | CKM_DES3_MAC_GENERAL | CKM_DES3_CMAC | CKM_DES3_CMAC_GENERAL => {
            SignOp::DesMac(des::mac::DesMac::new(mech, key)?)
        }
        _ => return Ok(None),
    }))
}

/// Starts a signature or MAC with `key`.
pub fn sign_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<SignOp> {
    require(mech, CKF_SIGN)?;
    if let Some(mac) = mac_init(mech, key.clone())? {
        return Ok(mac);
    }
    match mech.ty {
        CKM_EDDSA => eddsa::EdDsaSign::new(mech, key).map(SignOp::EdDsa),
        CKM_ECDSA | CKM_ECDSA_SHA1 | CKM_ECDSA_SHA224 | CKM_ECDSA_SHA256 | CKM_ECDSA_SHA384
        | CKM_ECDSA_SHA512 => ec::EcdsaSign::new(mech, key).map(SignOp::Ecdsa),
        CKM_DSA | CKM_DSA_SHA1 | CKM_DSA_SHA224 | CKM_DSA_SHA256 | CKM_DSA_SHA384
        | CKM_DSA_SHA512 => dsa::DsaSign::new(mech, key).map(SignOp::Dsa),
        _ => rsa::RsaSign::new(mech, key).map(SignOp::Rsa),
    }
}

/// Starts a verification with `key`.
pub fn verify_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<VerifyOp> {
    require(mech, CKF_VERIFY)?;
    if let Some(mac) = mac_init(mech, key.clone())? {
        return Ok(VerifyOp::Mac(MacVerify(mac)));
    }
    match mech.ty {
        CKM_EDDSA => eddsa::EdDsaVerify::new(mech, key).map(VerifyOp::EdDsa),
        CKM_ECDSA | CKM_ECDSA_SHA1 | CKM_ECDSA_SHA224 | CKM_ECDSA_SHA256 | CKM_ECDSA_SHA384
        | CKM_ECDSA_SHA512 => ec::EcdsaVerify::new(mech, key).map(VerifyOp::Ecdsa),
        CKM_DSA | CKM_DSA_SHA1 | CKM_DSA_SHA224 | CKM_DSA_SHA256 | CKM_DSA_SHA384
        | CKM_DSA_SHA512 => dsa::DsaVerify::new(mech, key).map(VerifyOp::Dsa),
        _ => rsa::RsaVerify::new(mech, key).map(VerifyOp::Rsa),
    }
}

/// Starts a signature with recovery (`C_SignRecoverInit`, §5.13): the RSA
/// mechanisms whose signature holds the data (`CKM_RSA_PKCS`,
/// `CKM_RSA_X_509`).
pub fn sign_recover_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<SignOp> {
    require(mech, CKF_SIGN_RECOVER)?;
    rsa::RsaSign::new(mech, key).map(SignOp::Rsa)
}

/// Starts a verification with recovery (`C_VerifyRecoverInit`, §5.14).
pub fn verify_recover_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<CipherOp> {
    require(mech, CKF_VERIFY_RECOVER)?;
    rsa::RsaRecover::new(mech, key).map(CipherOp::RsaRecover)
}

/// Starts an encryption or decryption with `key`. `function` is the
/// `CKF_*` flag the caller needs (`CKF_ENCRYPT`, `CKF_WRAP`, ...).
pub fn cipher_init(
    mech: &Mechanism<'_>,
    key: Arc<KeyMaterial>,
    direction: Direction,
    function: CK_FLAGS,
) -> Result<CipherOp> {
    require(mech, function)?;
    match &*key {
        KeyMaterial::Aes(_) => aes::AesCipher::new(mech, key, direction).map(CipherOp::Aes),
        KeyMaterial::Des(_) => des::cipher::DesCipher::new(mech, key, direction).map(CipherOp::Des),
        KeyMaterial::RsaPrivate(..) | KeyMaterial::RsaPublic(..) => {
            rsa::RsaCipher::new(mech, key, direction).map(CipherOp::Rsa)
        }
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// Starts a digest.
pub fn digest_init(mech: &Mechanism<'_>) -> Result<digest::DigestOp> {
    require(mech, CKF_DIGEST)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    digest::DigestOp::new(mech.ty)
}

/// What a key-pair generation produces: key-specific attributes for the
/// public and the private object.
pub struct GeneratedPair {
    /// Attributes to add to the public key.
    pub public: Attributes,
    /// Attributes to add to the private key.
    pub private: Attributes,
    /// `CKA_KEY_TYPE` of both.
    pub key_type: CK_KEY_TYPE,
}

/// The key type a key-pair mechanism makes.
pub fn pair_key_type(mech: CK_MECHANISM_TYPE) -> Result<CK_KEY_TYPE> {
    match mech {
        CKM_EC_EDWARDS_KEY_PAIR_GEN => Ok(CKK_EC_EDWARDS),
        CKM_EC_MONTGOMERY_KEY_PAIR_GEN => Ok(CKK_EC_MONTGOMERY),
        CKM_EC_KEY_PAIR_GEN => Ok(CKK_EC),
        CKM_RSA_PKCS_KEY_PAIR_GEN => Ok(CKK_RSA),
        CKM_DSA_KEY_PAIR_GEN => Ok(CKK_DSA),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// Generates a key pair; `public_template` holds the domain parameters
/// (`CKA_EC_PARAMS`, `CKA_MODULUS_BITS`, `CKA_PUBLIC_EXPONENT`).
pub fn generate_key_pair(
    mech: &Mechanism<'_>,
    public_template: &Attributes,
) -> Result<GeneratedPair> {
    require(mech, CKF_GENERATE_KEY_PAIR)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    match mech.ty {
        CKM_EC_EDWARDS_KEY_PAIR_GEN => eddsa::generate(public_template),
        CKM_EC_MONTGOMERY_KEY_PAIR_GEN => x25519::generate(public_template),
        CKM_EC_KEY_PAIR_GEN => ec::generate(public_template),
        CKM_RSA_PKCS_KEY_PAIR_GEN => rsa::generate(public_template),
        CKM_DSA_KEY_PAIR_GEN => dsa::generate(public_template),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// The key type of the `CKO_DOMAIN_PARAMETERS` object a parameter
/// generation mechanism makes through `C_GenerateKey` (mechanisms spec
/// §2.2.10), or `None` for the mechanisms that make secret keys.
pub fn domain_parameter_key_type(mech: CK_MECHANISM_TYPE) -> Option<CK_KEY_TYPE> {
    match mech {
        CKM_DSA_PARAMETER_GEN => Some(CKK_DSA),
        _ => None,
    }
}

/// Generates domain parameters; `template` is the built template
/// (`CKA_PRIME_BITS`, ...). Returns the attributes to add.
pub fn generate_domain_parameters(
    mech: &Mechanism<'_>,
    template: &Attributes,
) -> Result<Attributes> {
    require(mech, CKF_GENERATE)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    match mech.ty {
        CKM_DSA_PARAMETER_GEN => dsa::generate_parameters(template),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// The default key type of a secret-key generation mechanism, and the key
/// types it may make.
pub fn secret_key_types(mech: CK_MECHANISM_TYPE) -> Result<(CK_KEY_TYPE, &'static [CK_KEY_TYPE])> {
    match mech {
        CKM_AES_KEY_GEN => Ok((CKK_AES, &[CKK_AES])),
        CKM_DES_KEY_GEN => Ok((CKK_DES, &[CKK_DES])),
        CKM_DES2_KEY_GEN => Ok((CKK_DES2, &[CKK_DES2])),
        CKM_DES3_KEY_GEN => Ok((CKK_DES3, &[CKK_DES3])),
        CKM_GENERIC_SECRET_KEY_GEN => Ok((
            CKK_GENERIC_SECRET,
            &[
                CKK_GENERIC_SECRET,
                CKK_SHA_1_HMAC,
                CKK_SHA224_HMAC,
                CKK_SHA256_HMAC,
                CKK_SHA384_HMAC,
                CKK_SHA512_HMAC,
            ],
        )),
        // The hash-specific HMAC key generators of PKCS #11 3.0
        // (mechanisms spec 3.0, the "SHA-n key generation" sections).
        CKM_SHA_1_KEY_GEN => Ok((CKK_SHA_1_HMAC, &[CKK_SHA_1_HMAC])),
        CKM_SHA224_KEY_GEN => Ok((CKK_SHA224_HMAC, &[CKK_SHA224_HMAC])),
        CKM_SHA256_KEY_GEN => Ok((CKK_SHA256_HMAC, &[CKK_SHA256_HMAC])),
        CKM_SHA384_KEY_GEN => Ok((CKK_SHA384_HMAC, &[CKK_SHA384_HMAC])),
        CKM_SHA512_KEY_GEN => Ok((CKK_SHA512_HMAC, &[CKK_SHA512_HMAC])),
        // Mechanisms spec 3.0 §2.43.4: a key for HKDF derivation.
        CKM_HKDF_KEY_GEN => Ok((CKK_HKDF, &[CKK_HKDF])),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// The length a hash-specific HMAC key generator gives when the template
/// has no `CKA_VALUE_LEN`: the hash's output length (RFC 2104 §3's
/// recommended key length). The spec expects `CKA_VALUE_LEN`; consumers
/// that leave it out get this rather than `CKR_TEMPLATE_INCOMPLETE`.
fn default_secret_len(mech: CK_MECHANISM_TYPE) -> Option<usize> {
    match mech {
        CKM_SHA_1_KEY_GEN => Some(20),
        CKM_SHA224_KEY_GEN => Some(28),
        CKM_SHA256_KEY_GEN => Some(32),
        CKM_SHA384_KEY_GEN => Some(48),
        CKM_SHA512_KEY_GEN => Some(64),
        // DES keys have one length each (no CKA_VALUE_LEN needed).
        CKM_DES_KEY_GEN => Some(8),
        CKM_DES2_KEY_GEN => Some(16),
        CKM_DES3_KEY_GEN => Some(24),
        _ => None,
    }
}

/// Longest secret key (generic secret or HMAC key) generated or derived,
/// in bytes: 4096 bits, more than any MAC or KDF needs.
pub const MAX_SECRET_LEN: usize = 512;

/// Checks the `CKA_VALUE_LEN` of a new secret key of `key_type`: 16, 24 or
/// 32 for AES, 8, 16 or 24 for DES, DES2 and DES3, 1 to [`MAX_SECRET_LEN`]
/// otherwise (else
/// `CKR_ATTRIBUTE_VALUE_INVALID`). Every length a caller gives for a key to
/// be made passes here before anything is allocated or computed.
pub fn check_secret_len(key_type: CK_KEY_TYPE, len: usize) -> Result<()> {
    let ok = match key_type {
        CKK_AES => matches!(len, 16 | 24 | 32),
        CKK_DES | CKK_DES2 | CKK_DES3 => des::key_len(key_type) == Some(len),
        _ => (1..=MAX_SECRET_LEN).contains(&len),
    };
    if ok {
        Ok(())
    } else {
        Err(err(CKR_ATTRIBUTE_VALUE_INVALID))
    }
}

/// Generates a secret key of `value_len` bytes (`CKA_VALUE_LEN`, required
/// for generic secrets, 16/24/32 for AES).
pub fn generate_key(mech: &Mechanism<'_>, value_len: Option<usize>) -> Result<Zeroizing<Vec<u8>>> {
    require(mech, CKF_GENERATE)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    let (key_type, _) = secret_key_types(mech.ty)?;
    let len = value_len
        .or(default_secret_len(mech.ty))
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    check_secret_len(key_type, len)?;
    if des::key_len(key_type).is_some() {
        return des::generate(key_type);
    }
    let mut value = Zeroizing::new(vec![0u8; len]);
    random::generate(&mut value)?;
    Ok(value)
}

/// The length of a derived key of `key_type` when the template gives none:
/// 32 bytes for AES, the one length of each DES key type; `None` for the
/// types that need `CKA_VALUE_LEN` (or take the mechanism's natural
/// output length).
pub fn default_derived_len(key_type: CK_KEY_TYPE) -> Option<usize> {
    match key_type {
        CKK_AES => Some(32),
        _ => des::key_len(key_type),
    }
}

/// Adjusts derived key bytes to their key type: DES keys get their parity
/// bits set (as the mechanisms spec asks of every derivation that makes a
/// DES key, e.g. §2.16.9 for the SSL/TLS and §2.42 for the key-derivation
/// mechanisms).
pub fn shape_derived_value(key_type: CK_KEY_TYPE, value: &mut [u8]) {
    if des::key_len(key_type).is_some() {
        des::set_parity(value);
    }
}

/// True for the derivations whose result must be at least as protected as
/// their base keys (mechanisms spec 3.0 §2.42 and §2.16.12: the value is a
/// simple function of the base's value).
pub fn derives_by_simple_function(ty: CK_MECHANISM_TYPE) -> bool {
    matches!(
        ty,
        CKM_CONCATENATE_BASE_AND_KEY
            | CKM_CONCATENATE_BASE_AND_DATA
            | CKM_CONCATENATE_DATA_AND_BASE
            | CKM_XOR_BASE_AND_DATA
            | CKM_EXTRACT_KEY_FROM_KEY
            | CKM_AES_ECB_ENCRYPT_DATA
            | CKM_AES_CBC_ENCRYPT_DATA
    )
}

/// Derives secret bytes from `base` (`C_DeriveKey`); `len` is the wanted
/// length when the template gives one (at most [`MAX_SECRET_LEN`]).
/// `other` is the value of the second key a mechanism's parameter names
/// (the HKDF salt key, the key of `CKM_CONCATENATE_BASE_AND_KEY`), read by
/// the caller.
pub fn derive(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    len: Option<usize>,
    other: Option<&[u8]>,
) -> Result<Zeroizing<Vec<u8>>> {
    require(mech, CKF_DERIVE)?;
    if len.is_some_and(|l| l == 0 || l > MAX_SECRET_LEN) {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    match (mech.ty, mech.param) {
        (CKM_ECDH1_DERIVE, _) => match base {
            KeyMaterial::X25519Private(_) => x25519::derive(mech, base, len),
            _ => ec::ecdh_derive(mech, base, len),
        },
        (CKM_HKDF_DERIVE | CKM_HKDF_DATA, Param::Hkdf(p)) => {
            let ikm = kdf_base(base)?;
            let len = kdf::hkdf::output_len(&p, len)?;
            if len > MAX_SECRET_LEN {
                return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
            }
            kdf::hkdf::derive(&p, ikm, other, len)
        }
        (CKM_HKDF_DERIVE | CKM_HKDF_DATA, _) => Err(err(CKR_MECHANISM_PARAM_INVALID)),
        (CKM_EXTRACT_KEY_FROM_KEY, Param::BitIndex(first)) => kdf::concat::extract(
            secret_value(base)?,
            first,
            len.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        ),
        (ty, param) if derives_by_simple_function(ty) => {
            let value = simple_derivation(ty, param, base, other)?;
            match len {
                None if value.len() > MAX_SECRET_LEN => Err(err(CKR_KEY_SIZE_RANGE)),
                None => Ok(value),
                // §2.42: a shorter length takes the leading bytes; a longer
                // one cannot be met: the template asks too much of the bases
                // (concatenation, XOR), or the data given to encrypt is too
                // short for the key (AES encryption of data, where consumers
                // expect the parameter to be blamed).
                Some(l) if l > value.len() => Err(err(match ty {
                    CKM_AES_ECB_ENCRYPT_DATA | CKM_AES_CBC_ENCRYPT_DATA => {
                        CKR_MECHANISM_PARAM_INVALID
                    }
                    _ => CKR_TEMPLATE_INCONSISTENT,
                })),
                Some(l) => Ok(Zeroizing::new(value[..l].to_vec())),
            }
        }
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// SP 800-108 derivation (mechanisms spec 3.0 §2.42): the keys of `lens`
/// bytes (the primary key first, then the additional keys), each checked
/// by the caller with [`check_secret_len`]. HMAC PRFs take a generic
/// secret or HMAC key, AES-CMAC an AES key; else
/// `CKR_KEY_TYPE_INCONSISTENT`.
pub fn derive_sp800_108(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    lens: &[usize],
) -> Result<Vec<Zeroizing<Vec<u8>>>> {
    require(mech, CKF_DERIVE)?;
    let mode = kdf::sp800_108::Mode::of(mech.ty).ok_or(err(CKR_MECHANISM_INVALID))?;
    let Param::Sp800108(p) = mech.param else {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    };
    if lens.len() > kdf::sp800_108::MAX_ADDITIONAL_KEYS + 1
        || lens.iter().any(|&l| l == 0 || l > MAX_SECRET_LEN)
    {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    kdf::sp800_108::validate(mode, p)?;
    let key = if kdf::sp800_108::is_hmac_prf(p.prf) {
        match base {
            KeyMaterial::Secret {
                key_type:
                    CKK_GENERIC_SECRET | CKK_SHA_1_HMAC | CKK_SHA224_HMAC | CKK_SHA256_HMAC
                    | CKK_SHA384_HMAC | CKK_SHA512_HMAC,
                value,
                ..
            } => kdf::sp800_108::PrfKey::Hmac(value),
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        }
    } else {
        kdf::sp800_108::PrfKey::Cmac(aes_key(base)?)
    };
    kdf::sp800_108::derive(mode, p, key, lens)
}

/// The full output of a §2.42 / §2.16.12 derivation, before truncation.
fn simple_derivation(
    ty: CK_MECHANISM_TYPE,
    param: Param<'_>,
    base: &KeyMaterial,
    other: Option<&[u8]>,
) -> Result<Zeroizing<Vec<u8>>> {
    let bad = || err(CKR_MECHANISM_PARAM_INVALID);
    match (ty, param) {
        (CKM_CONCATENATE_BASE_AND_KEY, Param::Handle(_)) => Ok(kdf::concat::concatenate(
            secret_value(base)?,
            other.ok_or_else(bad)?,
        )),
        (CKM_CONCATENATE_BASE_AND_DATA, Param::Bytes(d)) => {
            Ok(kdf::concat::concatenate(secret_value(base)?, d))
        }
        (CKM_CONCATENATE_DATA_AND_BASE, Param::Bytes(d)) => {
            Ok(kdf::concat::concatenate(d, secret_value(base)?))
        }
        (CKM_XOR_BASE_AND_DATA, Param::Bytes(d)) => Ok(kdf::concat::xor(secret_value(base)?, d)),
        (CKM_AES_ECB_ENCRYPT_DATA, Param::Bytes(d)) => kdf::encrypt_data::ecb(aes_key(base)?, d),
        (CKM_AES_CBC_ENCRYPT_DATA, Param::AesCbcData { iv, data }) => {
            kdf::encrypt_data::cbc(aes_key(base)?, &iv, data)
        }
        _ => Err(bad()),
    }
}

/// The value of any secret key (generic, HMAC, HKDF, AES or DES), else
/// `CKR_KEY_TYPE_INCONSISTENT`.
pub fn secret_value(base: &KeyMaterial) -> Result<&[u8]> {
    match base {
        KeyMaterial::Secret { value, .. } => Ok(value),
        KeyMaterial::Aes(k) => Ok(k.bytes()),
        KeyMaterial::Des(k) => Ok(k.bytes()),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// The base of an AES data-encryption derivation.
fn aes_key(base: &KeyMaterial) -> Result<&aes::AesKey> {
    match base {
        KeyMaterial::Aes(k) => Ok(k),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// The value of a KDF's base key: a generic secret or an HKDF key
/// (mechanisms spec 3.0 §2.43.2), else `CKR_KEY_TYPE_INCONSISTENT`.
fn kdf_base(base: &KeyMaterial) -> Result<&[u8]> {
    match base {
        KeyMaterial::Secret {
            key_type: CKK_GENERIC_SECRET | CKK_HKDF,
            value,
            ..
        } => Ok(value),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// Helpers for the families' known-answer tests.
#[cfg(test)]
pub(crate) mod test_util {
    /// Lower-case hex digits of `bytes`.
    pub fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Bytes from hex digits (test vectors).
    pub fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_has_unique_entries_with_functions() {
        for (i, m) in REGISTRY.iter().enumerate() {
            assert!(REGISTRY[i + 1..].iter().all(|n| n.ty != m.ty));
            assert_ne!(m.flags & !EC_FLAGS, 0, "{:#x} does nothing", m.ty);
            assert!(m.min_key <= m.max_key);
        }
    }

    #[test]
    fn require_checks_function_flags() {
        assert!(require(&Mechanism::plain(CKM_EDDSA), CKF_SIGN).is_ok());
        assert_eq!(
            require(&Mechanism::plain(CKM_SHA256), CKF_SIGN)
                .unwrap_err()
                .rv(),
            CKR_MECHANISM_INVALID
        );
        assert_eq!(lookup(0xdead).unwrap_err().rv(), CKR_MECHANISM_INVALID);
    }

    #[test]
    fn lookup_finds_every_registered_mechanism_and_nothing_else() {
        for d in REGISTRY {
            assert_eq!(lookup(d.ty).unwrap().ty, d.ty);
        }
        // Every type the registry lacks is invalid: the whole standard range,
        // vendor-defined values, and values whose hash lands on a taken slot.
        let unknown = (0..0x2000)
            .chain([CKM_VENDOR_DEFINED, CKM_VENDOR_DEFINED + 1, CK_ULONG::MAX])
            .filter(|t| REGISTRY.iter().all(|d| d.ty != *t));
        for ty in unknown {
            assert_eq!(
                lookup(ty).unwrap_err().rv(),
                CKR_MECHANISM_INVALID,
                "{ty:#x}"
            );
        }
    }
}
