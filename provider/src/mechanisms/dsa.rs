//! DSA (mechanisms spec 3.0 §2.2; FIPS 186-4 §4), with RustCrypto's `dsa`
//! crate: the legacy set SoftHSM2 offers, for users migrating from it.
//!
//! - `CKM_DSA_PARAMETER_GEN` (§2.2.10) makes a `CKO_DOMAIN_PARAMETERS`
//!   object (§2.2.4) from `CKA_PRIME_BITS` 1024, 2048 or 3072 (and, for
//!   2048, an optional `CKA_SUBPRIME_BITS` 224 or 256, default 256): the
//!   (L, N) pairs of FIPS 186-4 §4.2 the crate's `KeySize` offers. 1024/160
//!   is legacy (SP 800-131A: verification only); it is kept for migrations.
//! - `CKM_DSA_KEY_PAIR_GEN` (§2.2.11) takes p, q, g from the public template.
//! - `CKM_DSA` (§2.2.12) signs a hash given by the caller (its leftmost
//!   |q| bits are used, FIPS 186-4 §4.6); `CKM_DSA_SHA*` (§2.2.13) hash
//!   the data (multi-part). Signatures are r ‖ s, each |q|/8 bytes.
//! - Signing is deterministic (RFC 6979, the crate's
//!   `sign_prehashed_rfc6979`), with the HMAC over the message's hash; for
//!   raw `CKM_DSA` the hash is told by the input's length (20/28/32/48/64
//!   bytes: SHA-1/224/256/384/512; any other length: SHA-256).
//!
//! Imported domain parameters are bounded before any modular arithmetic:
//! p of exactly 1024, 2048 or 3072 bits with q of 160, 224 or 256 bits in
//! a FIPS 186-4 pair, so hostile input costs at most a few 3072-bit
//! exponentiations. Checked: p odd, q | p − 1, 2 ≤ g < p and g^q = 1 mod
//! p; for public keys 2 ≤ y ≤ p − 2 and y^q = 1 mod p (SP 800-89 §5.3.1
//! partial validation); for private keys 0 < x < q. The primality of p and
//! q is not tested (the crate does not, and a wrong group only harms the
//! key's own owner).

use super::digest::DigestOp;
use super::material::GeneratedPair;
use super::material::KeyMaterial;
use super::operation::{DigestOperation, SignOperation, VerifyOperation};
use super::params::{Mechanism, Param};
use super::random::OsRng;
use crate::attributes::Attributes;
use crate::error::{Result, err};
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, NonZero, Resize};
use cryptoki_sys::*;
use dsa::{Components, KeySize, Signature, SigningKey, VerifyingKey};
use pkcs8::{DecodePrivateKey, EncodePrivateKey};
use signature::hazmat::PrehashVerifier;
use std::sync::Arc;
use zeroize::Zeroizing;

/// Largest p accepted, in bits.
pub const MAX_BITS: usize = 3072;
/// Smallest p accepted, in bits.
pub const MIN_BITS: usize = 1024;

/// The (L, N) pairs of FIPS 186-4 §4.2 that the `dsa` crate takes.
const PAIRS: [(u32, u32); 4] = [(1024, 160), (2048, 224), (2048, 256), (3072, 256)];

/// A big-endian integer without its leading zero bytes.
fn trim(bytes: &[u8]) -> &[u8] {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    &bytes[zeros..]
}

/// Bit length of a big-endian integer (leading zeros trimmed).
fn bit_len(bytes: &[u8]) -> usize {
    let t = trim(bytes);
    match t.first() {
        None => 0,
        Some(b) => 8 * t.len() - b.leading_zeros() as usize,
    }
}

/// `bytes` as an integer of `bits` precision, or `CKR_ATTRIBUTE_VALUE_INVALID`.
fn uint(bytes: &[u8], bits: u32) -> Result<BoxedUint> {
    BoxedUint::from_be_slice(trim(bytes), bits).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))
}

/// The minimal big-endian bytes of `n`.
fn be(n: &BoxedUint) -> Vec<u8> {
    let b = n.to_be_bytes();
    trim(&b).to_vec()
}

