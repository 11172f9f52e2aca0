//! RSA encryption and decryption (mechanisms spec §2.1.6–2.1.8):
//! RSAES-PKCS1-v1_5, RSAES-OAEP and raw X.509, single-part only.

use super::common::{Hash, SysRng, be_padded, emit, private_of, public_of, raw_private, uint};
use crate::error::{Result, err};
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::{CipherOperation, Direction, OutputLen, single_part_cipher};
use crate::mechanisms::params::{Mechanism, Param};
use ::rsa::traits::PublicKeyParts;
use ::rsa::{Oaep, Pkcs1v15Encrypt};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroizing;

/// The encryption padding.
enum CipherPadding {
    /// RSAES-PKCS1-v1_5 (§2.1.6).
    Pkcs1,
    /// RSAES-OAEP (§2.1.8) with its hash, MGF1 hash and label.
    Oaep {
        hash: Hash,
        mgf: Hash,
        label: Vec<u8>,
    },
    /// Raw (§2.1.7).
    Raw,
}

/// RSA encryption (public key) and decryption (private key, blinded):
/// `CKM_RSA_PKCS`, `CKM_RSA_PKCS_OAEP`, `CKM_RSA_X_509`; also the
/// `C_WrapKey` / `C_UnwrapKey` path. Single-part only.
pub struct RsaCipher {
    key: Arc<KeyMaterial>,
    k: usize,
    direction: Direction,
    padding: CipherPadding,
}

