//! The IKE key derivations (PKCS #11 3.0 mechanisms spec, "IKE"):
//! `CKM_IKE_PRF_DERIVE` (IKEv2 SKEYSEED, RFC 7296 §2.14 and §2.18; IKEv1
//! SKEYID, RFC 2409 §5), `CKM_IKE1_PRF_DERIVE` (SKEYID_d/_a/_e, RFC 2409
//! §5), `CKM_IKE1_EXTENDED_DERIVE` (RFC 2409 Appendix B) and
//! `CKM_IKE2_PRF_PLUS_DERIVE` (prf+, RFC 7296 §2.13), over an HMAC PRF
//! ([`Prf`]). Plain values in, derived bytes out: the keys the parameters
//! name are resolved by the caller (`api::crypto::derive`) and passed as
//! their values, in the order of [`Params::second_keys`].

use crate::error::{Result, err};
use crate::mechanisms::hmac::Prf;
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// Longest nonce (`pNi`, `pNr`) and cookie (`pCKYi`, `pCKYr`): RFC 7296
/// §2.10 caps nonces at 256 bytes; IKEv1 cookies are 8.
pub const MAX_NONCE_LEN: usize = 256;
/// Longest seed data (prf+) and extra data (IKEv1 extended): enough for
/// `Ni ‖ Nr ‖ SPIi ‖ SPIr` with the longest nonces.
pub const MAX_DATA_LEN: usize = 1024;
/// prf+ and the IKEv1 expansion count their blocks in one byte.
const MAX_BLOCKS: usize = 255;

/// The parameters of one of the four mechanisms, as the caller gave them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Params<'a> {
    /// `CK_IKE_PRF_DERIVE_PARAMS`.
    Prf {
        /// `prfMechanism`.
        prf: CK_MECHANISM_TYPE,
        /// `bDataAsKey`: the nonces are the key, the base the data.
        data_as_key: bool,
        /// `bRekey`: `hNewKey`'s value goes before the nonces.
        rekey: bool,
        /// `pNi`.
        ni: &'a [u8],
        /// `pNr`.
        nr: &'a [u8],
        /// `hNewKey` (read only with `bRekey`).
        new_key: CK_OBJECT_HANDLE,
    },
    /// `CK_IKE1_PRF_DERIVE_PARAMS`.
    Ike1Prf {
        /// `prfMechanism`.
        prf: CK_MECHANISM_TYPE,
        /// `hPrevKey` when `bHasPrevKey`.
        prev_key: Option<CK_OBJECT_HANDLE>,
        /// `hKeygxy`.
        keygxy: CK_OBJECT_HANDLE,
        /// `pCKYi`.
        cky_i: &'a [u8],
        /// `pCKYr`.
        cky_r: &'a [u8],
        /// `keyNumber`.
        key_number: u8,
    },
    /// `CK_IKE1_EXTENDED_DERIVE_PARAMS`.
    Ike1Extended {
        /// `prfMechanism`.
        prf: CK_MECHANISM_TYPE,
        /// `hKeygxy` when `bHasKeygxy`.
        keygxy: Option<CK_OBJECT_HANDLE>,
        /// `pExtraData` (may be empty).
        extra: &'a [u8],
    },
    /// `CK_IKE2_PRF_PLUS_DERIVE_PARAMS`.
    PrfPlus {
        /// `prfMechanism`.
        prf: CK_MECHANISM_TYPE,
        /// `hSeedKey` when `bHasSeedKey`.
        seed_key: Option<CK_OBJECT_HANDLE>,
        /// `pSeedData` (may be empty if there is a seed key).
        seed: &'a [u8],
    },
}