/// The minimal big-endian bytes of a secret (x); the full-width copy is
/// zeroized too.
fn be_secret(n: &BoxedUint) -> Zeroizing<Vec<u8>> {
    let b = Zeroizing::new(n.to_be_bytes());
    Zeroizing::new(trim(&b).to_vec())
}

/// Domain parameters checked as the module header says (sizes first, so no
/// arithmetic runs on an oversized value).
pub fn components(p: &[u8], q: &[u8], g: &[u8]) -> Result<Components> {
    let bad = || err(CKR_ATTRIBUTE_VALUE_INVALID);
    let (l, n) = (bit_len(p), bit_len(q));
    let (l, n) = PAIRS
        .into_iter()
        .find(|&(pl, pn)| pl as usize == l && pn as usize == n)
        .ok_or_else(bad)?;
    if bit_len(g) > l as usize {
        return Err(bad());
    }
    let (pi, qi, gi) = (uint(p, l)?, uint(q, n)?, uint(g, l)?);
    let one = BoxedUint::one_with_precision(l);
    if gi <= one {
        return Err(bad());
    }
    // q | p − 1 (public values: variable time is fine).
    let q_nz = NonZero::new(qi.clone()).into_option().ok_or_else(bad)?;
    let p_minus_1 = pi.wrapping_sub(&one);
    if !bool::from(p_minus_1.rem_vartime(&q_nz).is_zero()) {
        return Err(bad());
    }
    let c = Components::from_components(pi, qi, gi).map_err(|_| bad())?;
    // g generates the order-q subgroup: g^q = 1 mod p.
    if !bool::from(pow_mod(&c, c.g(), c.q(), true).is_one()) {
        return Err(bad());
    }
    Ok(c)
}

/// base^exp mod p; variable time only for public exponents.
fn pow_mod(c: &Components, base: &BoxedUint, exp: &BoxedUint, public: bool) -> BoxedUint {
    let params = if public {
        BoxedMontyParams::new_vartime(c.p().clone())
    } else {
        BoxedMontyParams::new(c.p().clone())
    };
    let base = base.resize(c.p().bits_precision());
    BoxedMontyForm::new(base, &params).pow(exp).retrieve()
}

/// A public key from checked components and y (2 ≤ y ≤ p − 2, y^q = 1).
fn verifying_key(c: Components, y: &[u8]) -> Result<VerifyingKey> {
    let bad = || err(CKR_ATTRIBUTE_VALUE_INVALID);
    let l = c.p().bits_precision();
    if bit_len(y) > l as usize {
        return Err(bad());
    }
    let yi = uint(y, l)?;
    let p_minus_1 = c.p().wrapping_sub(BoxedUint::one_with_precision(l));
    if yi >= p_minus_1 {
        return Err(bad());
    }
    // The crate checks y ≥ 2 and y^q = 1 mod p.
    VerifyingKey::from_components(c, yi).map_err(|_| bad())
}

/// A private key from checked components and x (0 < x < q); y = g^x mod p
/// (constant time in x).
fn signing_key(c: Components, x: &[u8]) -> Result<SigningKey> {
    let bad = || err(CKR_ATTRIBUTE_VALUE_INVALID);
    let n = c.q().bits_precision();
    if bit_len(x) > n as usize {
        return Err(bad());
    }
    let xi = Zeroizing::new(uint(x, n)?);
    let y = pow_mod(&c, c.g(), &xi, false);
    let vk = VerifyingKey::from_components(c, y).map_err(|_| bad())?;
    SigningKey::from_components(vk, (*xi).clone()).map_err(|_| bad())
}

fn get(attrs: &Attributes, ty: CK_ATTRIBUTE_TYPE) -> Result<&[u8]> {
    attrs.bytes(ty).ok_or(err(CKR_TEMPLATE_INCOMPLETE))
}

fn attr_components(attrs: &Attributes) -> Result<Components> {
    components(
        get(attrs, CKA_PRIME)?,
        get(attrs, CKA_SUBPRIME)?,
        get(attrs, CKA_BASE)?,
    )
}

