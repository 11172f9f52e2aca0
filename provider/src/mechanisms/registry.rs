//! The registry: every mechanism the token supports, with its key sizes,
//! `CK_MECHANISM_INFO` flags and parameter layout (`C_GetMechanismList`,
//! `C_GetMechanismInfo`, base spec §5.5), and the one lookup every
//! `C_*Init` goes through.

use super::params::{Mechanism, ParamKind};
use crate::error::{Result, err};
use cryptoki_sys::*;

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
        448,
        CKF_GENERATE_KEY_PAIR | EC_FLAGS,
        P::None,
    ),
    // Ed25519 (255-bit keys) and Ed448 (448).
    d(CKM_EDDSA, 255, 448, SV | MSV | EC_FLAGS, P::EdDsa),
    // ML-DSA (PKCS#11 3.2, FIPS 204): key sizes are the parameter sets'
    // security strengths in bits, 128 (ML-DSA-44) to 256 (ML-DSA-87).
    d(
        CKM_ML_DSA_KEY_PAIR_GEN,
        128,
        256,
        CKF_GENERATE_KEY_PAIR,
        P::None,
    ),
    d(CKM_ML_DSA, 128, 256, SV | MSV, P::SignContext),
    // ML-KEM (PKCS#11 3.2, FIPS 203): key sizes are the parameter sets'
    // security strengths in bits, 128 (ML-KEM-512) to 256 (ML-KEM-1024).
    d(
        CKM_ML_KEM_KEY_PAIR_GEN,
        128,
        256,
        CKF_GENERATE_KEY_PAIR,
        P::None,
    ),
    d(
        CKM_ML_KEM,
        128,
        256,
        CKF_ENCAPSULATE | CKF_DECAPSULATE,
        P::None,
    ),
    d(CKM_HASH_ML_DSA, 128, 256, SV, P::HashSignContext),
    d(CKM_HASH_ML_DSA_SHA224, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_ML_DSA_SHA256, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_ML_DSA_SHA384, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_ML_DSA_SHA512, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_ML_DSA_SHA3_224, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_ML_DSA_SHA3_256, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_ML_DSA_SHA3_384, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_ML_DSA_SHA3_512, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_ML_DSA_SHAKE128, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_ML_DSA_SHAKE256, 128, 256, SV | MSV, P::SignContext),
    // SLH-DSA (PKCS#11 3.2, FIPS 205): key sizes are the parameter sets'
    // security strengths in bits, 128 (SLH-DSA-*-128s/f) to 256.
    d(
        CKM_SLH_DSA_KEY_PAIR_GEN,
        128,
        256,
        CKF_GENERATE_KEY_PAIR,
        P::None,
    ),
    d(CKM_SLH_DSA, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_SLH_DSA, 128, 256, SV, P::HashSignContext),
    d(CKM_HASH_SLH_DSA_SHA224, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_SLH_DSA_SHA256, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_SLH_DSA_SHA384, 128, 256, SV | MSV, P::SignContext),
    d(CKM_HASH_SLH_DSA_SHA512, 128, 256, SV | MSV, P::SignContext),
    d(
        CKM_HASH_SLH_DSA_SHA3_224,
        128,
        256,
        SV | MSV,
        P::SignContext,
    ),
    d(
        CKM_HASH_SLH_DSA_SHA3_256,
        128,
        256,
        SV | MSV,
        P::SignContext,
    ),
    d(
        CKM_HASH_SLH_DSA_SHA3_384,
        128,
        256,
        SV | MSV,
        P::SignContext,
    ),
    d(
        CKM_HASH_SLH_DSA_SHA3_512,
        128,
        256,
        SV | MSV,
        P::SignContext,
    ),
    d(
        CKM_HASH_SLH_DSA_SHAKE128,
        128,
        256,
        SV | MSV,
        P::SignContext,
    ),
    d(
        CKM_HASH_SLH_DSA_SHAKE256,
        128,
        256,
        SV | MSV,
        P::SignContext,
    ),
    // X25519 and X448 (RFC 7748): 255- and 448-bit Montgomery keys.
    d(
        CKM_EC_MONTGOMERY_KEY_PAIR_GEN,
        255,
        448,
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
    d(CKM_ECDSA_SHA3_224, 192, 521, SV | EC_FLAGS, P::None),
    d(CKM_ECDSA_SHA3_256, 192, 521, SV | EC_FLAGS, P::None),
    d(CKM_ECDSA_SHA3_384, 192, 521, SV | EC_FLAGS, P::None),
    d(CKM_ECDSA_SHA3_512, 192, 521, SV | EC_FLAGS, P::None),
    // 192–521: the Weierstrass curves; X25519 and X448 (Montgomery keys)
    // are 255 and 448.
    d(CKM_ECDH1_DERIVE, 192, 521, CKF_DERIVE | EC_FLAGS, P::Ecdh1),
    // Cofactor ECDH: the Weierstrass curves only (all of cofactor 1).
    d(
        CKM_ECDH1_COFACTOR_DERIVE,
        192,
        521,
        CKF_DERIVE | EC_FLAGS,
        P::Ecdh1,
    ),
    // PKCS#11 3.2: the public key of a private key (no key sizes: every
    // private key type of the token).
    d(CKM_PUB_KEY_FROM_PRIV_KEY, 0, 0, CKF_DERIVE, P::None),
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
    // Diffie-Hellman, PKCS #3 (mechanisms spec §2.5): safe-prime groups of
    // 2048–8192 bits (named groups; other safe primes up to 4096 bits).
    d(CKM_DH_PKCS_PARAMETER_GEN, 2048, 4096, CKF_GENERATE, P::None),
    d(
        CKM_DH_PKCS_KEY_PAIR_GEN,
        2048,
        8192,
        CKF_GENERATE_KEY_PAIR,
        P::None,
    ),
    d(CKM_DH_PKCS_DERIVE, 2048, 8192, CKF_DERIVE, P::Bytes),
    d(CKM_DSA_SHA3_224, 1024, 3072, SV, P::None),
    d(CKM_DSA_SHA3_256, 1024, 3072, SV, P::None),
    d(CKM_DSA_SHA3_384, 1024, 3072, SV, P::None),
    d(CKM_DSA_SHA3_512, 1024, 3072, SV, P::None),
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
    d(CKM_SHA3_224_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_SHA3_256_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_SHA3_384_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_SHA3_512_RSA_PKCS, 1024, 16384, SV, P::None),
    d(CKM_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA1_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA224_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA256_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA384_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA512_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA3_224_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA3_256_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA3_384_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_SHA3_512_RSA_PKCS_PSS, 1024, 16384, SV, P::Pss),
    d(CKM_RSA_PKCS_OAEP, 1024, 16384, ED | WU, P::Oaep),
    d(CKM_AES_KEY_GEN, 16, 32, CKF_GENERATE, P::None),
    d(CKM_AES_ECB, 16, 32, ED | WU, P::None),
    d(CKM_AES_CBC, 16, 32, ED | WU, P::Bytes),
    d(CKM_AES_CBC_PAD, 16, 32, ED | WU, P::Bytes),
    d(CKM_AES_CTR, 16, 32, ED, P::Ctr),
    // CBC with ciphertext stealing, CS1 (aes/cts.rs).
    d(CKM_AES_CTS, 16, 32, ED, P::Bytes),
    // Unauthenticated feedback streams (§2.15; docs/SECURITY.md).
    d(CKM_AES_OFB, 16, 32, ED, P::Bytes),
    d(CKM_AES_CFB128, 16, 32, ED, P::Bytes),
    d(CKM_AES_CFB8, 16, 32, ED, P::Bytes),
    d(CKM_AES_CFB1, 16, 32, ED, P::Bytes),
    d(
        CKM_AES_GCM,
        16,
        32,
        ED | CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT,
        P::Gcm,
    ),
    d(
        CKM_AES_CCM,
        16,
        32,
        ED | CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT,
        P::Ccm,
    ),
    d(CKM_AES_KEY_WRAP, 16, 32, ED | WU, P::OptionalBytes),
    d(CKM_AES_KEY_WRAP_PAD, 16, 32, ED | WU, P::OptionalBytes),
    // RFC 5649 under its PKCS #11 3.0 name (the same as KEY_WRAP_PAD here).
    d(CKM_AES_KEY_WRAP_KWP, 16, 32, ED | WU, P::OptionalBytes),
    d(CKM_AES_KEY_WRAP_PKCS7, 16, 32, ED | WU, P::OptionalBytes),
    // ChaCha20 (chacha.rs), 32-byte keys.
    d(CKM_CHACHA20_KEY_GEN, 32, 32, CKF_GENERATE, P::None),
    d(CKM_CHACHA20, 32, 32, ED, P::ChaCha20),
    d(
        CKM_CHACHA20_POLY1305,
        32,
        32,
        ED | CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT,
        P::ChaChaPoly,
    ),
    d(CKM_AES_CMAC, 16, 32, SV, P::None),
    d(CKM_AES_CMAC_GENERAL, 16, 32, SV, P::MacLength),
    // Legacy CBC-MAC (cmac.rs): zero padding, for consumers that ask for it.
    d(CKM_AES_MAC, 16, 32, SV, P::None),
    d(CKM_AES_MAC_GENERAL, 16, 32, SV, P::MacLength),
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
    d(CKM_SHA512_224_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA512_256_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA3_224_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA3_256_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA3_384_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    d(CKM_SHA3_512_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
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
    d(CKM_SHA512_224_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA512_224_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_SHA512_256_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA512_256_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_SHA3_224_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA3_224_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_SHA3_256_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA3_256_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_SHA3_384_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA3_384_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_SHA3_512_HMAC, 1, 512, SV | MSV, P::None),
    d(CKM_SHA3_512_HMAC_GENERAL, 1, 512, SV | MSV, P::MacLength),
    d(CKM_HKDF_KEY_GEN, 1, 512, CKF_GENERATE, P::None),
    // OATH HOTP (RFC 4226; otp/): CKO_OTP_KEY keys of 20 (HMAC-SHA-1), 32
    // (SHA-256) or 64 bytes (SHA-512); single-part, no message API.
    d(CKM_HOTP_KEY_GEN, 20, 64, CKF_GENERATE, P::None),
    d(CKM_HOTP, 20, 64, SV, P::Otp),
    // PBKDF2 (mechanisms spec 3.0 §2.34): no key in; sizes are the made
    // key's, in bytes.
    d(CKM_PKCS5_PBKD2, 1, 512, CKF_GENERATE, P::Pbkdf2),
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
    // Legacy / broken as the DES rows (docs/SECURITY.md): key sizes in bytes.
    d(
        CKM_DES_ECB_ENCRYPT_DATA,
        8,
        8,
        CKF_DERIVE,
        P::DerivationString,
    ),
    d(CKM_DES_CBC_ENCRYPT_DATA, 8, 8, CKF_DERIVE, P::DesCbcData),
    d(
        CKM_DES3_ECB_ENCRYPT_DATA,
        16,
        24,
        CKF_DERIVE,
        P::DerivationString,
    ),
    d(CKM_DES3_CBC_ENCRYPT_DATA, 16, 24, CKF_DERIVE, P::DesCbcData),
    // Hash of the base key's value (mechanisms spec 3.0 "SHA-n key
    // derivation"): any secret key of 1 to 512 bytes.
    d(CKM_SHA1_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA224_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA256_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA384_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA512_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA512_224_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA512_256_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA3_224_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA3_256_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA3_384_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
    d(CKM_SHA3_512_KEY_DERIVATION, 1, 512, CKF_DERIVE, P::None),
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
    // The IKE derivations (mechanisms spec 3.0, "IKE"): an HMAC PRF keyed
    // by a generic secret or the PRF's HMAC key type of 1 to 512 bytes
    // (key sizes in bytes, as for the HMAC rows).
    d(CKM_IKE_PRF_DERIVE, 1, 512, CKF_DERIVE, P::IkePrf),
    d(CKM_IKE1_PRF_DERIVE, 1, 512, CKF_DERIVE, P::Ike1Prf),
    d(
        CKM_IKE1_EXTENDED_DERIVE,
        1,
        512,
        CKF_DERIVE,
        P::Ike1Extended,
    ),
    d(CKM_IKE2_PRF_PLUS_DERIVE, 1, 512, CKF_DERIVE, P::Ike2PrfPlus),
    // Mechanisms spec 3.0 §2.42 (TLS 1.2): generic-secret bases in bytes;
    // an RSA pre-master and every master secret are 48 bytes.
    d(
        CKM_TLS12_MASTER_KEY_DERIVE,
        48,
        48,
        CKF_DERIVE,
        P::Tls12Master,
    ),
    d(
        CKM_TLS12_MASTER_KEY_DERIVE_DH,
        1,
        512,
        CKF_DERIVE,
        P::Tls12Master,
    ),
    d(
        CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE,
        48,
        48,
        CKF_DERIVE,
        P::Tls12ExtendedMaster,
    ),
    d(
        CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH,
        1,
        512,
        CKF_DERIVE,
        P::Tls12ExtendedMaster,
    ),
    d(
        CKM_TLS12_KEY_AND_MAC_DERIVE,
        48,
        48,
        CKF_DERIVE,
        P::Tls12KeyMat,
    ),
    d(
        CKM_TLS12_KEY_SAFE_DERIVE,
        48,
        48,
        CKF_DERIVE,
        P::Tls12KeyMat,
    ),
    d(CKM_TLS_KDF, 1, 512, CKF_DERIVE, P::TlsKdf),
    d(CKM_TLS12_KDF, 1, 512, CKF_DERIVE, P::TlsKdf),
    d(CKM_TLS_MAC, 1, 512, SV, P::TlsMac),
    d(CKM_TLS12_MAC, 1, 512, SV, P::TlsMac),
    // Legacy: MD5 is broken (collisions), kept for SoftHSM2 migration.
    d(CKM_MD5, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA_1, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA224, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA256, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA384, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA512, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA512_224, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA512_256, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA3_224, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA3_256, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA3_384, 0, 0, CKF_DIGEST, P::None),
    d(CKM_SHA3_512, 0, 0, CKF_DIGEST, P::None),
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

    /// docs/mechanisms.md, "Ours vs SoftHSM2 vs kryoptic": the mechanisms
    /// marked ours are exactly the registry's (read from this file's
    /// `d(CKM_…` entries), and the registry has no duplicate.
    #[test]
    fn the_comparison_table_lists_the_registry() {
        use std::collections::BTreeSet;
        let source = include_str!("registry.rs");
        let registered: Vec<&str> = source
            .split("d(")
            .skip(1)
            .filter_map(|rest| {
                let name = rest.trim_start();
                let end = name.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
                let name = &name[..end];
                (name.starts_with("CKM_") && name.len() > 4).then_some(name)
            })
            .collect();
        assert_eq!(registered.len(), REGISTRY.len());
        let registered: BTreeSet<&str> = registered.into_iter().collect();
        assert_eq!(
            registered.len(),
            REGISTRY.len(),
            "a mechanism registered twice"
        );
        let doc = include_str!("../../../docs/mechanisms.md");
        let table = doc
            .split("## Ours vs SoftHSM2 vs kryoptic")
            .nth(1)
            .expect("the comparison section");
        let ours: BTreeSet<&str> = table
            .lines()
            .filter_map(|l| {
                let mut cells = l.split('|').map(str::trim).skip(1);
                let name = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
                (cells.next()? == "✓").then_some(name)
            })
            .collect();
        assert_eq!(ours, registered);
    }
}
