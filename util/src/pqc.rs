//! The post-quantum key files of the IETF LAMPS documents: PKCS#8
//! `OneAsymmetricKey` private keys (RFC 5958) and SubjectPublicKeyInfos
//! (RFC 5280 §4.1.2.7) of
//! - ML-DSA (FIPS 204; RFC 9881): `id-ml-dsa-44/65/87`, private key
//!   `ML-DSA-PrivateKey ::= CHOICE { seed [0] IMPLICIT OCTET STRING (32),
//!   expandedKey OCTET STRING, both SEQUENCE { seed, expandedKey } }`
//!   (§6), public key pkEncode (§4);
//! - ML-KEM (FIPS 203; draft-ietf-lamps-kyber-certificates): `id-alg-ml-kem-
//!   512/768/1024`, the same CHOICE with the 64-byte seed d‖z and the
//!   expanded dk, public key ek;
//! - SLH-DSA (FIPS 205; RFC 9909): the twelve `id-slh-dsa-*`, private key
//!   SK.seed‖SK.prf‖PK.seed‖PK.root (4n bytes) as the privateKey octets
//!   themselves (§6), public key PK.seed‖PK.root.
//!
//! None of the algorithm identifiers has parameters. Every length is
//! checked against the parameter set's before anything is copied, and the
//! values become the PKCS#11 3.2 attributes a consumer gives
//! `C_CreateObject`: `CKA_PARAMETER_SET`, `CKA_SEED` (the seed form) and/or
//! `CKA_VALUE` (the expanded form, or SLH-DSA's private key); a public key
//! object's `CKA_VALUE` is the raw public key.

use cryptoki_sys::*;
use sha3::digest::{Digest, ExtendableOutput, Update};
use zeroize::Zeroizing;

use crate::asn1::{self, Reader};
use crate::items::PrivateKey;

/// Which algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    MlDsa,
    MlKem,
    SlhDsa,
}

impl Family {
    /// `CKA_KEY_TYPE`.
    pub fn key_type(self) -> CK_KEY_TYPE {
        match self {
            Family::MlDsa => CKK_ML_DSA,
            Family::MlKem => CKK_ML_KEM,
            Family::SlhDsa => CKK_SLH_DSA,
        }
    }

    /// The family of a key type, if it is one of these.
    pub fn of(key_type: CK_KEY_TYPE) -> Option<Family> {
        match key_type {
            CKK_ML_DSA => Some(Family::MlDsa),
            CKK_ML_KEM => Some(Family::MlKem),
            CKK_SLH_DSA => Some(Family::SlhDsa),
            _ => None,
        }
    }

    /// The document the file formats come from, for messages.
    fn spec(self) -> &'static str {
        match self {
            Family::MlDsa => "RFC 9881",
            Family::MlKem => "draft-ietf-lamps-kyber-certificates",
            Family::SlhDsa => "RFC 9909",
        }
    }
}

/// One parameter set: its OID's last arc, `CKP_*` value and sizes.
#[derive(Debug, PartialEq, Eq)]
pub struct Set {
    pub family: Family,
    /// "ML-DSA-65", "SLH-DSA-SHAKE-128f".
    pub name: &'static str,
    /// Last arc under 2.16.840.1.101.3.4.3 (signatures) or .4.4 (KEMs).
    arc: u8,
    /// `CKA_PARAMETER_SET`.
    pub ckp: CK_ULONG,
    /// The public key (pkEncode, ek, PK.seed‖PK.root).
    pub public_len: usize,
    /// The expanded private key (skEncode, dk) or SLH-DSA's 4n bytes.
    pub private_len: usize,
    /// The seed of the seed form (ξ; d‖z), 0 for SLH-DSA.
    pub seed_len: usize,
    /// ML-DSA's (k, ℓ), ML-KEM's (k, 0): what the seed is hashed with.
    dims: (u8, u8),
}

const fn ml_dsa(
    name: &'static str,
    arc: u8,
    ckp: CK_ULONG,
    pk: usize,
    sk: usize,
    kl: (u8, u8),
) -> Set {
    Set {
        family: Family::MlDsa,
        name,
        arc,
        ckp,
        public_len: pk,
        private_len: sk,
        seed_len: 32,
        dims: kl,
    }
}

const fn ml_kem(name: &'static str, arc: u8, ckp: CK_ULONG, k: u8) -> Set {
    let k_len = 384 * k as usize;
    Set {
        family: Family::MlKem,
        name,
        arc,
        ckp,
        public_len: k_len + 32,
        private_len: 2 * k_len + 96,
        seed_len: 64,
        dims: (k, 0),
    }
}