fn set_components(attrs: &mut Attributes, c: &Components) {
    attrs.set_bytes(CKA_PRIME, &be(c.p()));
    attrs.set_bytes(CKA_SUBPRIME, &be(c.q()));
    attrs.set_bytes(CKA_BASE, &be(c.g()));
}

/// Checks an imported public key, private key or domain-parameters object
/// (§2.2.2–§2.2.4) and stores its integers minimally encoded (and, for
/// domain parameters, `CKA_PRIME_BITS`).
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let c = attr_components(attrs)?;
    match class {
        CKO_PUBLIC_KEY => {
            let vk = verifying_key(c.clone(), get(attrs, CKA_VALUE)?)?;
            attrs.set_bytes(CKA_VALUE, &be(vk.y()));
        }
        CKO_PRIVATE_KEY => {
            let sk = signing_key(c.clone(), get(attrs, CKA_VALUE)?)?;
            attrs.set_bytes(CKA_VALUE, &be_secret(sk.x()));
        }
        _ => attrs.set_ulong(CKA_PRIME_BITS, CK_ULONG::from(c.p().bits())),
    }
    set_components(attrs, &c);
    Ok(())
}

/// Parses a stored private key (`CKA_PRIME`, `CKA_SUBPRIME`, `CKA_BASE`, `CKA_VALUE`).
pub fn load_private(p: &[u8], q: &[u8], g: &[u8], x: &[u8]) -> Result<KeyMaterial> {
    let bad = |_| err(CKR_KEY_HANDLE_INVALID);
    let sk = signing_key(components(p, q, g).map_err(bad)?, x).map_err(bad)?;
    Ok(KeyMaterial::DsaPrivate(Box::new(sk)))
}

/// Parses a stored public key.
pub fn load_public(p: &[u8], q: &[u8], g: &[u8], y: &[u8]) -> Result<KeyMaterial> {
    let bad = |_| err(CKR_KEY_HANDLE_INVALID);
    let vk = verifying_key(components(p, q, g).map_err(bad)?, y).map_err(bad)?;
    Ok(KeyMaterial::DsaPublic(Box::new(vk)))
}

/// The key size of a parameter generation (§2.2.10): `CKA_PRIME_BITS`
/// and the optional `CKA_SUBPRIME_BITS`.
fn key_size(template: &Attributes) -> Result<KeySize> {
    let l = template
        .ulong(CKA_PRIME_BITS)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    let n = template.ulong(CKA_SUBPRIME_BITS);
    #[allow(deprecated)] // 1024/160: legacy, kept for SoftHSM2 migrations
    match (l, n) {
        (1024, None | Some(160)) => Ok(KeySize::DSA_1024_160),
        (2048, Some(224)) => Ok(KeySize::DSA_2048_224),
        (2048, None | Some(256)) => Ok(KeySize::DSA_2048_256),
        (3072, None | Some(256)) => Ok(KeySize::DSA_3072_256),
        (1024 | 2048 | 3072, Some(_)) => Err(err(CKR_TEMPLATE_INCONSISTENT)),
        _ => Err(err(CKR_KEY_SIZE_RANGE)),
    }
}

/// `CKM_DSA_PARAMETER_GEN`: new p, q, g (FIPS 186-4 A.1.1 / A.2.1 as the
/// crate implements them) as attributes of a domain-parameters object.
pub fn generate_parameters(template: &Attributes) -> Result<Attributes> {
    let size = key_size(template)?;
    let c = Components::try_generate_from_rng_with_key_size(&mut OsRng, size)
        .map_err(|_| err(CKR_FUNCTION_FAILED))?;
    let mut out = Attributes::new();
    set_components(&mut out, &c);
    out.set_ulong(CKA_PRIME_BITS, CK_ULONG::from(c.p().bits()));
    Ok(out)
}

/// The public key's attributes of the private key `sk`: p, q, g and
/// y = g^x mod p (`CKM_PUB_KEY_FROM_PRIV_KEY`).
pub fn public_attributes(sk: &SigningKey, out: &mut Attributes) {
    set_components(out, sk.verifying_key().components());
    out.set_bytes(CKA_VALUE, &be(sk.verifying_key().y()));
}

