//! The algorithms and keys operations are built from: signature, cipher,
//! hash, MAC, key-agreement and wrapping algorithms, the generic functions,
//! the scaling ops and the key an op needs. Plain enums; the family file of
//! each implements its own methods (`derive.rs` for [`DeriveAlg`], …).

use cryptoki_sys::{
    CK_ULONG, CKP_ML_DSA_44, CKP_ML_DSA_65, CKP_ML_DSA_87, CKP_ML_KEM_512, CKP_ML_KEM_768,
    CKP_ML_KEM_1024,
};

/// DER of the printable string "edwards25519" (accepted by SoftHSM2).
pub const ED25519_PRINTABLE: &[u8] = b"\x13\x0cedwards25519";

/// DER of the printable string "curve25519" (X25519 parameters some modules take).
pub const X25519_PRINTABLE: &[u8] = b"\x13\x0acurve25519";

/// DER of the OID 1.3.101.110 (id-X25519).
pub const X25519_OID: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x6e];

/// DER of the OID 1.3.101.112 (id-Ed25519).
pub const ED25519_OID: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];

/// DER of the OID of P-256 (1.2.840.10045.3.1.7).
pub const P256_OID: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

/// DER of the OID of P-384 (1.3.132.0.34).
pub const P384_OID: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];

/// DER of the OID of P-521 (1.3.132.0.35).
pub const P521_OID: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23];

/// DER of the OID of secp256k1 (1.3.132.0.10).
pub const SECP256K1_OID: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a];

/// Signature algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SigAlg {
    /// Ed25519 (CKM_EDDSA).
    Ed25519,
    /// ECDSA over a prehashed digest (CKM_ECDSA) on a curve.
    Ecdsa(Curve),
    /// ECDSA with the hash in the mechanism (`CKM_ECDSA_SHA256`, …) over a
    /// message, on a curve.
    EcdsaHash(Curve, HashAlg),
    /// RSA PKCS#1 v1.5 with SHA-256 (CKM_SHA256_RSA_PKCS).
    RsaPkcs(u32),
    /// RSA-PSS with SHA-256, MGF1-SHA256, 32-byte salt.
    RsaPss(u32),
    /// Pure ML-DSA (FIPS 204; PKCS#11 3.2 `CKM_ML_DSA`, no parameter: empty
    /// context, hedged) of a parameter set.
    MlDsa(MlDsaSet),
    /// Pure SLH-DSA (FIPS 205; PKCS#11 3.2 `CKM_SLH_DSA`, no parameter:
    /// empty context, hedged) of a parameter set.
    SlhDsa(SlhDsaSet),
}

/// An SLH-DSA parameter set (FIPS 205 §11, Table 2; `CKA_PARAMETER_SET`
/// `CKP_SLH_DSA_*`): its hash family, security level and speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlhDsaSet {
    /// SHAKE (`true`) or SHA-2.
    pub shake: bool,
    /// Security level: 128, 192 or 256.
    pub bits: u16,
    /// The fast ("f", larger signatures) or small ("s") variant.
    pub fast: bool,
}

impl SlhDsaSet {
    /// Every set, in `CKP_SLH_DSA_*` order (PKCS#11 3.2: SHA2-128S = 1,
    /// SHAKE-128S, SHA2-128F, SHAKE-128F, then 192 and 256 alike).
    pub const ALL: [SlhDsaSet; 12] = {
        let mut all = [SlhDsaSet {
            shake: false,
            bits: 128,
            fast: false,
        }; 12];
        let mut i = 0;
        while i < 12 {
            all[i] = SlhDsaSet {
                shake: i % 2 == 1,
                bits: [128, 192, 256][i / 4],
                fast: i % 4 >= 2,
            };
            i += 1;
        }
        all
    };

    /// SLH-DSA-SHA2-128f.
    pub const SHA2_128F: SlhDsaSet = SlhDsaSet {
        shake: false,
        bits: 128,
        fast: true,
    };
    /// SLH-DSA-SHAKE-128f.
    pub const SHAKE_128F: SlhDsaSet = SlhDsaSet {
        shake: true,
        bits: 128,
        fast: true,
    };
    /// SLH-DSA-SHA2-128s.
    pub const SHA2_128S: SlhDsaSet = SlhDsaSet {
        shake: false,
        bits: 128,
        fast: false,
    };

    /// The id part (`slhdsa-sha2-128f`).
    pub fn id(&self) -> String {
        format!(
            "slhdsa-{}-{}{}",
            if self.shake { "shake" } else { "sha2" },
            self.bits,
            if self.fast { 'f' } else { 's' }
        )
    }

