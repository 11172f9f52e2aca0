//! The second crypto back end (cargo feature `aws-lc`): RSA and ECDSA
//! P-256/P-384/P-521, ECDH and X25519 through aws-lc-rs (AWS-LC:
//! constant-time RSA).
//!
//! The mechanism files keep validating parameters and lengths exactly as in
//! the default build; they hand the already-checked value to this file when
//! the key carries an aws-lc key and the combination is one aws-lc-rs can
//! compute, and fall back to the pure-Rust crates otherwise:
//!
//! - RSA keys of 2048 to 8192 bits get aws-lc keys (smaller keys: rsa crate).
//! - PKCS #1 v1.5 signatures with SHA-256/384/512, including `CKM_RSA_PKCS`
//!   over a DigestInfo of those hashes; SHA-1/SHA-224 and any other
//!   `CKM_RSA_PKCS` input fall back.
//! - PSS with SHA-256/384/512, MGF1 over the same hash and a salt as long as
//!   the hash; other salt lengths (and SHA-1/SHA-224) fall back.
//! - OAEP with SHA-1/256/384/512 and MGF1 over the same hash, any label;
//!   SHA-224 or a different MGF1 hash falls back.
//! - `CKM_RSA_X_509` and PKCS #1 v1.5 encryption always use the rsa crate.
//! - Key-pair generation of 2048/3072/4096/8192-bit keys with e = 65537; other
//!   exponents fall back.
//! - ECDSA on P-256, P-384 and P-521: every mechanism, raw `CKM_ECDSA`
//!   included, signs and verifies the prehash (the leftmost field-size bytes
//!   of the left-padded value, the same integer the ECDSA primitive uses;
//!   on P-521 the prehash integer as a 64-byte SHA-512 value when it fits,
//!   else the RustCrypto path). Signatures are randomized (not RFC 6979).
//! - `CKM_ECDH1_DERIVE` on P-256, P-384, P-521 and X25519 (the shared
//!   value; the KDFs stay in the mechanism files), and key-pair generation
//!   on those curves.
//!
//! Keys are parsed once, when the object's `KeyMaterial` is built (for key
//! agreement: on first use), and cached with it.

use crate::error::{Result, err};
use aws_lc_rs::agreement;
use aws_lc_rs::digest::{self, Digest};
use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{
    OAEP_SHA1_MGF1SHA1, OAEP_SHA256_MGF1SHA256, OAEP_SHA384_MGF1SHA384, OAEP_SHA512_MGF1SHA512,
    OaepAlgorithm, OaepPrivateDecryptingKey, OaepPublicEncryptingKey, PrivateDecryptingKey,
    PublicEncryptingKey,
};
use aws_lc_rs::signature::{self, EcdsaKeyPair, ParsedPublicKey, RsaEncoding, RsaKeyPair};
use cryptoki_sys::*;
use std::sync::OnceLock;
use zeroize::Zeroizing;

/// Smallest RSA modulus aws-lc-rs signs and verifies with, in bits.
const RSA_MIN_BITS: usize = 2048;
/// Largest, in bits.
const RSA_MAX_BITS: usize = 8192;