/// `CKM_DSA_KEY_PAIR_GEN` with the public template's p, q, g.
pub fn generate(public_template: &Attributes) -> Result<GeneratedPair> {
    let c = attr_components(public_template)?;
    let sk = SigningKey::try_generate_from_rng_with_components(&mut OsRng, c)
        .map_err(|_| err(CKR_FUNCTION_FAILED))?;
    let c = sk.verifying_key().components();
    let mut public = Attributes::new();
    public_attributes(&sk, &mut public);
    let mut private = Attributes::new();
    set_components(&mut private, c);
    private.set_bytes(CKA_VALUE, &be_secret(sk.x()));
    Ok(GeneratedPair {
        public,
        private,
        key_type: CKK_DSA,
    })
}

/// PKCS#8 DER of a private key (RFC 5958 with the RFC 3279 §2.3.2
/// `Dss-Parms`), for `C_WrapKey`.
pub fn to_pkcs8(p: &[u8], q: &[u8], g: &[u8], x: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    let sk = signing_key(components(p, q, g)?, x)?;
    let der = sk.to_pkcs8_der().map_err(|_| err(CKR_KEY_NOT_WRAPPABLE))?;
    Ok(Zeroizing::new(der.as_bytes().to_vec()))
}

/// Sets p, q, g and x from PKCS#8 DER (`C_UnwrapKey`), checked as an import.
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    let sk = SigningKey::from_pkcs8_der(der).map_err(|_| err(CKR_WRAPPED_KEY_INVALID))?;
    let c = sk.verifying_key().components();
    let x = be_secret(sk.x());
    // The same checks as C_CreateObject (the crate checks sizes only).
    let c =
        components(&be(c.p()), &be(c.q()), &be(c.g())).map_err(|_| err(CKR_WRAPPED_KEY_INVALID))?;
    let _ = signing_key(c.clone(), &x).map_err(|_| err(CKR_WRAPPED_KEY_INVALID))?;
    set_components(attrs, &c);
    attrs.set_bytes(CKA_VALUE, &x);
    Ok(())
}

/// The hash of a `CKM_DSA_SHA*` mechanism (`None` for raw `CKM_DSA`).
fn hash_of(mech: CK_MECHANISM_TYPE) -> Result<Option<DigestOp>> {
    Ok(match mech {
        CKM_DSA => None,
        CKM_DSA_SHA1 => Some(DigestOp::new(CKM_SHA_1)?),
        CKM_DSA_SHA224 => Some(DigestOp::new(CKM_SHA224)?),
        CKM_DSA_SHA256 => Some(DigestOp::new(CKM_SHA256)?),
        CKM_DSA_SHA384 => Some(DigestOp::new(CKM_SHA384)?),
        CKM_DSA_SHA512 => Some(DigestOp::new(CKM_SHA512)?),
        CKM_DSA_SHA3_224 => Some(DigestOp::new(CKM_SHA3_224)?),
        CKM_DSA_SHA3_256 => Some(DigestOp::new(CKM_SHA3_256)?),
        CKM_DSA_SHA3_384 => Some(DigestOp::new(CKM_SHA3_384)?),
        CKM_DSA_SHA3_512 => Some(DigestOp::new(CKM_SHA3_512)?),
        _ => return Err(err(CKR_MECHANISM_INVALID)),
    })
}

/// Longest raw `CKM_DSA` input buffered (a SHA-512 hash is 64 bytes).
const MAX_RAW: usize = 1024;

/// Message input: hashed as it comes, or for raw `CKM_DSA` the hash itself.
struct Input {
    hash: Option<DigestOp>,
    buffer: Vec<u8>,
}

impl Input {
    fn new(mech: &Mechanism<'_>) -> Result<Input> {
        if mech.param != Param::None {
            return Err(err(CKR_MECHANISM_PARAM_INVALID));
        }
        Ok(Input {
            hash: hash_of(mech.ty)?,
            buffer: Vec::new(),
        })
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        match &mut self.hash {
            Some(h) => h.update(data),
            None if self.buffer.len() + data.len() > MAX_RAW => {
                return Err(err(CKR_DATA_LEN_RANGE));
            }
            None => self.buffer.extend_from_slice(data),
        }
        Ok(())
    }