const fn slh_dsa(name: &'static str, arc: u8, ckp: CK_ULONG, n: usize) -> Set {
    Set {
        family: Family::SlhDsa,
        name,
        arc,
        ckp,
        public_len: 2 * n,
        private_len: 4 * n,
        seed_len: 0,
        dims: (0, 0),
    }
}

/// Every parameter set: FIPS 204 Table 2 and FIPS 203 Table 3 sizes, the
/// NIST CSOR arcs of RFC 9881 §2, the ML-KEM document §3 and RFC 9909 §3.
pub const SETS: &[Set] = &[
    ml_dsa("ML-DSA-44", 17, CKP_ML_DSA_44, 1312, 2560, (4, 4)),
    ml_dsa("ML-DSA-65", 18, CKP_ML_DSA_65, 1952, 4032, (6, 5)),
    ml_dsa("ML-DSA-87", 19, CKP_ML_DSA_87, 2592, 4896, (8, 7)),
    ml_kem("ML-KEM-512", 1, CKP_ML_KEM_512, 2),
    ml_kem("ML-KEM-768", 2, CKP_ML_KEM_768, 3),
    ml_kem("ML-KEM-1024", 3, CKP_ML_KEM_1024, 4),
    slh_dsa("SLH-DSA-SHA2-128s", 20, CKP_SLH_DSA_SHA2_128S, 16),
    slh_dsa("SLH-DSA-SHA2-128f", 21, CKP_SLH_DSA_SHA2_128F, 16),
    slh_dsa("SLH-DSA-SHA2-192s", 22, CKP_SLH_DSA_SHA2_192S, 24),
    slh_dsa("SLH-DSA-SHA2-192f", 23, CKP_SLH_DSA_SHA2_192F, 24),
    slh_dsa("SLH-DSA-SHA2-256s", 24, CKP_SLH_DSA_SHA2_256S, 32),
    slh_dsa("SLH-DSA-SHA2-256f", 25, CKP_SLH_DSA_SHA2_256F, 32),
    slh_dsa("SLH-DSA-SHAKE-128s", 26, CKP_SLH_DSA_SHAKE_128S, 16),
    slh_dsa("SLH-DSA-SHAKE-128f", 27, CKP_SLH_DSA_SHAKE_128F, 16),
    slh_dsa("SLH-DSA-SHAKE-192s", 28, CKP_SLH_DSA_SHAKE_192S, 24),
    slh_dsa("SLH-DSA-SHAKE-192f", 29, CKP_SLH_DSA_SHAKE_192F, 24),
    slh_dsa("SLH-DSA-SHAKE-256s", 30, CKP_SLH_DSA_SHAKE_256S, 32),
    slh_dsa("SLH-DSA-SHAKE-256f", 31, CKP_SLH_DSA_SHAKE_256F, 32),
];

/// 2.16.840.1.101.3.4.3 (NIST signature algorithms), contents octets.
const SIG_ARC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03];
/// 2.16.840.1.101.3.4.4 (NIST KEM algorithms).
const KEM_ARC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x04];

/// The parameter set an OID (contents octets) names, if any.
pub fn by_oid(oid: &[u8]) -> Option<&'static Set> {
    let (&arc, prefix) = oid.split_last()?;
    SETS.iter().find(|s| {
        s.arc == arc
            && prefix
                == match s.family {
                    Family::MlKem => KEM_ARC,
                    _ => SIG_ARC,
                }
    })
}

/// The parameter set of a key type's `CKA_PARAMETER_SET` value.
pub fn by_ckp(key_type: CK_KEY_TYPE, ckp: CK_ULONG) -> Option<&'static Set> {
    let family = Family::of(key_type)?;
    SETS.iter().find(|s| s.family == family && s.ckp == ckp)
}

impl Set {
    /// The OID's contents octets.
    pub fn oid(&self) -> Vec<u8> {
        let mut oid = match self.family {
            Family::MlKem => KEM_ARC,
            _ => SIG_ARC,
        }
        .to_vec();
        oid.push(self.arc);
        oid
    }