    /// The display name (`SLH-DSA-SHA2-128f`, FIPS 205's).
    pub fn title(&self) -> String {
        format!(
            "SLH-DSA-{}-{}{}",
            if self.shake { "SHAKE" } else { "SHA2" },
            self.bits,
            if self.fast { 'f' } else { 's' }
        )
    }

    /// `CKA_PARAMETER_SET` (`CKP_SLH_DSA_SHA2_128S` = 1 … `CKP_SLH_DSA_SHAKE_256F` = 12).
    pub fn parameter_set(&self) -> CK_ULONG {
        let level = match self.bits {
            128 => 0,
            192 => 4,
            _ => 8,
        };
        level + 2 * CK_ULONG::from(self.fast) + CK_ULONG::from(self.shake) + 1
    }

    /// The set of a `CKA_PARAMETER_SET` value.
    pub fn of(parameter_set: CK_ULONG) -> Option<SlhDsaSet> {
        Self::ALL
            .into_iter()
            .find(|s| s.parameter_set() == parameter_set)
    }

    /// Signature length in bytes (FIPS 205 Table 2; the same for SHA2 and
    /// SHAKE): up to 49,856 (256f).
    pub fn sig_len(&self) -> usize {
        match (self.bits, self.fast) {
            (128, false) => 7856,
            (128, true) => 17088,
            (192, false) => 16224,
            (192, true) => 35664,
            (_, false) => 29792,
            (_, true) => 49856,
        }
    }
}

/// The ML-KEM parameter sets (FIPS 203 §8, `CKA_PARAMETER_SET`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MlKemSet {
    /// ML-KEM-512 (`CKP_ML_KEM_512`).
    K512,
    /// ML-KEM-768 (`CKP_ML_KEM_768`).
    K768,
    /// ML-KEM-1024 (`CKP_ML_KEM_1024`).
    K1024,
}

impl MlKemSet {
    /// Every set, in catalogue order.
    pub const ALL: [MlKemSet; 3] = [MlKemSet::K512, MlKemSet::K768, MlKemSet::K1024];

    /// The id part (`mlkem768`).
    pub fn id(&self) -> &'static str {
        match self {
            MlKemSet::K512 => "mlkem512",
            MlKemSet::K768 => "mlkem768",
            MlKemSet::K1024 => "mlkem1024",
        }
    }

    /// The display name (`ML-KEM-768`).
    pub fn title(&self) -> &'static str {
        match self {
            MlKemSet::K512 => "ML-KEM-512",
            MlKemSet::K768 => "ML-KEM-768",
            MlKemSet::K1024 => "ML-KEM-1024",
        }
    }

    /// `CKA_PARAMETER_SET`.
    pub fn parameter_set(&self) -> CK_ULONG {
        match self {
            MlKemSet::K512 => CKP_ML_KEM_512,
            MlKemSet::K768 => CKP_ML_KEM_768,
            MlKemSet::K1024 => CKP_ML_KEM_1024,
        }
    }

    /// The set of a `CKA_PARAMETER_SET` value.
    pub fn of(parameter_set: CK_ULONG) -> Option<MlKemSet> {
        Self::ALL
            .into_iter()
            .find(|s| s.parameter_set() == parameter_set)
    }

    /// Ciphertext length in bytes (FIPS 203 Table 3).
    pub fn ciphertext_len(&self) -> usize {
        match self {
            MlKemSet::K512 => 768,
            MlKemSet::K768 => 1088,
            MlKemSet::K1024 => 1568,
        }
    }
}

/// The ML-DSA parameter sets (FIPS 204 §4, `CKA_PARAMETER_SET`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MlDsaSet {
    /// ML-DSA-44 (`CKP_ML_DSA_44`).
    L44,
    /// ML-DSA-65 (`CKP_ML_DSA_65`).
    L65,
    /// ML-DSA-87 (`CKP_ML_DSA_87`).
    L87,
}

impl MlDsaSet {
    /// Every set, in catalogue order.
    pub const ALL: [MlDsaSet; 3] = [MlDsaSet::L44, MlDsaSet::L65, MlDsaSet::L87];