/// The hashes aws-lc-rs offers for RSA signatures (PKCS #1 v1.5 and PSS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SigHash {
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl SigHash {
    /// From a digest mechanism.
    pub fn from_mech(m: CK_MECHANISM_TYPE) -> Option<SigHash> {
        Some(match m {
            CKM_SHA256 => SigHash::Sha256,
            CKM_SHA384 => SigHash::Sha384,
            CKM_SHA512 => SigHash::Sha512,
            _ => return None,
        })
    }

    fn algorithm(self) -> &'static digest::Algorithm {
        match self {
            SigHash::Sha256 => &digest::SHA256,
            SigHash::Sha384 => &digest::SHA384,
            SigHash::Sha512 => &digest::SHA512,
        }
    }

    fn index(self, pss: bool) -> usize {
        let i = match self {
            SigHash::Sha256 => 0,
            SigHash::Sha384 => 1,
            SigHash::Sha512 => 2,
        };
        if pss { i + 3 } else { i }
    }

    fn encoding(self, pss: bool) -> &'static dyn RsaEncoding {
        match (self, pss) {
            (SigHash::Sha256, false) => &signature::RSA_PKCS1_SHA256,
            (SigHash::Sha384, false) => &signature::RSA_PKCS1_SHA384,
            (SigHash::Sha512, false) => &signature::RSA_PKCS1_SHA512,
            (SigHash::Sha256, true) => &signature::RSA_PSS_SHA256,
            (SigHash::Sha384, true) => &signature::RSA_PSS_SHA384,
            (SigHash::Sha512, true) => &signature::RSA_PSS_SHA512,
        }
    }

    fn parameters(self, pss: bool) -> &'static signature::RsaParameters {
        match (self, pss) {
            (SigHash::Sha256, false) => &signature::RSA_PKCS1_2048_8192_SHA256,
            (SigHash::Sha384, false) => &signature::RSA_PKCS1_2048_8192_SHA384,
            (SigHash::Sha512, false) => &signature::RSA_PKCS1_2048_8192_SHA512,
            (SigHash::Sha256, true) => &signature::RSA_PSS_2048_8192_SHA256,
            (SigHash::Sha384, true) => &signature::RSA_PSS_2048_8192_SHA384,
            (SigHash::Sha512, true) => &signature::RSA_PSS_2048_8192_SHA512,
        }
    }
}

/// The DigestInfo prefixes (RFC 8017 §9.2 note 1) of the hashes above.
const DIGEST_INFO: [(SigHash, &[u8]); 3] = [
    (
        SigHash::Sha256,
        &[
            0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
            0x01, 0x05, 0x00, 0x04, 0x20,
        ],
    ),
    (
        SigHash::Sha384,
        &[
            0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
            0x02, 0x05, 0x00, 0x04, 0x30,
        ],
    ),
    (
        SigHash::Sha512,
        &[
            0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
            0x03, 0x05, 0x00, 0x04, 0x40,
        ],
    ),
];

/// The hash and digest inside a DigestInfo of SHA-256/384/512 (the input
/// of `CKM_RSA_PKCS` signatures), if it is one.
pub fn split_digest_info(value: &[u8]) -> Option<(SigHash, &[u8])> {
    DIGEST_INFO.iter().find_map(|(h, prefix)| {
        let rest = value.strip_prefix(*prefix)?;
        (rest.len() == h.algorithm().output_len()).then_some((*h, rest))
    })
}

fn import(digest: &[u8], hash: SigHash) -> Option<Digest> {
    Digest::import_less_safe(digest, hash.algorithm()).ok()
}

