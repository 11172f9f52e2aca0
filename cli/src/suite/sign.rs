//! Signatures: Ed25519, ECDSA (P-256, P-384, P-521, secp256k1 over a
//! prehashed digest, or hashing with `CKM_ECDSA_SHA256/384`), RSA PKCS#1
//! v1.5 and PSS with SHA-256, and the post-quantum ML-DSA (FIPS 204) and
//! SLH-DSA (FIPS 205) of PKCS#11 3.2; sign and verify.
//!
//! Checks: every signature has its length checked (64 bytes for Ed25519,
//! P-256 and secp256k1, 96 for P-384, 132 for P-521, the modulus length for
//! RSA, FIPS 204 Table 2 and FIPS 205 Table 2 for ML-DSA and SLH-DSA). A signature made while
//! preparing must verify (sign and verify ops) and a corrupted copy must not
//! (verify ops). Deterministic signatures (Ed25519, RSA PKCS#1 v1.5) are
//! compared with the verified one on every call; randomized ones (ECDSA, PSS)
//! are verified with `C_Verify` on a sample (see [`check::Sampler`]) when the
//! public key is at hand.

use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::Curve;
use super::alg::HashAlg;
use super::alg::KeySpec;
use super::alg::MlDsaSet;
use super::alg::SigAlg;
use super::alg::SlhDsaSet;
use super::check;
use super::failure::Failure;
use super::failure::ck;
use super::failure::written;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use super::op::test_data;
use crate::token::ckr::ckr_name;
use crate::token::raw::KeyCall;
use crate::token::raw::{Mech, RawModule};

impl SigAlg {
    /// Op-id stem, e.g. `p256`, `rsa2048`, `rsa2048-pss`.
    pub fn stem(&self) -> String {
        match self {
            SigAlg::Ed25519 => "ed25519".into(),
            SigAlg::Ecdsa(c) => c.id().into(),
            SigAlg::EcdsaHash(c, h) => format!("{}-ecdsa-{}", c.id(), h.id()),
            SigAlg::RsaPkcs(b) => format!("rsa{b}"),
            SigAlg::RsaPss(b) => format!("rsa{b}-pss"),
            SigAlg::MlDsa(s) => s.id().into(),
            SigAlg::SlhDsa(s) => s.id(),
        }
    }

    fn title(&self) -> String {
        match self {
            SigAlg::Ed25519 => "Ed25519".into(),
            SigAlg::Ecdsa(c) => format!("ECDSA {}", c.title()),
            SigAlg::EcdsaHash(c, h) => {
                format!(
                    "ECDSA {} with {}",
                    c.title(),
                    h.id().to_uppercase().replace("SHA", "SHA-")
                )
            }
            SigAlg::RsaPkcs(b) => format!("RSA-{b} PKCS#1 SHA-256"),
            SigAlg::RsaPss(b) => format!("RSA-{b} PSS SHA-256"),
            SigAlg::MlDsa(s) => s.title().into(),
            SigAlg::SlhDsa(s) => s.title(),
        }
    }