    /// The id part (`mldsa65`).
    pub fn id(&self) -> &'static str {
        match self {
            MlDsaSet::L44 => "mldsa44",
            MlDsaSet::L65 => "mldsa65",
            MlDsaSet::L87 => "mldsa87",
        }
    }

    /// The display name (`ML-DSA-65`).
    pub fn title(&self) -> &'static str {
        match self {
            MlDsaSet::L44 => "ML-DSA-44",
            MlDsaSet::L65 => "ML-DSA-65",
            MlDsaSet::L87 => "ML-DSA-87",
        }
    }

    /// `CKA_PARAMETER_SET`.
    pub fn parameter_set(&self) -> CK_ULONG {
        match self {
            MlDsaSet::L44 => CKP_ML_DSA_44,
            MlDsaSet::L65 => CKP_ML_DSA_65,
            MlDsaSet::L87 => CKP_ML_DSA_87,
        }
    }

    /// The set of a `CKA_PARAMETER_SET` value.
    pub fn of(parameter_set: CK_ULONG) -> Option<MlDsaSet> {
        Self::ALL
            .into_iter()
            .find(|s| s.parameter_set() == parameter_set)
    }

    /// Signature length in bytes (FIPS 204 Table 2).
    pub fn sig_len(&self) -> usize {
        match self {
            MlDsaSet::L44 => 2420,
            MlDsaSet::L65 => 3309,
            MlDsaSet::L87 => 4627,
        }
    }
}

/// The Weierstrass curves of the ECDSA (and ECDH) ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Curve {
    /// NIST P-256 (secp256r1).
    P256,
    /// NIST P-384.
    P384,
    /// NIST P-521.
    P521,
    /// secp256k1 (SEC 2).
    Secp256k1,
}

impl Curve {
    /// Every curve, in catalogue order.
    pub const ALL: [Curve; 4] = [Curve::P256, Curve::P384, Curve::P521, Curve::Secp256k1];

    /// The id part (`p256`, `secp256k1`).
    pub fn id(&self) -> &'static str {
        match self {
            Curve::P256 => "p256",
            Curve::P384 => "p384",
            Curve::P521 => "p521",
            Curve::Secp256k1 => "secp256k1",
        }
    }

    /// The name in titles (`P-256`).
    pub fn title(&self) -> &'static str {
        match self {
            Curve::P256 => "P-256",
            Curve::P384 => "P-384",
            Curve::P521 => "P-521",
            Curve::Secp256k1 => "secp256k1",
        }
    }

    /// Size of the curve's order in bits (the key size of `C_GetMechanismInfo`).
    pub fn bits(&self) -> u32 {
        match self {
            Curve::P256 | Curve::Secp256k1 => 256,
            Curve::P384 => 384,
            Curve::P521 => 521,
        }
    }

    /// DER of the curve's OID (`CKA_EC_PARAMS`).
    pub fn oid(&self) -> &'static [u8] {
        match self {
            Curve::P256 => P256_OID,
            Curve::P384 => P384_OID,
            Curve::P521 => P521_OID,
            Curve::Secp256k1 => SECP256K1_OID,
        }
    }

    /// The curve of `CKA_EC_PARAMS` `params`, if it is one of these.
    pub fn from_params(params: &[u8]) -> Option<Curve> {
        Curve::ALL.into_iter().find(|c| c.oid() == params)
    }
}

/// AES modes of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AesMode {
    /// CKM_AES_ECB (no padding).
    Ecb,
    /// CKM_AES_CBC (no padding).
    Cbc,
    /// CKM_AES_CBC_PAD (PKCS#7 padding).
    CbcPad,
    /// CKM_AES_CTR, a 32-bit counter.
    Ctr,
    /// CKM_AES_GCM, 96-bit IV, no AAD, 128-bit tag.
    Gcm,
    /// CKM_AES_CCM, 12-byte nonce, no AAD, 16-byte MAC (not in [`AesMode::ALL`]:
    /// an AES-256 encrypt op only).
    Ccm,
    /// CKM_AES_CTS (CBC with ciphertext stealing), 16-byte IV (not in
    /// [`AesMode::ALL`]: an AES-256 encrypt op only).
    Cts,
}

impl AesMode {
    /// Every mode, in catalogue order.
    pub const ALL: [AesMode; 5] = [
        AesMode::Ecb,
        AesMode::Cbc,
        AesMode::CbcPad,
        AesMode::Ctr,
        AesMode::Gcm,
    ];
}

/// AES key sizes of the catalogue, in bytes.
pub const AES_KEY_BYTES: [u32; 3] = [16, 24, 32];

/// Ciphers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CipherAlg {
    /// AES with an n-byte key in a mode.
    Aes(AesMode, u32),
    /// Triple-DES in ECB or CBC mode (no padding), a 24-byte key.
    Des3(AesMode),
    /// RSA-OAEP with SHA-1 and MGF1-SHA1.
    RsaOaepSha1(u32),
    /// RSA-OAEP with SHA-256 and MGF1-SHA256.
    RsaOaepSha256(u32),
    /// ChaCha20-Poly1305 (RFC 8439), 12-byte nonce, no AAD, a 32-byte key.
    ChaCha20Poly1305,
}