/// The OAEP algorithm for a hash and an MGF1 hash (both as digest mechanisms).
fn oaep_algorithm(
    hash: CK_MECHANISM_TYPE,
    mgf_hash: CK_MECHANISM_TYPE,
) -> Option<&'static OaepAlgorithm> {
    Some(match (hash, mgf_hash) {
        (CKM_SHA_1, CKM_SHA_1) => &OAEP_SHA1_MGF1SHA1,
        (CKM_SHA256, CKM_SHA256) => &OAEP_SHA256_MGF1SHA256,
        (CKM_SHA384, CKM_SHA384) => &OAEP_SHA384_MGF1SHA384,
        (CKM_SHA512, CKM_SHA512) => &OAEP_SHA512_MGF1SHA512,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// RSA

/// An RSA private key parsed by aws-lc (signing and OAEP decryption).
pub struct RsaPrivate {
    signer: RsaKeyPair,
    decrypter: OaepPrivateDecryptingKey,
}

impl RsaPrivate {
    /// From PKCS #8 DER; `None` for keys aws-lc-rs does not take (size).
    pub fn from_pkcs8(der: &[u8], bits: usize) -> Option<RsaPrivate> {
        if !(RSA_MIN_BITS..=RSA_MAX_BITS).contains(&bits) {
            return None;
        }
        let signer = RsaKeyPair::from_pkcs8(der).ok()?;
        let decrypter =
            OaepPrivateDecryptingKey::new(PrivateDecryptingKey::from_pkcs8(der).ok()?).ok()?;
        Some(RsaPrivate { signer, decrypter })
    }

    /// Signs `digest` (already computed, of `hash`) with PKCS #1 v1.5
    /// (`pss` false) or PSS with a salt as long as the hash. `None`: not
    /// possible here, fall back.
    pub fn sign_digest(&self, hash: SigHash, pss: bool, digest: &[u8]) -> Option<Result<Vec<u8>>> {
        let digest = import(digest, hash)?;
        let mut out = vec![0u8; self.signer.public_modulus_len()];
        Some(
            self.signer
                .sign_digest(hash.encoding(pss), &digest, &mut out)
                .map(|()| out)
                .map_err(|_| err(CKR_FUNCTION_FAILED)),
        )
    }

    /// OAEP decryption (`hash`, `mgf_hash`: digest mechanisms); `None` for parameters aws-lc-rs does not offer.
    pub fn oaep_decrypt(
        &self,
        hash: CK_MECHANISM_TYPE,
        mgf_hash: CK_MECHANISM_TYPE,
        label: &[u8],
        data: &[u8],
    ) -> Option<Result<Zeroizing<Vec<u8>>>> {
        let alg = oaep_algorithm(hash, mgf_hash)?;
        let mut out = Zeroizing::new(vec![0u8; self.decrypter.min_output_size()]);
        let label = (!label.is_empty()).then_some(label);
        Some(
            match self.decrypter.decrypt(alg, data, &mut out, label) {
                Ok(plain) => Ok(plain.len()),
                Err(_) => Err(err(CKR_ENCRYPTED_DATA_INVALID)),
            }
            .map(|n| {
                out.truncate(n);
                out
            }),
        )
    }
}

/// An RSA public key parsed by aws-lc: one parsed key per signature
/// algorithm, each made on first use, and the OAEP encryption key.
pub struct RsaPublic {
    spki: Vec<u8>,
    verifiers: [OnceLock<Option<ParsedPublicKey>>; 6],
    encrypter: OaepPublicEncryptingKey,
}

impl RsaPublic {
    /// From SubjectPublicKeyInfo DER; `None` for keys aws-lc-rs does not take.
    pub fn from_spki(der: &[u8], bits: usize) -> Option<RsaPublic> {
        if !(RSA_MIN_BITS..=RSA_MAX_BITS).contains(&bits) {
            return None;
        }
        let encrypter =
            OaepPublicEncryptingKey::new(PublicEncryptingKey::from_der(der).ok()?).ok()?;
        Some(RsaPublic {
            spki: der.to_vec(),
            verifiers: Default::default(),
            encrypter,
        })
    }

    /// Verifies a PKCS #1 v1.5 or PSS (salt as long as the hash) signature
    /// over `digest`. `None`: fall back.
    pub fn verify_digest(
        &self,
        hash: SigHash,
        pss: bool,
        digest: &[u8],
        signature: &[u8],
    ) -> Option<Result<()>> {
        let digest = import(digest, hash)?;
        let key = self.verifiers[hash.index(pss)]
            .get_or_init(|| ParsedPublicKey::new(hash.parameters(pss), &self.spki).ok())
            .as_ref()?;
        Some(
            key.verify_digest_sig(&digest, signature)
                .map_err(|_| err(CKR_SIGNATURE_INVALID)),
        )
    }

    /// OAEP encryption into `out` (the modulus size); `None`: fall back.
    pub fn oaep_encrypt(
        &self,
        hash: CK_MECHANISM_TYPE,
        mgf_hash: CK_MECHANISM_TYPE,
        label: &[u8],
        data: &[u8],
    ) -> Option<Result<Vec<u8>>> {
        let alg = oaep_algorithm(hash, mgf_hash)?;
        let mut out = vec![0u8; self.encrypter.ciphertext_size()];
        let label = (!label.is_empty()).then_some(label);
        Some(
            match self.encrypter.encrypt(alg, data, &mut out, label) {
                Ok(c) => Ok(c.len()),
                Err(_) => Err(err(CKR_FUNCTION_FAILED)),
            }
            .map(|n| {
                out.truncate(n);
                out
            }),
        )
    }
}

/// Generates an RSA key of `bits` bits with e = 65537 and returns its
/// PKCS #8 DER; `None` for sizes aws-lc-rs does not generate.
pub fn generate_rsa_pkcs8(bits: usize) -> Option<Result<Zeroizing<Vec<u8>>>> {
    use aws_lc_rs::rsa::KeySize;
    let size = match bits {
        2048 => KeySize::Rsa2048,
        3072 => KeySize::Rsa3072,
        4096 => KeySize::Rsa4096,
        8192 => KeySize::Rsa8192,
        _ => return None,
    };
    Some(
        RsaKeyPair::generate(size)
            .and_then(|k| k.as_der())
            .map(|der| Zeroizing::new(der.as_ref().to_vec()))
            .map_err(|_| err(CKR_FUNCTION_FAILED)),
    )
}

// ---------------------------------------------------------------------------
// ECDSA

fn ec_algorithms(
    field_len: usize,
) -> Option<(
    &'static signature::EcdsaSigningAlgorithm,
    &'static signature::EcdsaVerificationAlgorithm,
    SigHash,
)> {
    Some(match field_len {
        32 => (
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &signature::ECDSA_P256_SHA256_FIXED,
            SigHash::Sha256,
        ),
        48 => (
            &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
            &signature::ECDSA_P384_SHA384_FIXED,
            SigHash::Sha384,
        ),
        66 => (
            &signature::ECDSA_P521_SHA512_FIXED_SIGNING,
            &signature::ECDSA_P521_SHA512_FIXED,
            SigHash::Sha512,
        ),
        _ => return None,
    })
}

/// The value ECDSA signs for a (left-padded, at least field-size) prehash:
/// its leftmost field-size bytes (the orders of P-256 and P-384 have as
/// many bits as the field), as a digest of the curve's own hash. On P-521
/// the prehash is already the integer (at most 521 bits, unpadded): a
/// 64-byte SHA-512 value is read whole (512 < 521 bits), so it goes to
/// aws-lc left-padded to 64 bytes when it fits there, else `None`.
fn ec_digest(z: &[u8], field_len: usize, hash: SigHash) -> Option<Digest> {
    if field_len == 66 {
        let (high, low) = z.split_at(z.len().saturating_sub(64));
        if high.iter().any(|b| *b != 0) {
            return None;
        }
        let mut padded = [0u8; 64];
        padded[64 - low.len()..].copy_from_slice(low);
        return import(&padded, hash);
    }
    import(z.get(..field_len)?, hash)
}

/// A P-256 / P-384 / P-521 private key parsed by aws-lc.
pub struct EcPrivate {
    key: EcdsaKeyPair,
    field_len: usize,
    hash: SigHash,
    /// The same key for `CKM_ECDH1_DERIVE`.
    pub agreement: AgreementKey,
}

impl EcPrivate {
    /// From the fixed-size scalar and the uncompressed public point.
    pub fn new(field_len: usize, scalar: &[u8], point: &[u8]) -> Option<EcPrivate> {
        let (alg, _, hash) = ec_algorithms(field_len)?;
        let key = EcdsaKeyPair::from_private_key_and_public_key(alg, scalar, point).ok()?;
        Some(EcPrivate {
            key,
            field_len,
            hash,
            agreement: AgreementKey::new(EcdhCurve::of_field_len(field_len)?),
        })
    }

    /// Signs the prehash `z` (r ‖ s); `None`: fall back.
    pub fn sign_prehash(&self, z: &[u8]) -> Option<Result<Vec<u8>>> {
        let digest = ec_digest(z, self.field_len, self.hash)?;
        Some(
            self.key
                .sign_digest(&digest)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| err(CKR_FUNCTION_FAILED)),
        )
    }
}

/// The curves whose `CKM_ECDH1_DERIVE` goes through aws-lc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcdhCurve {
    /// NIST P-256.
    P256,
    /// NIST P-384.
    P384,
    /// NIST P-521.
    P521,
    /// Curve25519 (X25519, RFC 7748).
    X25519,
}