impl Params<'_> {
    /// `prfMechanism`.
    pub fn prf(&self) -> CK_MECHANISM_TYPE {
        match *self {
            Params::Prf { prf, .. }
            | Params::Ike1Prf { prf, .. }
            | Params::Ike1Extended { prf, .. }
            | Params::PrfPlus { prf, .. } => prf,
        }
    }

    /// The keys the parameters name besides the base, in the order
    /// [`derive`] takes their values: `hNewKey` (rekey); `hKeygxy` then
    /// `hPrevKey`; `hKeygxy`; `hSeedKey`.
    pub fn second_keys(&self) -> Vec<CK_OBJECT_HANDLE> {
        match *self {
            Params::Prf { rekey, new_key, .. } => rekey.then_some(new_key).into_iter().collect(),
            Params::Ike1Prf {
                keygxy, prev_key, ..
            } => std::iter::once(keygxy).chain(prev_key).collect(),
            Params::Ike1Extended { keygxy, .. } => keygxy.into_iter().collect(),
            Params::PrfPlus { seed_key, .. } => seed_key.into_iter().collect(),
        }
    }

    /// True for the two mechanisms that make one PRF block (their output
    /// is at most one block, and one block when the template gives no
    /// length).
    fn one_block(&self) -> bool {
        matches!(self, Params::Prf { .. } | Params::Ike1Prf { .. })
    }
}

/// Checks what the parameters say on their own: a supported PRF,
/// `bDataAsKey` and `bRekey` not both, nonces and cookies of 1 to
/// [`MAX_NONCE_LEN`] bytes, data of at most [`MAX_DATA_LEN`], and prf+
/// with some seed. Else `CKR_MECHANISM_PARAM_INVALID`.
pub fn validate(p: &Params<'_>) -> Result<()> {
    Prf::output_len(p.prf())?;
    let short = |b: &[u8]| (1..=MAX_NONCE_LEN).contains(&b.len());
    let ok = match *p {
        Params::Prf {
            data_as_key,
            rekey,
            ni,
            nr,
            ..
        } => !(data_as_key && rekey) && short(ni) && short(nr),
        Params::Ike1Prf { cky_i, cky_r, .. } => short(cky_i) && short(cky_r),
        Params::Ike1Extended { extra, .. } => extra.len() <= MAX_DATA_LEN,
        Params::PrfPlus { seed_key, seed, .. } => {
            seed.len() <= MAX_DATA_LEN && (seed_key.is_some() || !seed.is_empty())
        }
    };
    if ok {
        Ok(())
    } else {
        Err(err(CKR_MECHANISM_PARAM_INVALID))
    }
}

/// The key types the base may have: a generic secret or the HMAC key type
/// of the PRF.
pub fn base_key_type_ok(p: &Params<'_>, key_type: CK_KEY_TYPE) -> Result<bool> {
    Ok(key_type == CKK_GENERIC_SECRET || key_type == Prf::key_type(p.prf())?)
}

/// The output length for the template's `wanted` length: at most one PRF
/// block for `CKM_IKE_PRF_DERIVE` / `CKM_IKE1_PRF_DERIVE` (one block when
/// not given), at most 255 blocks for prf+ and the IKEv1 expansion (which
/// need a length: `CKR_TEMPLATE_INCOMPLETE`). Too long is
/// `CKR_KEY_SIZE_RANGE`. Checked before anything is computed.
pub fn output_len(p: &Params<'_>, wanted: Option<usize>) -> Result<usize> {
    let h = Prf::output_len(p.prf())?;
    let (max, default) = if p.one_block() {
        (h, Some(h))
    } else {
        (MAX_BLOCKS * h, None)
    };
    match wanted.or(default) {
        None => Err(err(CKR_TEMPLATE_INCOMPLETE)),
        Some(0) => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
        Some(l) if l > max => Err(err(CKR_KEY_SIZE_RANGE)),
        Some(l) => Ok(l),
    }
}