    /// The SubjectPublicKeyInfo of `public` (which must have the set's
    /// length): the algorithm identifier without parameters and the raw
    /// key as the BIT STRING.
    pub fn spki(&self, public: &[u8]) -> Result<Vec<u8>, String> {
        if public.len() != self.public_len {
            return Err(format!(
                "the {} public key is {} bytes, not {}",
                self.name,
                public.len(),
                self.public_len
            ));
        }
        let mut bits = Vec::with_capacity(public.len() + 1);
        bits.push(0);
        bits.extend_from_slice(public);
        let mut body = asn1::tlv(asn1::SEQUENCE, &asn1::tlv(asn1::OID, &self.oid()));
        body.extend(asn1::tlv(asn1::BIT_STRING, &bits));
        Ok(asn1::tlv(asn1::SEQUENCE, &body))
    }

    /// `CKA_PARAMETER_SET` as attribute bytes.
    fn ckp_bytes(&self) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(self.ckp.to_ne_bytes().to_vec())
    }

    /// The public key inside an expanded private key, where it is there
    /// in full: ML-KEM's dk = dk_PKE‖ek‖H(ek)‖z (FIPS 203 Algorithm 16).
    fn public_of_expanded(&self, expanded: &[u8]) -> Option<Vec<u8>> {
        match self.family {
            Family::MlKem => {
                let start = 384 * usize::from(self.dims.0);
                expanded
                    .get(start..start + self.public_len)
                    .map(<[u8]>::to_vec)
            }
            Family::SlhDsa => expanded.get(self.public_len..).map(<[u8]>::to_vec),
            Family::MlDsa => None,
        }
    }

    /// The checks an expanded key allows without the algorithm itself:
    /// ML-KEM's hash check (FIPS 203 §7.3: H(ek) in dk is SHA3-256 of the
    /// ek beside it).
    fn check_expanded(&self, expanded: &[u8]) -> Result<(), String> {
        if self.family == Family::MlKem {
            let k = 384 * usize::from(self.dims.0);
            let ek = &expanded[k..k + self.public_len];
            let h = &expanded[k + self.public_len..k + self.public_len + 32];
            if sha3::Sha3_256::digest(ek)[..] != *h {
                return Err(format!(
                    "the {} expanded private key fails its hash check (FIPS 203 §7.3)",
                    self.name
                ));
            }
        }
        Ok(())
    }

    /// The parts of the expanded key a seed fixes that a hash of the seed
    /// gives directly, compared (the token checks the whole key again):
    /// ML-DSA's ρ and K (FIPS 204 Algorithm 6: (ρ, ρ', K) = H(ξ‖k‖ℓ, 128),
    /// sk = ρ‖K‖…); ML-KEM's z (the seed's second half, dk's last 32
    /// bytes) and ρ ((ρ, σ) = G(d‖k), FIPS 203 Algorithm 13; ek ends
    /// with ρ).
    fn seed_matches(&self, seed: &[u8], expanded: &[u8]) -> bool {
        match self.family {
            Family::MlDsa => {
                let mut h = sha3::Shake256::default();
                h.update(seed);
                h.update(&[self.dims.0, self.dims.1]);
                let mut out = Zeroizing::new([0u8; 128]);
                h.finalize_xof_into(&mut out[..]);
                out[..32] == expanded[..32] && out[96..128] == expanded[32..64]
            }
            Family::MlKem => {
                let (d, z) = seed.split_at(32);
                let mut g = sha3::Sha3_512::new();
                Digest::update(&mut g, d);
                Digest::update(&mut g, [self.dims.0]);
                let rho_sigma = Zeroizing::new(g.finalize());
                let ek_end = 384 * usize::from(self.dims.0) + self.public_len;
                expanded[ek_end - 32..ek_end] == rho_sigma[..32]
                    && expanded[expanded.len() - 32..] == *z
            }
            Family::SlhDsa => true,
        }
    }
}