/// Hash functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlg {
    /// SHA-1 (legacy).
    Sha1,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
    /// SHA3-256 (FIPS 202).
    Sha3_256,
    /// SHA3-512 (FIPS 202).
    Sha3_512,
}

/// MACs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MacAlg {
    /// HMAC-SHA256.
    HmacSha256,
    /// HMAC-SHA512.
    HmacSha512,
    /// HMAC-SHA3-256.
    HmacSha3_256,
    /// AES-CMAC.
    AesCmac,
}

/// What a scaling op times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PopOp {
    /// Find one object by `CKA_LABEL`.
    FindLabel,
    /// Find one object by `CKA_CLASS` and `CKA_ID`.
    FindId,
    /// Create one token object.
    Create,
    /// Destroy one token object.
    Destroy,
    /// Generate a token key pair.
    KeyPair(KeySpec),
    /// `C_Initialize` in a new process.
    ColdStart,
    /// `C_Initialize` and the first `C_OpenSession` in a new process.
    ColdOpen,
}

/// A key agreement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeriveAlg {
    /// ECDH on a Weierstrass curve.
    Ecdh(Curve),
    /// X25519.
    X25519,
    /// Finite-field Diffie-Hellman (`CKM_DH_PKCS_DERIVE`) in the RFC 7919
    /// ffdhe2048 group.
    Ffdhe2048,
}

/// A wrapping mechanism with its wrapping key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WrapAlg {
    /// AES key wrap (RFC 3394) under an AES key of n bytes.
    AesKw(u32),
    /// AES key wrap with padding (RFC 5649) under an AES key of n bytes.
    AesKwp(u32),
    /// RSA-OAEP (SHA-256, MGF1-SHA256) under an RSA key pair of n bits.
    RsaOaep(u32),
}

/// The function a generic op times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GenericFn {
    /// `C_Sign` (signatures and MACs).
    Sign,
    /// `C_Verify`.
    Verify,
    /// `C_Encrypt`.
    Encrypt,
    /// `C_Decrypt`.
    Decrypt,
    /// `C_Digest` (no key).
    Digest,
    /// `C_EncapsulateKey` (PKCS#11 3.2 §5.18).
    Encapsulate,
    /// `C_DecapsulateKey` (PKCS#11 3.2 §5.18).
    Decapsulate,
}

/// A key an operation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeySpec {
    /// Ed25519 key pair.
    Ed25519,
    /// EC key pair on a Weierstrass curve (ECDSA, ECDH).
    Ec(Curve),
    /// RSA key pair of n bits (public exponent 65537).
    Rsa(u32),
    /// AES key of n bytes (see [`secret_key`] for how it is made).
    Aes(u32),
    /// Generic secret (HMAC) key of n bytes (see [`secret_key`] for how it is made).
    GenericSecret(u32),
    /// Triple-DES key (24 bytes, `CKM_DES3_KEY_GEN`).
    Des3,
    /// ChaCha20 key (32 bytes, `CKM_CHACHA20_KEY_GEN`).
    ChaCha20,
    /// EC key pair for ECDH (`CKA_DERIVE`) on a curve.
    EcDerive(Curve),
    /// X25519 key pair (`CKK_EC_MONTGOMERY`) for ECDH.
    X25519,
    /// Diffie-Hellman key pair (`CKK_DH`) in the RFC 7919 ffdhe2048 group.
    DhFfdhe2048,
    /// An AES-256 key made from a password by `CKM_PKCS5_PBKD2`
    /// (PBKDF2-HMAC-SHA256, this many iterations); only its keygen op.
    Pbkdf2Sha256(u32),
    /// AES key of n bytes that wraps and unwraps other keys.
    WrapAes(u32),
    /// RSA key pair of n bits that wraps (public) and unwraps (private) keys.
    WrapRsa(u32),
    /// ML-DSA key pair of a parameter set (PKCS#11 3.2).
    MlDsa(MlDsaSet),
    /// SLH-DSA key pair of a parameter set (PKCS#11 3.2).
    SlhDsa(SlhDsaSet),
    /// ML-KEM key pair of a parameter set (PKCS#11 3.2): the public key
    /// encapsulates, the private key decapsulates.
    MlKem(MlKemSet),
    /// The key named by `--key-label`.
    Existing,
}