impl EcdhCurve {
    /// The Weierstrass curve of a field size in bytes.
    fn of_field_len(field_len: usize) -> Option<EcdhCurve> {
        Some(match field_len {
            32 => EcdhCurve::P256,
            48 => EcdhCurve::P384,
            66 => EcdhCurve::P521,
            _ => return None,
        })
    }

    fn algorithm(self) -> &'static agreement::Algorithm {
        match self {
            EcdhCurve::P256 => &agreement::ECDH_P256,
            EcdhCurve::P384 => &agreement::ECDH_P384,
            EcdhCurve::P521 => &agreement::ECDH_P521,
            EcdhCurve::X25519 => &agreement::X25519,
        }
    }
}

/// A private key as aws-lc's key agreement takes it, parsed on the key's
/// first agreement and then kept with the object's key material (parsing
/// computes the public point and checks it, two fixed-base
/// multiplications: a P-256 derive took 1.3 times as long when it parsed the
/// key every call, docs/benchmarking.md). Keys never used
/// for a derive never pay for it. aws-lc clears its copy of the scalar when
/// the key material is dropped.
pub struct AgreementKey {
    curve: EcdhCurve,
    key: OnceLock<agreement::PrivateKey>,
}

impl AgreementKey {
    /// A key of `curve`, parsed on first use.
    pub fn new(curve: EcdhCurve) -> AgreementKey {
        AgreementKey {
            curve,
            key: OnceLock::new(),
        }
    }