/// The private key of a PKCS#8 `OneAsymmetricKey` of parameter set `set`
/// (its OID), `params` the algorithm's parameters (there must be none) and
/// `private_key` the privateKey octets.
pub fn private_key(
    set: &'static Set,
    params: Option<asn1::Element<'_>>,
    private_key: &[u8],
) -> Result<PrivateKey, String> {
    let name = set.name;
    let spec = set.family.spec();
    if params.is_some() {
        return Err(format!(
            "the {name} algorithm identifier has parameters ({spec} says it has none)"
        ));
    }
    let mut values = vec![(CKA_PARAMETER_SET, set.ckp_bytes())];
    if set.family == Family::SlhDsa {
        // The privateKey octets are the key itself (RFC 9909 §6).
        if private_key.len() != set.private_len {
            return Err(format!(
                "the {name} private key is {} bytes, not {}",
                private_key.len(),
                set.private_len
            ));
        }
        values.push((CKA_VALUE, Zeroizing::new(private_key.to_vec())));
        return Ok(PrivateKey {
            key_type: set.family.key_type(),
            kind: name.into(),
            values,
            public: set.public_of_expanded(private_key),
        });
    }
    let forms =
        || format!("the {name} private key is none of {spec}'s seed, expandedKey or both forms");
    let (seed, expanded) = match asn1::single(private_key, 0x80)
        .or_else(|| asn1::single(private_key, asn1::OCTET_STRING))
        .or_else(|| asn1::single(private_key, asn1::SEQUENCE))
    {
        Some(e) if e.whole[0] == 0x80 => (Some(e.body), None),
        Some(e) if e.whole[0] == asn1::OCTET_STRING => (None, Some(e.body)),
        Some(e) => {
            let mut r = Reader::new(e.body);
            let seed = r.expect(asn1::OCTET_STRING).ok_or_else(forms)?;
            let expanded = r.expect(asn1::OCTET_STRING).ok_or_else(forms)?;
            if !r.is_empty() {
                return Err(forms());
            }
            (Some(seed.body), Some(expanded.body))
        }
        None => return Err(forms()),
    };
    if let Some(seed) = seed {
        if seed.len() != set.seed_len {
            return Err(format!(
                "the {name} seed is {} bytes, not {}",
                seed.len(),
                set.seed_len
            ));
        }
        values.push((CKA_SEED, Zeroizing::new(seed.to_vec())));
    }
    let mut public = None;
    if let Some(expanded) = expanded {
        if expanded.len() != set.private_len {
            return Err(format!(
                "the {name} expanded private key is {} bytes, not {}",
                expanded.len(),
                set.private_len
            ));
        }
        set.check_expanded(expanded)?;
        if let Some(seed) = seed
            && !set.seed_matches(seed, expanded)
        {
            return Err(format!(
                "the {name} private key's seed and expanded key disagree (the both form must hold \
                 one key)"
            ));
        }
        values.push((CKA_VALUE, Zeroizing::new(expanded.to_vec())));
        public = set.public_of_expanded(expanded);
    }
    Ok(PrivateKey {
        key_type: set.family.key_type(),
        kind: name.into(),
        values,
        public,
    })
}