impl RsaCipher {
    /// Starts an encryption (public key) or decryption (private key).
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>, direction: Direction) -> Result<Self> {
        let k = match direction {
            Direction::Encrypt => {
                let public = public_of(&key)?;
                super::keys::require_full_size(public)?;
                public.size()
            }
            Direction::Decrypt => private_of(&key)?.size(),
        };
        let bad = || err(CKR_MECHANISM_PARAM_INVALID);
        let padding = match (mech.ty, mech.param) {
            (CKM_RSA_PKCS, Param::None) => CipherPadding::Pkcs1,
            (CKM_RSA_X_509, Param::None) => CipherPadding::Raw,
            (CKM_RSA_PKCS_OAEP, Param::Oaep { hash, mgf, label }) => {
                let hash = Hash::from_mech(hash).ok_or_else(bad)?;
                let mgf = Hash::from_mgf(mgf).ok_or_else(bad)?;
                if k < 2 * hash.len() + 2 {
                    return Err(err(CKR_KEY_SIZE_RANGE));
                }
                CipherPadding::Oaep {
                    hash,
                    mgf,
                    label: label.to_vec(),
                }
            }
            (CKM_RSA_PKCS | CKM_RSA_X_509 | CKM_RSA_PKCS_OAEP, _) => return Err(bad()),
            // A mechanism of another family with an RSA key.
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        Ok(RsaCipher {
            key,
            k,
            direction,
            padding,
        })
    }

    /// Largest plaintext.
    fn max_plain(&self) -> usize {
        match &self.padding {
            CipherPadding::Pkcs1 => self.k - 11,
            CipherPadding::Oaep { hash, .. } => self.k - 2 * hash.len() - 2,
            CipherPadding::Raw => self.k,
        }
    }

    /// The crate's OAEP padding for the parameters. The label is arbitrary
    /// bytes in PKCS #11 but a `String` in the crate, so it is fed to the
    /// label hash up front and the crate's own label left empty: the crate
    /// only ever uses that digest to compute `lHash = Hash(L)`.
    fn oaep(hash: Hash, mgf: Hash, label: &[u8]) -> Oaep {
        let mut digest = hash.dyn_digest();
        digest.update(label);
        Oaep {
            digest,
            mgf_digest: mgf.dyn_digest(),
            label: None,
        }
    }

    fn encrypt(&self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let key = public_of(&self.key)?;
        if data.len() > self.max_plain() {
            return Err(err(CKR_DATA_LEN_RANGE));
        }
        #[cfg(feature = "aws-lc")]
        if let (KeyMaterial::RsaPublic(_, Some(aws)), CipherPadding::Oaep { hash, mgf, label }) =
            (&*self.key, &self.padding)
            && let Some(c) = aws.oaep_encrypt(hash.mech(), mgf.mech(), label, data)
        {
            return emit(&c?, out);
        }
        let failed = |_| err(CKR_FUNCTION_FAILED);
        let c = match &self.padding {
            CipherPadding::Pkcs1 => key
                .encrypt(&mut SysRng, Pkcs1v15Encrypt, data)
                .map_err(failed)?,
            CipherPadding::Oaep { hash, mgf, label } => key
                .encrypt(&mut SysRng, Self::oaep(*hash, *mgf, label), data)
                .map_err(failed)?,
            CipherPadding::Raw => {
                let m = uint(data);
                if &m >= key.n() {
                    return Err(err(CKR_DATA_INVALID));
                }
                be_padded(&m.modpow(key.e(), key.n()), self.k)
                    .ok_or(err(CKR_FUNCTION_FAILED))?
                    .to_vec()
            }
        };
        emit(&c, out)
    }

    fn decrypt(&self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let key = private_of(&self.key)?;
        if data.len() != self.k {
            return Err(err(CKR_ENCRYPTED_DATA_LEN_RANGE));
        }
        let c = uint(data);
        if &c >= key.n() {
            return Err(err(CKR_ENCRYPTED_DATA_INVALID));
        }
        #[cfg(feature = "aws-lc")]
        if let (KeyMaterial::RsaPrivate(_, Some(aws)), CipherPadding::Oaep { hash, mgf, label }) =
            (&*self.key, &self.padding)
            && let Some(plain) = aws.oaep_decrypt(hash.mech(), mgf.mech(), label, data)
        {
            return emit(&plain?, out);
        }
        let invalid = |_| err(CKR_ENCRYPTED_DATA_INVALID);
        let plain = Zeroizing::new(match &self.padding {
            CipherPadding::Pkcs1 => key
                .decrypt_blinded(&mut SysRng, Pkcs1v15Encrypt, data)
                .map_err(invalid)?,
            CipherPadding::Oaep { hash, mgf, label } => key
                .decrypt_blinded(&mut SysRng, Self::oaep(*hash, *mgf, label), data)
                .map_err(invalid)?,
            CipherPadding::Raw => be_padded(&raw_private(key, &c)?, self.k)
                .ok_or(err(CKR_FUNCTION_FAILED))?
                .to_vec(),
        });
        emit(&plain, out)
    }
}

impl CipherOperation for RsaCipher {
    fn output_len(&self, _input_len: usize) -> OutputLen {
        match (self.direction, &self.padding) {
            (Direction::Encrypt, _) | (Direction::Decrypt, CipherPadding::Raw) => {
                OutputLen::Exact(self.k)
            }
            (Direction::Decrypt, _) => OutputLen::AtMost(self.max_plain()),
        }
    }

    fn process(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        match self.direction {
            Direction::Encrypt => self.encrypt(data, out),
            Direction::Decrypt => self.decrypt(data, out),
        }
    }

    single_part_cipher!();
}

#[cfg(test)]
mod tests {
    use super::super::tests::materials;
    use super::*;