    /// ECDH (SP 800-56A §5.7.1.2, the primitive of `CKM_ECDH1_DERIVE`) or
    /// X25519 (RFC 7748 §6.1): the shared x-coordinate (u-coordinate), as
    /// long as the field. `scalar` gives the private key's big-endian
    /// fixed-size scalar (X25519: its 32 bytes) the first time; `peer` is an
    /// uncompressed SEC1 point (X25519: 32 bytes). aws-lc checks that the
    /// point lies on the curve and, for X25519, refuses an all-zero result
    /// (a peer point of small order): both are `CKR_MECHANISM_PARAM_INVALID`.
    pub fn agree(
        &self,
        scalar: impl FnOnce() -> Zeroizing<Vec<u8>>,
        peer: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>> {
        let alg = self.curve.algorithm();
        let private = match self.key.get() {
            Some(k) => k,
            None => {
                // The parse reaches deep (P-521: 131 KiB of stack, holding
                // the scalar): wiped here, so C_DeriveKey needs no deeper
                // wipe than other calls.
                let parsed = crate::hygiene::wiping_deep(|| {
                    agreement::PrivateKey::from_private_key(alg, &scalar())
                })
                .map_err(|_| err(CKR_FUNCTION_FAILED))?;
                // A racing thread may have set it first: either is the same key.
                let _ = self.key.set(parsed);
                self.key.get().ok_or(err(CKR_GENERAL_ERROR))?
            }
        };
        agreement::agree(
            private,
            agreement::UnparsedPublicKey::new(alg, peer),
            err(CKR_MECHANISM_PARAM_INVALID),
            |x| Ok(Zeroizing::new(x.to_vec())),
        )
    }
}

/// A new key pair on `curve` (PKCS #11 `CKM_EC_KEY_PAIR_GEN` /
/// `CKM_EC_MONTGOMERY_KEY_PAIR_GEN`), generated by aws-lc from its
/// per-thread CTR-DRBG (seeded from the operating system, reseeded after a
/// fork or a VM snapshot): the private key as its big-endian fixed-size
/// scalar (X25519: its 32 bytes) and the uncompressed public point (X25519:
/// the u-coordinate). One fixed-base multiplication; parsing a scalar drawn
/// elsewhere costs two (aws-lc checks the key it builds).
pub fn generate(curve: EcdhCurve) -> Result<(Zeroizing<Vec<u8>>, Vec<u8>)> {
    use aws_lc_rs::encoding::{AsBigEndian, Curve25519SeedBin, EcPrivateKeyBin};
    let failed = |_| err(CKR_FUNCTION_FAILED);
    let key = agreement::PrivateKey::generate(curve.algorithm()).map_err(failed)?;
    let scalar = if curve == EcdhCurve::X25519 {
        let bin: Curve25519SeedBin<'static> = key.as_be_bytes().map_err(failed)?;
        Zeroizing::new(bin.as_ref().to_vec())
    } else {
        let bin: EcPrivateKeyBin<'static> = key.as_be_bytes().map_err(failed)?;
        Zeroizing::new(bin.as_ref().to_vec())
    };
    let public = key.compute_public_key().map_err(failed)?;
    Ok((scalar, public.as_ref().to_vec()))
}

/// A P-256 / P-384 / P-521 public key parsed by aws-lc.
pub struct EcPublic {
    key: ParsedPublicKey,
    field_len: usize,
    hash: SigHash,
}

impl EcPublic {
    /// From the uncompressed point.
    pub fn new(field_len: usize, point: &[u8]) -> Option<EcPublic> {
        let (_, alg, hash) = ec_algorithms(field_len)?;
        let key = ParsedPublicKey::new(alg, point).ok()?;
        Some(EcPublic {
            key,
            field_len,
            hash,
        })
    }