/// The SubjectPublicKeyInfo of a public key given by its
/// `CKA_PARAMETER_SET` and `CKA_VALUE`.
pub fn public_key_info(
    key_type: CK_KEY_TYPE,
    parameter_set: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let family = Family::of(key_type).ok_or("not a post-quantum key type")?;
    let ckp = parameter_set
        .and_then(|v| dalek_pkcs11::attributes::decode_ulong(v).ok())
        .ok_or("the key has no readable CKA_PARAMETER_SET")?;
    let set = by_ckp(key_type, ckp)
        .ok_or_else(|| format!("{family:?} parameter set {ckp:#x} is not known"))?;
    set.spki(value.ok_or("the key has no readable CKA_VALUE")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulong(v: &[u8]) -> CK_ULONG {
        dalek_pkcs11::attributes::decode_ulong(v).unwrap()
    }

    #[test]
    fn oids_and_parameter_sets_map_both_ways_and_sizes_are_fips_sizes() {
        assert_eq!(SETS.len(), 18);
        for s in SETS {
            assert_eq!(by_oid(&s.oid()), Some(s), "{}", s.name);
            assert_eq!(by_ckp(s.family.key_type(), s.ckp), Some(s), "{}", s.name);
        }
        let len = |name: &str| {
            let s = SETS.iter().find(|s| s.name == name).unwrap();
            (s.public_len, s.private_len)
        };
        assert_eq!(len("ML-KEM-512"), (800, 1632));
        assert_eq!(len("ML-KEM-768"), (1184, 2400));
        assert_eq!(len("ML-KEM-1024"), (1568, 3168));
        assert_eq!(len("SLH-DSA-SHAKE-192f"), (48, 96));
        // 2.16.840.1.101.3.4.3.18 and .4.4.3 in dotted form.
        assert_eq!(
            by_oid(&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 18])
                .unwrap()
                .name,
            "ML-DSA-65"
        );
        assert_eq!(
            by_oid(&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x04, 3])
                .unwrap()
                .name,
            "ML-KEM-1024"
        );
        // KEM arc 17 and signature arc 1, 32 are nothing.
        assert!(by_oid(&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x04, 17]).is_none());
        assert!(by_oid(&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 1]).is_none());
        assert!(by_oid(&[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 32]).is_none());
        assert!(by_oid(&[]).is_none());
        // Parameter sets do not cross key types.
        assert!(by_ckp(CKK_EC, CKP_ML_DSA_44).is_none());
        assert_eq!(
            by_ckp(CKK_ML_KEM, CKP_ML_KEM_512).unwrap().name,
            "ML-KEM-512"
        );
    }

    #[test]
    fn slh_dsa_keys_are_4n_octets_and_their_public_key_is_the_second_half() {
        for s in SETS.iter().filter(|s| s.family == Family::SlhDsa) {
            let sk: Vec<u8> = (0..s.private_len as u8).collect();
            let k = private_key(s, None, &sk).unwrap();
            assert_eq!(k.key_type, CKK_SLH_DSA);
            assert_eq!(k.values.len(), 2);
            assert_eq!(ulong(&k.values[0].1), s.ckp);
            assert_eq!(k.values[1], (CKA_VALUE, Zeroizing::new(sk.clone())));
            assert_eq!(k.public.as_deref(), Some(&sk[s.public_len..]));
            for bad in [s.private_len - 1, s.private_len + 1, 0] {
                let e = private_key(s, None, &vec![1; bad]).err().unwrap();
                assert!(
                    e.contains(&format!("{bad} bytes, not {}", s.private_len)),
                    "{e}"
                );
            }
            // A nested OCTET STRING is not RFC 9909's form.
            assert!(private_key(s, None, &asn1::tlv(asn1::OCTET_STRING, &sk)).is_err());
        }
    }

    #[test]
    fn parameters_are_refused() {
        let s = &SETS[0];
        let null = [0x05, 0x00];
        let e = Reader::new(&null).any();
        let err = private_key(s, e, &asn1::tlv(0x80, &[0; 32])).err().unwrap();
        assert!(err.contains("has parameters"), "{err}");
    }

    /// An ML-DSA or ML-KEM key in the three forms, with the hashes the
    /// checks use made to agree (the lattice part is filler).
    fn forms(set: &Set) -> (Vec<u8>, Vec<u8>) {
        let seed: Vec<u8> = (0..set.seed_len as u8).collect();
        let mut expanded = vec![0x11u8; set.private_len];
        match set.family {
            Family::MlDsa => {
                let mut h = sha3::Shake256::default();
                h.update(&seed);
                h.update(&[set.dims.0, set.dims.1]);
                let mut out = [0u8; 128];
                h.finalize_xof_into(&mut out);
                expanded[..32].copy_from_slice(&out[..32]);
                expanded[32..64].copy_from_slice(&out[96..]);
            }
            Family::MlKem => {
                let k = 384 * usize::from(set.dims.0);
                let g = sha3::Sha3_512::new_with_prefix(&seed[..32])
                    .chain_update([set.dims.0])
                    .finalize();
                let ek_end = k + set.public_len;
                expanded[ek_end - 32..ek_end].copy_from_slice(&g[..32]);
                let h = sha3::Sha3_256::digest(&expanded[k..ek_end]);
                expanded[ek_end..ek_end + 32].copy_from_slice(&h);
                let n = expanded.len();
                expanded[n - 32..].copy_from_slice(&seed[32..]);
            }
            Family::SlhDsa => unreachable!(),
        }
        (seed, expanded)
    }

    fn both(seed: &[u8], expanded: &[u8]) -> Vec<u8> {
        let mut b = asn1::tlv(asn1::OCTET_STRING, seed);
        b.extend(asn1::tlv(asn1::OCTET_STRING, expanded));
        asn1::tlv(asn1::SEQUENCE, &b)
    }

    #[test]
    fn seed_expanded_and_both_forms_give_seed_and_value() {
        for s in SETS.iter().filter(|s| s.family != Family::SlhDsa) {
            let (seed, expanded) = forms(s);
            let get = |k: &PrivateKey, ty| {
                k.values
                    .iter()
                    .find(|(t, _)| *t == ty)
                    .map(|(_, v)| v.to_vec())
            };
            let k = private_key(s, None, &asn1::tlv(0x80, &seed)).unwrap();
            assert_eq!(ulong(&get(&k, CKA_PARAMETER_SET).unwrap()), s.ckp);
            assert_eq!(
                (get(&k, CKA_SEED), get(&k, CKA_VALUE)),
                (Some(seed.clone()), None)
            );
            assert_eq!(k.public, None);
            let k = private_key(s, None, &asn1::tlv(asn1::OCTET_STRING, &expanded)).unwrap();
            assert_eq!(
                (get(&k, CKA_SEED), get(&k, CKA_VALUE)),
                (None, Some(expanded.clone()))
            );
            let k = private_key(s, None, &both(&seed, &expanded)).unwrap();
            assert_eq!(
                (get(&k, CKA_SEED), get(&k, CKA_VALUE)),
                (Some(seed.clone()), Some(expanded.clone()))
            );
            let k384 = 384 * usize::from(s.dims.0);
            assert_eq!(
                k.public,
                (s.family == Family::MlKem).then(|| expanded[k384..k384 + s.public_len].to_vec())
            );
            assert_eq!(k.kind, s.name);
            assert_eq!(k.key_type, s.family.key_type());
        }
    }

    #[test]
    fn disagreeing_wrong_length_and_malformed_forms_are_refused_with_a_reason() {
        for s in SETS.iter().filter(|s| s.family != Family::SlhDsa) {
            let (seed, expanded) = forms(s);
            let msg = |body: &[u8]| private_key(s, None, body).err().unwrap_or_default();
            // Another seed with the same expanded key.
            let mut other = seed.clone();
            other[0] ^= 1;
            assert!(
                msg(&both(&other, &expanded)).contains("disagree"),
                "{}",
                s.name
            );
            // ML-KEM: z (the seed's second half) alone differs.
            if s.family == Family::MlKem {
                let mut z = seed.clone();
                z[63] ^= 1;
                assert!(msg(&both(&z, &expanded)).contains("disagree"));
                let mut bad = expanded.clone();
                bad[384 * usize::from(s.dims.0)] ^= 1;
                assert!(msg(&asn1::tlv(asn1::OCTET_STRING, &bad)).contains("hash check"));
            }
            assert!(msg(&asn1::tlv(0x80, &seed[1..])).contains(&format!(
                "seed is {} bytes, not {}",
                s.seed_len - 1,
                s.seed_len
            )));
            let mut long = expanded.clone();
            long.push(0);
            assert!(msg(&asn1::tlv(asn1::OCTET_STRING, &long)).contains("not"));
            assert!(msg(&both(&seed, &long)).contains(&format!("{} bytes", s.private_len + 1)));
            // [0] constructed, a trailing element, a missing one, junk.
            for bad in [
                asn1::tlv(0xa0, &asn1::tlv(asn1::OCTET_STRING, &seed)),
                {
                    let mut b = asn1::tlv(0x80, &seed);
                    b.push(0);
                    b
                },
                asn1::tlv(asn1::SEQUENCE, &asn1::tlv(asn1::OCTET_STRING, &seed)),
                {
                    let mut b = asn1::tlv(asn1::OCTET_STRING, &seed);
                    b.extend(asn1::tlv(asn1::OCTET_STRING, &expanded));
                    b.extend(vec![0x05, 0x00]);
                    asn1::tlv(asn1::SEQUENCE, &b)
                },
                vec![],
                vec![0x80, 0x84, 0xff, 0xff, 0xff, 0xff],
            ] {
                assert!(msg(&bad).contains("none of"), "{}: {}", s.name, msg(&bad));
            }
        }
    }

    #[test]
    fn public_key_infos_are_the_raw_key_in_a_bit_string() {
        for s in SETS {
            let pk = vec![0xa5; s.public_len];
            let ckp = s.ckp.to_ne_bytes();
            let spki = public_key_info(s.family.key_type(), Some(&ckp), Some(&pk)).unwrap();
            let outer = asn1::single(&spki, asn1::SEQUENCE).unwrap();
            let mut r = Reader::new(outer.body);
            let alg = r.expect(asn1::SEQUENCE).unwrap();
            assert_eq!(
                asn1::single(alg.body, asn1::OID).unwrap().body,
                &s.oid()[..]
            );
            let bits = r.expect(asn1::BIT_STRING).unwrap();
            assert!(r.is_empty());
            assert_eq!(bits.body[0], 0);
            assert_eq!(&bits.body[1..], &pk[..]);
            let e = public_key_info(s.family.key_type(), Some(&ckp), Some(&pk[1..]))
                .err()
                .unwrap();
            assert!(e.contains("bytes, not"), "{e}");
        }
        assert!(public_key_info(CKK_ML_DSA, None, Some(&[0; 1312])).is_err());
        assert!(public_key_info(CKK_ML_DSA, Some(&99u64.to_ne_bytes()), Some(&[0; 1312])).is_err());
    }
}
