//! The mechanism a caller passes (`CK_MECHANISM`, base spec §5.2.1 /
//! §3.5): its type and its parameter, read by the FFI layer into the
//! borrowed, checked form every family takes.

use super::kdf;
use crate::error::{Result, err};
use cryptoki_sys::*;

/// How a mechanism's parameter is laid out in memory (so the FFI layer
/// knows how to read `CK_MECHANISM.pParameter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// No parameter allowed.
    None,
    /// Optional `CK_EDDSA_PARAMS`.
    EdDsa,
    /// Optional `CK_SIGN_ADDITIONAL_CONTEXT` (PKCS#11 3.2: ML-DSA, SLH-DSA).
    SignContext,
    /// `CK_HASH_SIGN_ADDITIONAL_CONTEXT`, required (`CKM_HASH_ML_DSA`,
    /// `CKM_HASH_SLH_DSA`).
    HashSignContext,
    /// A byte string (an IV), required.
    Bytes,
    /// A byte string, optional (the IV of the AES key-wrap mechanisms).
    OptionalBytes,
    /// `CK_GCM_PARAMS`.
    Gcm,
    /// `CK_AES_CTR_PARAMS`.
    Ctr,
    /// `CK_CCM_PARAMS`.
    Ccm,
    /// `CK_CHACHA20_PARAMS`.
    ChaCha20,
    /// `CK_SALSA20_CHACHA20_POLY1305_PARAMS`.
    ChaChaPoly,
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
    /// `CK_DES_CBC_ENCRYPT_DATA_PARAMS`.
    DesCbcData,
    /// `CK_PKCS5_PBKD2_PARAMS2` (`CKM_PKCS5_PBKD2`).
    Pbkdf2,
    /// `CK_SP800_108_KDF_PARAMS` (counter, double pipeline) or
    /// `CK_SP800_108_FEEDBACK_KDF_PARAMS` (feedback), mechanisms spec 3.0
    /// §2.42; read only by `C_DeriveKey`, into owned values.
    Sp800108,
    /// `CK_IKE_PRF_DERIVE_PARAMS` (`CKM_IKE_PRF_DERIVE`).
    IkePrf,
    /// `CK_IKE1_PRF_DERIVE_PARAMS` (`CKM_IKE1_PRF_DERIVE`).
    Ike1Prf,
    /// `CK_IKE1_EXTENDED_DERIVE_PARAMS` (`CKM_IKE1_EXTENDED_DERIVE`).
    Ike1Extended,
    /// `CK_IKE2_PRF_PLUS_DERIVE_PARAMS` (`CKM_IKE2_PRF_PLUS_DERIVE`).
    Ike2PrfPlus,
    /// `CK_TLS_KDF_PARAMS` (`CKM_TLS_KDF`, `CKM_TLS12_KDF`).
    TlsKdf,
    /// `CK_TLS_MAC_PARAMS` (`CKM_TLS_MAC`, `CKM_TLS12_MAC`).
    TlsMac,
    /// `CK_TLS12_MASTER_KEY_DERIVE_PARAMS`; read only by `C_DeriveKey`,
    /// into owned values with the `pVersion` output.
    Tls12Master,
    /// `CK_TLS12_EXTENDED_MASTER_KEY_DERIVE_PARAMS`; as [`ParamKind::Tls12Master`].
    Tls12ExtendedMaster,
    /// `CK_TLS12_KEY_MAT_PARAMS`; read only by `C_DeriveKey`, with the
    /// `CK_SSL3_KEY_MAT_OUT` output.
    Tls12KeyMat,
    /// Optional `CK_OTP_PARAMS` (`CKM_HOTP`), read into [`OtpParams`].
    Otp,
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
    /// `CK_SIGN_ADDITIONAL_CONTEXT`.
    SignContext {
        /// `hedgeVariant` (`CKH_HEDGE_*`, `CKH_DETERMINISTIC_REQUIRED`).
        hedge: CK_HEDGE_TYPE,
        /// `pContext` (empty when `ulContextLen` is 0).
        context: &'a [u8],
    },
    /// `CK_HASH_SIGN_ADDITIONAL_CONTEXT`.
    HashSignContext {
        /// `hedgeVariant`.
        hedge: CK_HEDGE_TYPE,
        /// `pContext`.
        context: &'a [u8],
        /// `hash`: the function the caller's pre-hash was computed with.
        hash: CK_MECHANISM_TYPE,
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
    /// `CK_CCM_PARAMS`.
    Ccm {
        /// `ulDataLen`: the payload (plaintext) length.
        data_len: CK_ULONG,
        /// `pNonce`.
        nonce: &'a [u8],
        /// `pAAD`.
        aad: &'a [u8],
        /// `ulMACLen` in bytes.
        mac_len: CK_ULONG,
    },
    /// `CK_CHACHA20_PARAMS`.
    ChaCha20 {
        /// `pBlockCounter` (`blockCounterBits / 8` bytes).
        counter: &'a [u8],
        /// `blockCounterBits`.
        counter_bits: CK_ULONG,
        /// `pNonce` (`ulNonceBits / 8` bytes).
        nonce: &'a [u8],
        /// `ulNonceBits`.
        nonce_bits: CK_ULONG,
    },
    /// `CK_SALSA20_CHACHA20_POLY1305_PARAMS`.
    ChaChaPoly {
        /// `pNonce`.
        nonce: &'a [u8],
        /// `pAAD`.
        aad: &'a [u8],
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
    /// `CK_DES_CBC_ENCRYPT_DATA_PARAMS`.
    DesCbcData {
        /// `iv`.
        iv: [u8; 8],
        /// `pData`.
        data: &'a [u8],
    },
    /// `CK_PKCS5_PBKD2_PARAMS2`.
    Pbkdf2(kdf::pbkdf2::Params<'a>),
    /// The SP 800-108 parameters (§2.42), owned by the FFI layer.
    Sp800108(&'a kdf::sp800_108::Params),
    /// The parameters of one of the four IKE derivations.
    Ike(kdf::ike::Params<'a>),
    /// `CK_TLS_KDF_PARAMS`.
    TlsKdf(kdf::tls::KdfParams<'a>),
    /// `CK_TLS_MAC_PARAMS`.
    TlsMac(kdf::tls::MacParams),
    /// The TLS 1.2 (extended) master secret parameters, owned by the FFI layer.
    TlsMaster(&'a kdf::tls::MasterParams),
    /// `CK_TLS12_KEY_MAT_PARAMS`, owned by the FFI layer.
    TlsKeyMat(&'a kdf::tls::KeyMatParams),
    /// `CK_OTP_PARAMS` (base spec 3.0 "OTP mechanisms").
    Otp(OtpParams),
}

/// The `CK_OTP_PARAM`s of a `CK_OTP_PARAMS` the token reads (each type at
/// most once); `CK_OTP_PIN`, `CK_OTP_CHALLENGE` and `CK_OTP_TIME` are
/// ignored, as the HOTP key's requirements for them say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OtpParams {
    /// `CK_OTP_COUNTER`: 8 bytes, big-endian.
    pub counter: Option<u64>,
    /// `CK_OTP_FLAGS` (0 when absent).
    pub flags: CK_FLAGS,
    /// `CK_OTP_OUTPUT_LENGTH`: digits instead of `CKA_OTP_LENGTH`.
    pub length: Option<CK_ULONG>,
    /// `CK_OTP_OUTPUT_FORMAT`.
    pub format: Option<CK_ULONG>,
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

/// The `CK_ECDH1_DERIVE_PARAMS` of `CKM_ECDH1_DERIVE` (mechanisms spec
/// §2.3.15): `(kdf, pSharedData, pPublicData)`, else
/// `CKR_MECHANISM_PARAM_INVALID`.
pub fn ecdh1_params<'a>(mech: &Mechanism<'a>) -> Result<(CK_EC_KDF_TYPE, &'a [u8], &'a [u8])> {
    match mech.param {
        Param::Ecdh1 {
            kdf,
            shared,
            public,
        } => Ok((kdf, shared, public)),
        _ => Err(err(CKR_MECHANISM_PARAM_INVALID)),
    }
}

/// The output length asked for by a `_GENERAL` mechanism (or the full length).
pub fn general_len(mech: &Mechanism<'_>, full: usize, general: bool) -> Result<usize> {
    match (general, mech.param) {
        (false, Param::None) => Ok(full),
        (true, Param::MacLength(n)) if (1..=full as CK_ULONG).contains(&n) => Ok(n as usize),
        _ => Err(err(CKR_MECHANISM_PARAM_INVALID)),
    }
}

/// The MAC length a caller chose in the parameter (`CK_MAC_GENERAL_PARAMS`,
/// `CK_TLS_MAC_PARAMS`' `ulMacLength`), if the mechanism takes one: the
/// output is then a prefix of the full MAC.
pub fn truncated_mac_len(mech: &Mechanism<'_>) -> Option<CK_ULONG> {
    match mech.param {
        Param::MacLength(n) => Some(n),
        Param::TlsMac(p) => Some(p.mac_len),
        _ => None,
    }
}