    /// The timed mechanism.
    pub fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            SigAlg::Ed25519 => CKM_EDDSA,
            SigAlg::Ecdsa(_) => CKM_ECDSA,
            SigAlg::EcdsaHash(_, h) => match h {
                HashAlg::Sha1 => CKM_ECDSA_SHA1,
                HashAlg::Sha256 => CKM_ECDSA_SHA256,
                HashAlg::Sha384 => CKM_ECDSA_SHA384,
                HashAlg::Sha512 => CKM_ECDSA_SHA512,
                HashAlg::Sha3_256 => CKM_ECDSA_SHA3_256,
                HashAlg::Sha3_512 => CKM_ECDSA_SHA3_512,
            },
            SigAlg::RsaPkcs(_) => CKM_SHA256_RSA_PKCS,
            SigAlg::RsaPss(_) => CKM_SHA256_RSA_PKCS_PSS,
            SigAlg::MlDsa(_) => CKM_ML_DSA,
            SigAlg::SlhDsa(_) => CKM_SLH_DSA,
        }
    }

    fn mech(&self) -> Mech {
        match self {
            SigAlg::RsaPss(_) => {
                Mech::rsa_pss(CKM_SHA256_RSA_PKCS_PSS, CKM_SHA256, CKG_MGF1_SHA256, 32)
            }
            other => Mech::plain(other.mechanism()),
        }
    }

    /// The key this algorithm uses (generated).
    pub fn key(&self) -> KeySpec {
        match self {
            SigAlg::Ed25519 => KeySpec::Ed25519,
            SigAlg::Ecdsa(c) | SigAlg::EcdsaHash(c, _) => KeySpec::Ec(*c),
            SigAlg::RsaPkcs(b) | SigAlg::RsaPss(b) => KeySpec::Rsa(*b),
            SigAlg::MlDsa(s) => KeySpec::MlDsa(*s),
            SigAlg::SlhDsa(s) => KeySpec::SlhDsa(*s),
        }
    }

    fn key_bits(&self) -> Option<u64> {
        match self {
            SigAlg::Ed25519 | SigAlg::MlDsa(_) | SigAlg::SlhDsa(_) => None,
            SigAlg::Ecdsa(c) | SigAlg::EcdsaHash(c, _) => Some(u64::from(c.bits())),
            SigAlg::RsaPkcs(b) | SigAlg::RsaPss(b) => Some(*b as u64),
        }
    }

    /// Signature length in bytes.
    pub fn sig_len(&self) -> usize {
        match self {
            SigAlg::Ed25519 => 64,
            SigAlg::Ecdsa(c) | SigAlg::EcdsaHash(c, _) => (c.bits() as usize).div_ceil(8) * 2,
            SigAlg::RsaPkcs(b) | SigAlg::RsaPss(b) => (*b as usize).div_ceil(8),
            SigAlg::MlDsa(s) => s.sig_len(),
            SigAlg::SlhDsa(s) => s.sig_len(),
        }
    }

    /// Whether equal inputs give equal signatures (then every output is compared).
    fn deterministic(&self) -> bool {
        matches!(self, SigAlg::Ed25519 | SigAlg::RsaPkcs(_))
    }

    /// Input: a 32/48-byte digest for ECDSA, a 32-byte message otherwise;
    /// Ed25519, ECDSA with a hash, ML-DSA and SLH-DSA signing take any
    /// message size.
    fn data(&self, sign: bool) -> DataSpec {
        match self {
            SigAlg::Ed25519 | SigAlg::EcdsaHash(..) | SigAlg::MlDsa(_) | SigAlg::SlhDsa(_)
                if sign =>
            {
                DataSpec::Variable {
                    default: 32,
                    align: 1,
                }
            }
            SigAlg::Ecdsa(Curve::P384) => DataSpec::Fixed(48),
            SigAlg::Ecdsa(Curve::P521) => DataSpec::Fixed(64),
            _ => DataSpec::Fixed(32),
        }
    }
}

/// The output buffer of a signature: room for the longest signature of
/// the algorithm (an ML-DSA-87 one is 4,627 bytes, an SLH-DSA-*-256f one
/// 49,856), never less than 1 KiB.
fn sig_buffer(a: SigAlg) -> usize {
    a.sig_len().max(1024)
}

/// A sign op on a generated key.
pub fn sign_op(a: SigAlg, key: KeySpec) -> OpDef {
    OpDef {
        id: format!("{}-sign", a.stem()),
        title: format!("{} sign", a.title()),
        kind: OpKind::Sign(a),
        mechanism: a.mechanism(),
        also_needs: key.gen_mechanism().into_iter().collect(),
        key: Some(key),
        key_bits: a.key_bits(),
        data: a.data(true),
    }
}

/// A verify op on a generated key.
pub fn verify_op(a: SigAlg, key: KeySpec) -> OpDef {
    OpDef {
        id: format!("{}-verify", a.stem()),
        title: format!("{} verify", a.title()),
        kind: OpKind::Verify(a),
        mechanism: a.mechanism(),
        also_needs: key.gen_mechanism().into_iter().collect(),
        key: Some(key),
        key_bits: a.key_bits(),
        data: a.data(false),
    }
}