    #[test]
    fn ciphers_round_trip_and_reject() {
        let (private, public) = materials();
        let hashes = [CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA384, CKM_SHA512];
        let mgfs = [
            CKG_MGF1_SHA1,
            CKG_MGF1_SHA224,
            CKG_MGF1_SHA256,
            CKG_MGF1_SHA384,
            CKG_MGF1_SHA512,
        ];
        let mut mechs = vec![
            Mechanism::plain(CKM_RSA_PKCS),
            Mechanism::plain(CKM_RSA_X_509),
        ];
        for h in hashes {
            for g in mgfs {
                mechs.push(Mechanism {
                    ty: CKM_RSA_PKCS_OAEP,
                    param: Param::Oaep {
                        hash: h,
                        mgf: g,
                        label: b"\xffnot utf-8",
                    },
                });
            }
        }
        for mech in &mechs {
            let data = if mech.ty == CKM_RSA_X_509 {
                let mut d = vec![0u8; 256];
                d[200..].fill(0x42);
                d
            } else {
                b"secret".to_vec()
            };
            let mut e = RsaCipher::new(mech, public.clone(), Direction::Encrypt).unwrap();
            assert_eq!(e.output_len(data.len()), OutputLen::Exact(256));
            let mut ct = vec![0u8; 256];
            assert_eq!(e.process(&data, &mut ct).unwrap(), 256);
            let mut d = RsaCipher::new(mech, private.clone(), Direction::Decrypt).unwrap();
            let mut pt = vec![0u8; d.output_len(256).bound()];
            let n = d.process(&ct, &mut pt).unwrap();
            assert_eq!(&pt[..n], &data[..]);
            if mech.ty != CKM_RSA_X_509 {
                ct[5] ^= 1;
                let mut d = RsaCipher::new(mech, private.clone(), Direction::Decrypt).unwrap();
                assert_eq!(
                    d.process(&ct, &mut pt).unwrap_err().rv(),
                    CKR_ENCRYPTED_DATA_INVALID
                );
            }
            let mut d = RsaCipher::new(mech, private.clone(), Direction::Decrypt).unwrap();
            assert_eq!(
                d.process(&ct[1..], &mut pt).unwrap_err().rv(),
                CKR_ENCRYPTED_DATA_LEN_RANGE
            );
            assert_eq!(
                d.update(&ct, &mut pt).unwrap_err().rv(),
                CKR_FUNCTION_NOT_SUPPORTED
            );
        }
        // A different label does not decrypt.
        let with = |label: &'static [u8]| Mechanism {
            ty: CKM_RSA_PKCS_OAEP,
            param: Param::Oaep {
                hash: CKM_SHA256,
                mgf: CKG_MGF1_SHA256,
                label,
            },
        };
        let mut e = RsaCipher::new(&with(b"a"), public.clone(), Direction::Encrypt).unwrap();
        let mut ct = vec![0u8; 256];
        e.process(b"x", &mut ct).unwrap();
        let mut d = RsaCipher::new(&with(b"b"), private.clone(), Direction::Decrypt).unwrap();
        assert_eq!(
            d.process(&ct, &mut [0u8; 256]).unwrap_err().rv(),
            CKR_ENCRYPTED_DATA_INVALID
        );
        // Length limits and parameters.
        let mut e = RsaCipher::new(
            &Mechanism::plain(CKM_RSA_PKCS),
            public.clone(),
            Direction::Encrypt,
        )
        .unwrap();
        assert_eq!(
            e.process(&[0u8; 246], &mut ct).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        let mut e = RsaCipher::new(&with(b""), public.clone(), Direction::Encrypt).unwrap();
        assert_eq!(
            e.process(&[0u8; 191], &mut ct).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        assert!(e.process(&[0u8; 190], &mut ct).is_ok());
        for param in [
            Param::None,
            Param::Oaep {
                hash: CKM_MD5,
                mgf: CKG_MGF1_SHA1,
                label: b"",
            },
            Param::Oaep {
                hash: CKM_SHA_1,
                mgf: 0x77,
                label: b"",
            },
        ] {
            let mech = Mechanism {
                ty: CKM_RSA_PKCS_OAEP,
                param,
            };
            assert_eq!(
                RsaCipher::new(&mech, public.clone(), Direction::Encrypt)
                    .err()
                    .unwrap()
                    .rv(),
                CKR_MECHANISM_PARAM_INVALID
            );
        }
        assert_eq!(
            RsaCipher::new(&Mechanism::plain(CKM_RSA_PKCS), private, Direction::Encrypt)
                .err()
                .unwrap()
                .rv(),
            CKR_KEY_TYPE_INCONSISTENT
        );
    }
}