    /// The hash to sign or verify (never empty).
    fn digest(&mut self, single: Option<&[u8]>) -> Result<Zeroizing<Vec<u8>>> {
        if let Some(data) = single {
            self.update(data)?;
        }
        let z = match &mut self.hash {
            Some(h) => {
                let mut d = [0u8; 64];
                let n = h.finish(&mut d);
                d[..n].to_vec()
            }
            None => std::mem::take(&mut self.buffer),
        };
        if z.is_empty() {
            return Err(err(CKR_DATA_LEN_RANGE));
        }
        Ok(Zeroizing::new(z))
    }
}

/// Byte length of q (20, 28 or 32).
fn q_len(c: &Components) -> usize {
    c.q().bits().div_ceil(8) as usize
}

/// DSA signing (deterministic, RFC 6979).
pub struct DsaSign {
    key: Arc<KeyMaterial>,
    input: Input,
    n: usize,
}

impl DsaSign {
    /// Starts a signature with a DSA private key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let n = match &*key {
            KeyMaterial::DsaPrivate(k) => q_len(k.verifying_key().components()),
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        Ok(DsaSign {
            input: Input::new(mech)?,
            key,
            n,
        })
    }

    fn sign_z(&self, z: &[u8], out: &mut [u8]) -> Result<usize> {
        let KeyMaterial::DsaPrivate(key) = &*self.key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        let failed = |_| err(CKR_FUNCTION_FAILED);
        // RFC 6979 §3.2 runs HMAC_DRBG over the message's hash function.
        let sig = match z.len() {
            20 => key.sign_prehashed_rfc6979::<sha1::Sha1>(z),
            28 => key.sign_prehashed_rfc6979::<sha2::Sha224>(z),
            48 => key.sign_prehashed_rfc6979::<sha2::Sha384>(z),
            64 => key.sign_prehashed_rfc6979::<sha2::Sha512>(z),
            _ => key.sign_prehashed_rfc6979::<sha2::Sha256>(z),
        }
        .map_err(failed)?;
        let n = self.n;
        let dst = out.get_mut(..2 * n).ok_or(err(CKR_FUNCTION_FAILED))?;
        for (half, v) in dst.chunks_mut(n).zip([sig.r(), sig.s()]) {
            let b = v.to_be_bytes();
            half.copy_from_slice(&b[b.len() - n..]);
        }
        Ok(2 * n)
    }
}

impl SignOperation for DsaSign {
    fn output_len(&self) -> usize {
        2 * self.n
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let z = self.input.digest(Some(data))?;
        self.sign_z(&z, out)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.input.update(data)
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let z = self.input.digest(None)?;
        self.sign_z(&z, out)
    }
}

/// DSA verification.
pub struct DsaVerify {
    key: Arc<KeyMaterial>,
    input: Input,
}

impl DsaVerify {
    /// Starts a verification with a DSA public key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        if !matches!(&*key, KeyMaterial::DsaPublic(_)) {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        }
        Ok(DsaVerify {
            input: Input::new(mech)?,
            key,
        })
    }

    fn verify_z(&self, z: &[u8], signature: &[u8]) -> Result<()> {
        let KeyMaterial::DsaPublic(key) = &*self.key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        let n = q_len(key.components());
        if signature.len() != 2 * n {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        let invalid = || err(CKR_SIGNATURE_INVALID);
        let bits = key.components().q().bits_precision();
        let r = BoxedUint::from_be_slice(&signature[..n], bits).map_err(|_| invalid())?;
        let s = BoxedUint::from_be_slice(&signature[n..], bits).map_err(|_| invalid())?;
        let sig = Signature::from_components(r, s).ok_or_else(invalid)?;
        key.verify_prehash(z, &sig).map_err(|_| invalid())
    }
}