/// Signature ops of the catalogue.
pub fn ops() -> Vec<OpDef> {
    use SigAlg::*;
    let mut v = Vec::new();
    for a in [Ed25519, Ecdsa(Curve::P256), Ecdsa(Curve::P384)] {
        v.push(sign_op(a, a.key()));
        v.push(verify_op(a, a.key()));
    }
    for b in [2048, 3072, 4096] {
        v.push(sign_op(RsaPkcs(b), KeySpec::Rsa(b)));
        v.push(verify_op(RsaPkcs(b), KeySpec::Rsa(b)));
    }
    for b in [2048, 3072, 4096] {
        v.push(sign_op(RsaPss(b), KeySpec::Rsa(b)));
        v.push(verify_op(RsaPss(b), KeySpec::Rsa(b)));
    }
    for c in [Curve::P256, Curve::P384] {
        for h in [HashAlg::Sha256, HashAlg::Sha384] {
            let a = EcdsaHash(c, h);
            v.push(sign_op(a, a.key()));
            v.push(verify_op(a, a.key()));
        }
    }
    // The other curves after the original ops (report order): raw ECDSA
    // and ECDSA with SHA-256/384.
    for c in [Curve::P521, Curve::Secp256k1] {
        for a in [
            Ecdsa(c),
            EcdsaHash(c, HashAlg::Sha256),
            EcdsaHash(c, HashAlg::Sha384),
        ] {
            v.push(sign_op(a, a.key()));
            v.push(verify_op(a, a.key()));
        }
    }
    // Post-quantum (PKCS#11 3.2): on tokens that list CKM_ML_DSA.
    for s in MlDsaSet::ALL {
        let a = MlDsa(s);
        v.push(sign_op(a, a.key()));
        v.push(verify_op(a, a.key()));
    }
    // SLH-DSA (PKCS#11 3.2 `CKM_SLH_DSA`): the fast 128-bit sets of both
    // hash families and the small SHA2 one (whose signing is ~20x slower).
    for s in [
        SlhDsaSet::SHA2_128F,
        SlhDsaSet::SHAKE_128F,
        SlhDsaSet::SHA2_128S,
    ] {
        let a = SlhDsa(s);
        v.push(sign_op(a, a.key()));
        v.push(verify_op(a, a.key()));
    }
    v
}

/// Sign once outside the timer (preparation of verify inputs and self-checks);
/// the signature's length is checked.
pub(crate) fn sign_once(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    a: SigAlg,
    key: CK_OBJECT_HANDLE,
    data: &[u8],
) -> Result<Vec<u8>, Failure> {
    let mut m = a.mech();
    ck(raw.sign_init(s, &mut m, key))?;
    let mut out = vec![0u8; sig_buffer(a)];
    let (rv, n) = raw.sign(s, data, &mut out);
    let n = written(raw, rv, &out, n)?.len();
    out.truncate(n);
    check::length("prepared signature", n, a.sig_len())?;
    Ok(out)
}

/// `C_Verify` of `sig` over `data` with `public`: its return value.
fn verify_once(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    a: SigAlg,
    public: CK_OBJECT_HANDLE,
    data: &[u8],
    sig: &[u8],
) -> Result<CK_RV, Failure> {
    ck(raw.verify_init(s, &mut a.mech(), public))?;
    Ok(raw.verify(s, data, sig))
}

/// Fail unless a `C_Verify` returned CKR_OK; `what` names the signature.
fn verified(rv: CK_RV, what: &str) -> Result<(), Failure> {
    match rv {
        CKR_OK => Ok(()),
        rv => Err(check::failed(format!(
            "{what} does not verify: {}",
            ckr_name(rv)
        ))),
    }
}

/// A signature made while preparing, checked for length and, when the public
/// key is at hand, to verify.
fn prepared_signature(
    p: &Prep<'_>,
    a: SigAlg,
    private: CK_OBJECT_HANDLE,
    public: Option<CK_OBJECT_HANDLE>,
    data: &[u8],
) -> Result<Vec<u8>, Failure> {
    let sig = sign_once(p.raw, p.session, a, private, data)?;
    if let Some(public) = public {
        verified(
            verify_once(p.raw, p.session, a, public, data, &sig)?,
            "self-check: prepared signature",
        )?;
    }
    Ok(sig)
}