    /// Verifies r ‖ s over the prehash `z`; `None`: fall back.
    pub fn verify_prehash(&self, z: &[u8], signature: &[u8]) -> Option<Result<()>> {
        let digest = ec_digest(z, self.field_len, self.hash)?;
        Some(
            self.key
                .verify_digest_sig(&digest, signature)
                .map_err(|_| err(CKR_SIGNATURE_INVALID)),
        )
    }
}

/// AES-GCM with a 96-bit nonce and a 128-bit tag (SP 800-38D) through
/// aws-lc, for one AES key; aws-lc clears the key schedule when dropped.
pub struct AesGcmKey(aws_lc_rs::aead::LessSafeKey);

impl AesGcmKey {
    /// The key for a 16-, 24- or 32-byte AES key.
    pub fn new(key: &[u8]) -> Option<Self> {
        use aws_lc_rs::aead::{AES_128_GCM, AES_192_GCM, AES_256_GCM, LessSafeKey, UnboundKey};
        let algorithm = match key.len() {
            16 => &AES_128_GCM,
            24 => &AES_192_GCM,
            32 => &AES_256_GCM,
            _ => return None,
        };
        UnboundKey::new(algorithm, key)
            .ok()
            .map(|k| AesGcmKey(LessSafeKey::new(k)))
    }

    /// Encrypts `body` in place; the 16-byte tag.
    pub fn seal_in_place(&self, nonce: &[u8; 12], aad: &[u8], body: &mut [u8]) -> Result<[u8; 16]> {
        use aws_lc_rs::aead::{Aad, Nonce};
        let tag = self
            .0
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(*nonce), Aad::from(aad), body)
            .map_err(|_| err(CKR_DATA_LEN_RANGE))?;
        let mut out = [0u8; 16];
        out.copy_from_slice(tag.as_ref());
        Ok(out)
    }

    /// Decrypts `body` in place if the 16-byte `tag` verifies; on false,
    /// `body` holds unspecified bytes the caller must clear.
    pub fn open_in_place(&self, nonce: &[u8; 12], aad: &[u8], tag: &[u8], body: &mut [u8]) -> bool {
        use aws_lc_rs::aead::{Aad, Nonce};
        self.0
            .open_in_place_separate_tag(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(aad),
                tag,
                body,
            )
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_info_is_split() {
        let d = [7u8; 32];
        let v = [DIGEST_INFO[0].1, &d].concat();
        assert_eq!(split_digest_info(&v), Some((SigHash::Sha256, &d[..])));
        assert_eq!(split_digest_info(&v[1..]), None);
        assert_eq!(split_digest_info(&v[..v.len() - 1]), None);
    }
}