/// Derives `len` bytes (from [`output_len`]) from the base key's value
/// `base` and the values of [`Params::second_keys`] (`seconds`, same
/// order).
pub fn derive(
    p: &Params<'_>,
    base: &[u8],
    seconds: &[&[u8]],
    len: usize,
) -> Result<Zeroizing<Vec<u8>>> {
    validate(p)?;
    let len = output_len(p, Some(len))?;
    if seconds.len() != p.second_keys().len() {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // Room for one whole PRF output (at most 64 bytes) past `len`, so the
    // buffer never grows: a reallocation would leave key bytes behind.
    let mut out = Zeroizing::new(Vec::with_capacity(len + 64));
    match *p {
        Params::Prf {
            prf,
            data_as_key,
            ni,
            nr,
            ..
        } => {
            if data_as_key {
                // SKEYSEED = prf(Ni | Nr, g^ir): the nonces are the key.
                let key = Zeroizing::new([ni, nr].concat());
                Prf::new(prf, &key)?.append(&[base], &mut out);
            } else {
                // prf(K, [g^ir (new)] | Ni | Nr).
                let mut parts = seconds.to_vec();
                parts.extend([ni, nr]);
                Prf::new(prf, base)?.append(&parts, &mut out);
            }
        }
        Params::Ike1Prf {
            prf,
            cky_i,
            cky_r,
            key_number,
            ..
        } => {
            // SKEYID_x = prf(SKEYID, [prev] | g^xy | CKY-I | CKY-R | n).
            let (gxy, prev) = (seconds[0], &seconds[1..]);
            let n = [key_number];
            let mut parts: Vec<&[u8]> = prev.to_vec();
            parts.extend([gxy, cky_i, cky_r, &n[..]]);
            Prf::new(prf, base)?.append(&parts, &mut out);
        }
        Params::Ike1Extended { prf, extra, .. } => {
            // K1 = prf(K, [g^xy] | [extra]) (prf(K, 0) with neither),
            // Kn = prf(K, K(n-1) | [g^xy] | [extra]).
            let prf = Prf::new(prf, base)?;
            let mut fixed: Vec<&[u8]> = seconds.to_vec();
            if !extra.is_empty() {
                fixed.push(extra);
            }
            if fixed.is_empty() {
                prf.append(&[&[0u8]], &mut out);
            } else {
                prf.append(&fixed, &mut out);
            }
            while out.len() < len {
                let h = prf.out_len();
                let prev = Zeroizing::new(out[out.len() - h..].to_vec());
                let mut parts = vec![&prev[..]];
                parts.extend(&fixed);
                prf.append(&parts, &mut out);
            }
        }
        Params::PrfPlus { prf, seed, .. } => {
            // T1 = prf(K, S | 0x01), Tn = prf(K, T(n-1) | S | n),
            // S = [seed key] | seed data.
            let prf = Prf::new(prf, base)?;
            let mut s: Vec<&[u8]> = seconds.to_vec();
            if !seed.is_empty() {
                s.push(seed);
            }
            let mut n = 1u8;
            while out.len() < len {
                let h = prf.out_len();
                let counter = [n];
                let prev = Zeroizing::new(if n == 1 {
                    Vec::new()
                } else {
                    out[out.len() - h..].to_vec()
                });
                let mut parts = vec![&prev[..]];
                parts.extend(&s);
                parts.push(&counter);
                prf.append(&parts, &mut out);
                // At most 255 blocks: output_len bounded len.
                n = n.wrapping_add(1);
            }
        }
    }
    out.truncate(len);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::hex;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// NIST CAVP SP 800-135 IKEv1 (SHA-1, DSA signature authentication),
    /// the first vector: SKEYID, SKEYID_d, SKEYID_a, SKEYID_e.
    #[test]
    fn cavp_ikev1_sha1_chain() {
        let (ni, nr) = (unhex("ced5635da6796075"), unhex("6244b427712fb776"));
        let (cky_i, cky_r) = (unhex("382e5c8b0a3fa307"), unhex("ba4b7616700a2413"));
        let gxy = unhex(concat!(
            "2a2e0bbe8da3657a83f3d35826e49e2d38e557e912a1b9e6c30c63577b3eab715466202862027f2c26f309",
            "0743555579611771db0b92bef93834432a3a7762fc8a0f4889fd281d6082770d10a40d7bad61e832f041e620",
            "d6787e7f62ab2861ddfbe272e0d9d3cdec5f1bbf750e24b8b32d6d714968ad69ce5086c32ad2742ebc"
        ));
        let skeyid_p = Params::Prf {
            prf: CKM_SHA_1_HMAC,
            data_as_key: true,
            rekey: false,
            ni: &ni,
            nr: &nr,
            new_key: 0,
        };
        let skeyid = derive(&skeyid_p, &gxy, &[], 20).unwrap();
        assert_eq!(hex(&skeyid), "dc37ac99de6dcfbd1ee74af7fb36f9b4b0a7829d");
        let mut prev: Option<Zeroizing<Vec<u8>>> = None;
        for (n, want) in [
            "486293ed547adb562cefdaf43d3d8457b196f2b6",
            "f4053b5ca07e59bb41b8f401037ca90b72b3917e",
            "49a1d53a80fb77e663552964fbbcb45092021473",
        ]
        .iter()
        .enumerate()
        {
            let p = Params::Ike1Prf {
                prf: CKM_SHA_1_HMAC,
                prev_key: prev.as_ref().map(|_| 1),
                keygxy: 2,
                cky_i: &cky_i,
                cky_r: &cky_r,
                key_number: n as u8,
            };
            let mut seconds: Vec<&[u8]> = vec![&gxy];
            seconds.extend(prev.as_deref().map(|v| &v[..]));
            let k = derive(&p, &skeyid, &seconds, 20).unwrap();
            assert_eq!(hex(&k), *want, "SKEYID_{n}");
            prev = Some(k);
        }
    }

    #[test]
    fn parameters_and_lengths_are_checked() {
        let n = [1u8; 8];
        let prf = |data_as_key, rekey, ni: &'static [u8]| Params::Prf {
            prf: CKM_SHA256_HMAC,
            data_as_key,
            rekey,
            ni,
            nr: &[1; 8],
            new_key: 0,
        };
        assert!(validate(&prf(true, false, &[1; 8])).is_ok());
        for bad in [
            prf(true, true, &[1; 8]),
            prf(false, false, &[]),
            prf(false, false, &[0; MAX_NONCE_LEN + 1]),
        ] {
            assert_eq!(
                validate(&bad).unwrap_err().rv(),
                CKR_MECHANISM_PARAM_INVALID
            );
        }
        for mech in [
            CKM_MD5_HMAC,
            CKM_SHA256_HMAC_GENERAL,
            CKM_AES_CMAC,
            CKM_SHA256,
        ] {
            let p = Params::PrfPlus {
                prf: mech,
                seed_key: None,
                seed: &n,
            };
            assert_eq!(validate(&p).unwrap_err().rv(), CKR_MECHANISM_PARAM_INVALID);
        }
        let plus = Params::PrfPlus {
            prf: CKM_SHA256_HMAC,
            seed_key: None,
            seed: &[],
        };
        assert_eq!(
            validate(&plus).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
        let plus = Params::PrfPlus {
            prf: CKM_SHA256_HMAC,
            seed_key: None,
            seed: &n,
        };
        assert_eq!(
            output_len(&plus, None).unwrap_err().rv(),
            CKR_TEMPLATE_INCOMPLETE
        );
        assert_eq!(output_len(&plus, Some(255 * 32)).unwrap(), 255 * 32);
        assert_eq!(
            output_len(&plus, Some(255 * 32 + 1)).unwrap_err().rv(),
            CKR_KEY_SIZE_RANGE
        );
        // The longest prf+ output: 255 blocks, the counter never wraps.
        let long = derive(&plus, b"k", &[], 255 * 32).unwrap();
        assert_eq!(long.len(), 255 * 32);
        let one = prf(false, false, &[1; 8]);
        assert_eq!(output_len(&one, None).unwrap(), 32);
        assert_eq!(
            output_len(&one, Some(33)).unwrap_err().rv(),
            CKR_KEY_SIZE_RANGE
        );
        assert!(base_key_type_ok(&one, CKK_SHA256_HMAC).unwrap());
        assert!(!base_key_type_ok(&one, CKK_SHA_1_HMAC).unwrap());
        assert!(!base_key_type_ok(&one, CKK_AES).unwrap());
    }
}