struct SignWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    alg: SigAlg,
    mech: Mech,
    key: CK_OBJECT_HANDLE,
    public: Option<CK_OBJECT_HANDLE>,
    data: Vec<u8>,
    out: Vec<u8>,
    len: usize,
    reference: Option<Vec<u8>>,
    sampler: check::Sampler,
}

impl Worker for SignWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let (rv, n) = self.raw.key_single(
            KeyCall::Sign,
            self.s,
            &mut self.mech,
            self.key,
            &self.data,
            &mut self.out,
        );
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        let sig = written(&self.raw, rv, &self.out, self.len)?;
        check::length("signature", sig.len(), self.alg.sig_len())?;
        if let Some(r) = &self.reference {
            if r[..] != *sig {
                return Err(check::failed(
                    "deterministic signature differs from the verified one",
                ));
            }
            return Ok(());
        }
        let Some(public) = self.public else {
            return Ok(());
        };
        let (raw, s, a, data) = (&self.raw, self.s, self.alg, &self.data);
        self.sampler
            .sample(|| {
                verified(
                    verify_once(raw, s, a, public, data, sig)?,
                    "sampled signature",
                )
            })
            .unwrap_or(Ok(()))
    }
}

/// Worker signing `data_size` bytes (checks: see the module documentation).
pub fn sign_worker(a: SigAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let k = p.key()?;
    let key = k.private_key()?;
    let data = test_data(p.data_size, 1);
    let sig = prepared_signature(p, a, key, k.public, &data)?;
    Ok(Box::new(SignWorker {
        raw: p.raw.clone(),
        s: p.session,
        alg: a,
        mech: a.mech(),
        key,
        public: k.public,
        // Without a public key the first signature cannot be verified, and
        // deterministic ones are compared with it unverified.
        reference: a.deterministic().then(|| sig.clone()),
        data,
        out: vec![0u8; sig_buffer(a)],
        len: 0,
        sampler: check::Sampler::default(),
    }))
}

struct VerifyWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    mech: Mech,
    key: CK_OBJECT_HANDLE,
    data: Vec<u8>,
    sig: Vec<u8>,
}

impl Worker for VerifyWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let rv = self.raw.verify_init(self.s, &mut self.mech, self.key);
        if rv != CKR_OK {
            return rv;
        }
        self.raw.verify(self.s, &self.data, &self.sig)
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)
    }
}