impl VerifyOperation for DsaVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        let z = self.input.digest(Some(data))?;
        self.verify_z(&z, signature)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.input.update(data)
    }

    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        let z = self.input.digest(None)?;
        self.verify_z(&z, signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::unhex;

    // RFC 6979 A.2.1: the DSA 1024/160 key.
    const P: &str = "86F5CA03DCFEB225063FF830A0C769B9DD9D6153AD91D7CE27F787C43278B447\
        E6533B86B18BED6E8A48B784A14C252C5BE0DBF60B86D6385BD2F12FB763ED88\
        73ABFD3F5BA2E0A8C0A59082EAC056935E529DAF7C610467899C77ADEDFC846C\
        881870B7B19B2B58F9BE0521A17002E3BDD6B86685EE90B3D9A1B02B782B1779";
    const Q: &str = "996F967F6C8E388D9E28D01E205FBA957A5698B1";
    const G: &str = "07B0F92546150B62514BB771E2A0C0CE387F03BDA6C56B505209FF25FD3C133D\
        89BBCD97E904E09114D9A7DEFDEADFC9078EA544D2E401AEECC40BB9FBBF78FD\
        87995A10A1C27CB7789B594BA7EFB5C4326A9FE59A070E136DB77175464ADCA4\
        17BE5DCE2F40D10A46A3A3943F26AB7FD9C0398FF8C76EE0A56826A8A88F1DBD";
    const X: &str = "411602CB19A6CCC34494D79D98EF1E7ED5AF25F7";
    const Y: &str = "5DF5E01DED31D0297E274E1691C192FE5868FEF9E19A84776454B100CF16F653\
        92195A38B90523E2542EE61871C0440CB87C322FC4B4D2EC5E1E7EC766E1BE8D\
        4CE935437DC11C3C8FD426338933EBFE739CB3465F4D3668C5E473508253B1E6\
        82F65CBDC4FAE93C2EA212390E54905A86E2223170B44EAA7DA5DD9FFCFB7F3B";

    #[test]
    fn rfc6979_a21_sha1_and_sha256_sample() {
        let (p, q, g) = (unhex(P), unhex(Q), unhex(G));
        let sk = Arc::new(load_private(&p, &q, &g, &unhex(X)).unwrap());
        let vk = Arc::new(load_public(&p, &q, &g, &unhex(Y)).unwrap());
        for (mech, r, s) in [
            (
                CKM_DSA_SHA1,
                "2E1A0C2562B2912CAAF89186FB0F42001585DA55",
                "29EFB6B0AFF2D7A68EB70CA313022253B9A88DF5",
            ),
            (
                CKM_DSA_SHA256,
                "81F2F5850BE5BC123C43F71A3033E9384611C545",
                "4CDD914B65EB6C66A8AAAD27299BEE6B035F5E89",
            ),
        ] {
            let m = Mechanism::plain(mech);
            let mut signer = DsaSign::new(&m, sk.clone()).unwrap();
            let mut out = [0u8; 40];
            assert_eq!(signer.sign(b"sample", &mut out).unwrap(), 40);
            assert_eq!(out.to_vec(), unhex(&format!("{r}{s}")));
            let mut v = DsaVerify::new(&m, vk.clone()).unwrap();
            v.verify(b"sample", &out).unwrap();
            out[39] ^= 1;
            let mut v = DsaVerify::new(&m, vk.clone()).unwrap();
            assert_eq!(
                v.verify(b"sample", &out).unwrap_err().rv(),
                CKR_SIGNATURE_INVALID
            );
        }
        assert!(DsaSign::new(&Mechanism::plain(CKM_DSA), vk).is_err());
    }

    #[test]
    fn hostile_parameters_are_refused() {
        let (p, q, g) = (unhex(P), unhex(Q), unhex(G));
        assert!(components(&p, &q, &g).is_ok());
        let bad = |p: &[u8], q: &[u8], g: &[u8]| components(p, q, g).unwrap_err().rv();
        assert_eq!(bad(&p, &q, &[1]), CKR_ATTRIBUTE_VALUE_INVALID);
        assert_eq!(bad(&[0xff; 513], &q, &g), CKR_ATTRIBUTE_VALUE_INVALID);
        assert_eq!(bad(&p, &[0xff; 24], &g), CKR_ATTRIBUTE_VALUE_INVALID);
        let c = components(&p, &q, &g).unwrap();
        assert!(verifying_key(c.clone(), &p).is_err());
        assert!(verifying_key(c.clone(), &[1]).is_err());
        assert!(verifying_key(c, &unhex(Y)).is_ok());
    }
}