/// Worker verifying a signature made (untimed) with the private key, checked
/// for length and to verify; every call must return CKR_OK. A corrupted
/// signature is also checked once to be rejected.
pub fn verify_worker(a: SigAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let k = p.key()?;
    let (public, private) = (k.public_key()?, k.private_key()?);
    let data = test_data(p.data_size, 2);
    let sig = prepared_signature(p, a, private, Some(public), &data)?;
    // A module that accepts a corrupted signature would make the numbers meaningless.
    if verify_once(p.raw, p.session, a, public, &data, &check::corrupted(&sig))? == CKR_OK {
        return Err(check::failed("self-check: corrupted signature verified"));
    }
    Ok(Box::new(VerifyWorker {
        raw: p.raw.clone(),
        s: p.session,
        mech: a.mech(),
        key: public,
        data,
        sig,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_lengths_per_mechanism_and_key_size() {
        assert_eq!(SigAlg::Ed25519.sig_len(), 64);
        assert_eq!(SigAlg::Ecdsa(Curve::P256).sig_len(), 64);
        assert_eq!(SigAlg::Ecdsa(Curve::P384).sig_len(), 96);
        assert_eq!(SigAlg::Ecdsa(Curve::P521).sig_len(), 132);
        assert_eq!(SigAlg::Ecdsa(Curve::Secp256k1).sig_len(), 64);
        assert_eq!(SigAlg::RsaPkcs(2048).sig_len(), 256);
        // FIPS 204 Table 2.
        assert_eq!(SigAlg::MlDsa(MlDsaSet::L44).sig_len(), 2420);
        assert_eq!(SigAlg::MlDsa(MlDsaSet::L65).sig_len(), 3309);
        assert_eq!(SigAlg::MlDsa(MlDsaSet::L87).sig_len(), 4627);
        assert!(!SigAlg::MlDsa(MlDsaSet::L65).deterministic(), "hedged");
        // FIPS 205 Table 2: the buffer holds the largest (256f).
        assert_eq!(SigAlg::SlhDsa(SlhDsaSet::SHA2_128S).sig_len(), 7856);
        assert_eq!(SigAlg::SlhDsa(SlhDsaSet::SHAKE_128F).sig_len(), 17088);
        let largest = SlhDsaSet::ALL
            .into_iter()
            .map(|s| s.sig_len())
            .max()
            .unwrap();
        assert_eq!(largest, 49856);
        for s in SlhDsaSet::ALL {
            assert!(sig_buffer(SigAlg::SlhDsa(s)) >= s.sig_len(), "{}", s.id());
        }
        assert!(
            !SigAlg::SlhDsa(SlhDsaSet::SHA2_128F).deterministic(),
            "hedged"
        );
        assert_eq!(SigAlg::RsaPss(3072).sig_len(), 384);
        assert_eq!(SigAlg::RsaPkcs(4096).sig_len(), 512);
        assert!(SigAlg::Ed25519.deterministic() && SigAlg::RsaPkcs(2048).deterministic());
        assert!(
            !SigAlg::Ecdsa(Curve::P256).deterministic() && !SigAlg::RsaPss(2048).deterministic()
        );
        assert_eq!(
            SigAlg::EcdsaHash(Curve::P256, HashAlg::Sha384).sig_len(),
            64
        );
        assert_eq!(
            SigAlg::EcdsaHash(Curve::P384, HashAlg::Sha256).sig_len(),
            96
        );
        assert!(!SigAlg::EcdsaHash(Curve::P256, HashAlg::Sha256).deterministic());
    }

    #[test]
    fn ecdsa_with_hash_ops_are_declared_once_per_curve_hash_and_direction() {
        let all = ops();
        for (c, key) in [
            (256, KeySpec::Ec(Curve::P256)),
            (384, KeySpec::Ec(Curve::P384)),
            (521, KeySpec::Ec(Curve::P521)),
        ] {
            for (h, mech) in [("sha256", CKM_ECDSA_SHA256), ("sha384", CKM_ECDSA_SHA384)] {
                for dir in ["sign", "verify"] {
                    let id = format!("p{c}-ecdsa-{h}-{dir}");
                    let found: Vec<_> = all.iter().filter(|o| o.id == id).collect();
                    assert_eq!(found.len(), 1, "{id}");
                    let o = found[0];
                    assert_eq!(
                        (o.mechanism, o.key, o.key_bits),
                        (mech, Some(key), Some(c as u64)),
                        "{id}"
                    );
                    assert_eq!(o.takes_data(), dir == "sign", "{id}");
                    assert!(
                        o.title.starts_with(&format!("ECDSA P-{c} with SHA-")),
                        "{id}"
                    );
                }
            }
        }
        // The prehashed ops keep their ids and CKM_ECDSA.
        let p256 = all.iter().find(|o| o.id == "p256-sign").unwrap();
        assert_eq!(p256.mechanism, CKM_ECDSA);
    }

    #[test]
    fn slh_dsa_ops_name_their_set_and_use_ckm_slh_dsa() {
        let all = ops();
        let ids: Vec<&str> = all
            .iter()
            .filter(|o| o.mechanism == CKM_SLH_DSA)
            .map(|o| o.id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "slhdsa-sha2-128f-sign",
                "slhdsa-sha2-128f-verify",
                "slhdsa-shake-128f-sign",
                "slhdsa-shake-128f-verify",
                "slhdsa-sha2-128s-sign",
                "slhdsa-sha2-128s-verify",
            ]
        );
        let o = all
            .iter()
            .find(|o| o.id == "slhdsa-shake-128f-sign")
            .unwrap();
        assert_eq!(o.key, Some(KeySpec::SlhDsa(SlhDsaSet::SHAKE_128F)));
        assert_eq!(o.also_needs, [CKM_SLH_DSA_KEY_PAIR_GEN]);
        assert_eq!(o.title, "SLH-DSA-SHAKE-128f sign");
        assert!(o.takes_data());
    }
}
