//! The TLS 1.2 PRF (RFC 5246 §5) and the PKCS #11 mechanisms built on it
//! (mechanisms spec 3.0 §2.42 "TLS 1.2 mechanisms" and §2.41 "TLS"):
//! master secret (`CKM_TLS12_MASTER_KEY_DERIVE[_DH]`), extended master
//! secret (RFC 7627, `CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE[_DH]`), key
//! block (`CKM_TLS12_KEY_AND_MAC_DERIVE`, `CKM_TLS12_KEY_SAFE_DERIVE`), the
//! exporter-style KDF (`CKM_TLS_KDF`, `CKM_TLS12_KDF`) and the Finished MAC
//! (`CKM_TLS_MAC`, `CKM_TLS12_MAC`).
//!
//! `PRF(secret, label, seed) = P_hash(secret, label ‖ seed)`,
//! `P_hash(secret, s) = HMAC(secret, A(1) ‖ s) ‖ HMAC(secret, A(2) ‖ s) ‖ …`
//! with `A(0) = s`, `A(i) = HMAC(secret, A(i-1))`. The PRF hash is a hash
//! mechanism (`CKM_SHA256`, `CKM_SHA384`, …); `CKM_TLS_PRF` selects the
//! TLS 1.0/1.1 PRF (`P_MD5(S1, …) ⊕ P_SHA1(S2, …)`, RFC 2246 §5) where a
//! mechanism allows it (TLS_KDF, TLS_MAC).

use crate::error::{Result, err};
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::SignOperation;
use cryptoki_sys::*;
use hmac::{KeyInit, Mac};
use std::sync::Arc;
use zeroize::Zeroizing;

/// RFC 5246 §8.1.
pub const MASTER_SECRET: &[u8] = b"master secret";
/// RFC 7627 §4.
pub const EXTENDED_MASTER_SECRET: &[u8] = b"extended master secret";
/// RFC 5246 §6.3.
pub const KEY_EXPANSION: &[u8] = b"key expansion";
/// RFC 5246 §7.4.9.
pub const CLIENT_FINISHED: &[u8] = b"client finished";
/// RFC 5246 §7.4.9.
pub const SERVER_FINISHED: &[u8] = b"server finished";
/// The labels TLS itself uses: a `CKM_TLS_KDF` seed may not begin with one
/// (RFC 5705 §4; docs/SECURITY.md "TLS 1.2").
pub const RESERVED_LABELS: [&[u8]; 5] = [
    MASTER_SECRET,
    EXTENDED_MASTER_SECRET,
    KEY_EXPANSION,
    CLIENT_FINISHED,
    SERVER_FINISHED,
];

/// Length of each Hello random (RFC 5246 §7.4.1.2).
pub const RANDOM_LEN: usize = 32;
/// Length of a master secret (RFC 5246 §8.1).
pub const MASTER_LEN: usize = 48;
/// The longest label, context or session hash a parameter may carry.
pub const MAX_INPUT_LEN: usize = 1024;
/// The most data one `CKM_TLS_MAC` computation takes (the handshake hash
/// is at most 64 bytes): more is `CKR_DATA_LEN_RANGE`.
pub const MAX_MAC_DATA: usize = 1024;
/// The longest `ulMacLength` of `CK_TLS_MAC_PARAMS`.
pub const MAX_MAC_LEN: usize = 64;
/// The longest key, MAC key or IV of one side of a key block, in bytes.
pub const MAX_KEY_MAT_PART: usize = 512;

/// `CK_TLS_KDF_PARAMS` (`CKM_TLS_KDF`, `CKM_TLS12_KDF`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KdfParams<'a> {
    /// `prfMechanism`.
    pub prf: CK_MECHANISM_TYPE,
    /// `pLabel`.
    pub label: &'a [u8],
    /// `RandomInfo.pClientRandom`.
    pub client: &'a [u8],
    /// `RandomInfo.pServerRandom`.
    pub server: &'a [u8],
    /// `pContextData` (empty when absent), appended to the seed as given.
    pub context: &'a [u8],
}

/// `CK_TLS_MAC_PARAMS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacParams {
    /// `prfHashMechanism`.
    pub prf: CK_MECHANISM_TYPE,
    /// `ulMacLength` in bytes.
    pub mac_len: CK_ULONG,
    /// `ulServerOrClient`: 1 server, 2 client.
    pub server_or_client: CK_ULONG,
}

/// `CK_TLS12_MASTER_KEY_DERIVE_PARAMS` or
/// `CK_TLS12_EXTENDED_MASTER_KEY_DERIVE_PARAMS`, copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MasterParams {
    /// `prfHashMechanism`.
    pub prf: CK_MECHANISM_TYPE,
    /// The Hello randoms (plain master secret).
    pub randoms: Option<([u8; RANDOM_LEN], [u8; RANDOM_LEN])>,
    /// `pSessionHash` (extended master secret).
    pub session_hash: Option<Vec<u8>>,
    /// `pVersion` was given (non-NULL).
    pub version: bool,
}

/// `CK_TLS12_KEY_MAT_PARAMS`, copied; sizes in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyMatParams {
    /// `prfHashMechanism`.
    pub prf: CK_MECHANISM_TYPE,
    /// `ulMacSizeInBits / 8`.
    pub mac_len: usize,
    /// `ulKeySizeInBits / 8`.
    pub key_len: usize,
    /// `ulIVSizeInBits / 8` (0 for `CKM_TLS12_KEY_SAFE_DERIVE`).
    pub iv_len: usize,
    /// `RandomInfo.pClientRandom`.
    pub client: [u8; RANDOM_LEN],
    /// `RandomInfo.pServerRandom`.
    pub server: [u8; RANDOM_LEN],
}

impl KeyMatParams {
    /// Bytes of key block the split takes.
    pub fn block_len(&self) -> usize {
        2 * (self.mac_len + self.key_len + self.iv_len)
    }
}

macro_rules! with_hmac {
    ($prf:expr, $f:ident($($a:expr),*)) => {
        match $prf {
            CKM_SHA_1 => $f::<hmac::Hmac<sha1::Sha1>>($($a),*),
            CKM_SHA224 => $f::<hmac::Hmac<sha2::Sha224>>($($a),*),
            CKM_SHA256 => $f::<hmac::Hmac<sha2::Sha256>>($($a),*),
            CKM_SHA384 => $f::<hmac::Hmac<sha2::Sha384>>($($a),*),
            CKM_SHA512 => $f::<hmac::Hmac<sha2::Sha512>>($($a),*),
            CKM_SHA512_224 => $f::<hmac::Hmac<sha2::Sha512_224>>($($a),*),
            CKM_SHA512_256 => $f::<hmac::Hmac<sha2::Sha512_256>>($($a),*),
            CKM_SHA3_224 => $f::<hmac::Hmac<sha3::Sha3_224>>($($a),*),
            CKM_SHA3_256 => $f::<hmac::Hmac<sha3::Sha3_256>>($($a),*),
            CKM_SHA3_384 => $f::<hmac::Hmac<sha3::Sha3_384>>($($a),*),
            CKM_SHA3_512 => $f::<hmac::Hmac<sha3::Sha3_512>>($($a),*),
            _ => Err(err(CKR_MECHANISM_PARAM_INVALID)),
        }
    };
}

/// True if `prf` names a TLS 1.2 PRF hash this module computes.
pub fn is_prf_hash(prf: CK_MECHANISM_TYPE) -> bool {
    matches!(
        prf,
        CKM_SHA_1
            | CKM_SHA224
            | CKM_SHA256
            | CKM_SHA384
            | CKM_SHA512
            | CKM_SHA512_224
            | CKM_SHA512_256
            | CKM_SHA3_224
            | CKM_SHA3_256
            | CKM_SHA3_384
            | CKM_SHA3_512
    )
}

/// `P_hash(secret, label ‖ seeds…)` into `out`.
fn p_hash<M: Mac + KeyInit + Clone>(
    secret: &[u8],
    label: &[u8],
    seeds: &[&[u8]],
    out: &mut [u8],
) -> Result<()> {
    let keyed = <M as KeyInit>::new_from_slice(secret).map_err(|_| err(CKR_KEY_SIZE_RANGE))?;
    let absorb = |m: &mut M| {
        m.update(label);
        for s in seeds {
            m.update(s);
        }
    };
    let mut m = keyed.clone();
    absorb(&mut m);
    let mut a = Zeroizing::new(m.finalize().into_bytes().to_vec());
    let mut pos = 0;
    while pos < out.len() {
        let mut m = keyed.clone();
        m.update(&a);
        absorb(&mut m);
        let block = Zeroizing::new(m.finalize().into_bytes().to_vec());
        let n = (out.len() - pos).min(block.len());
        out[pos..pos + n].copy_from_slice(&block[..n]);
        pos += n;
        if pos < out.len() {
            let mut m = keyed.clone();
            m.update(&a);
            a = Zeroizing::new(m.finalize().into_bytes().to_vec());
        }
    }
    Ok(())
}

/// `PRF(secret, label, seeds…)` filling `out`: the TLS 1.2 PRF over the
/// HMAC of `prf` (a hash mechanism), or with `CKM_TLS_PRF` and `legacy`
/// the TLS 1.0/1.1 PRF. Unknown PRFs are `CKR_MECHANISM_PARAM_INVALID`.
pub fn prf(
    prf: CK_MECHANISM_TYPE,
    legacy: bool,
    secret: &[u8],
    label: &[u8],
    seeds: &[&[u8]],
    out: &mut [u8],
) -> Result<()> {
    if prf == CKM_TLS_PRF && legacy {
        // RFC 2246 §5: the halves share the middle byte when the length is odd.
        let half = secret.len().div_ceil(2);
        let (s1, s2) = (&secret[..half], &secret[secret.len() - half..]);
        p_hash::<hmac::Hmac<md5::Md5>>(s1, label, seeds, out)?;
        let mut other = Zeroizing::new(vec![0u8; out.len()]);
        p_hash::<hmac::Hmac<sha1::Sha1>>(s2, label, seeds, &mut other)?;
        out.iter_mut().zip(other.iter()).for_each(|(o, x)| *o ^= x);
        return Ok(());
    }
    with_hmac!(prf, p_hash(secret, label, seeds, out))
}

/// True if `label ‖ client ‖ server ‖ context` begins with one of the
/// labels TLS uses ([`RESERVED_LABELS`]).
pub fn seed_is_reserved(p: &KdfParams<'_>) -> bool {
    let start_len = RESERVED_LABELS.iter().map(|l| l.len()).max().unwrap_or(0);
    let seed: Vec<u8> = [p.label, p.client, p.server, p.context]
        .concat()
        .into_iter()
        .take(start_len)
        .collect();
    RESERVED_LABELS.iter().any(|l| seed.starts_with(l))
}

/// `CKM_TLS_KDF` / `CKM_TLS12_KDF`: `PRF(base, label, client ‖ server ‖
/// context)`, `len` bytes. A seed beginning with a TLS label is refused
/// (`CKR_MECHANISM_PARAM_INVALID`).
pub fn kdf(p: &KdfParams<'_>, base: &[u8], len: usize) -> Result<Zeroizing<Vec<u8>>> {
    if p.label.is_empty()
        || p.client.len() != RANDOM_LEN
        || p.server.len() != RANDOM_LEN
        || seed_is_reserved(p)
    {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    let mut out = Zeroizing::new(vec![0u8; len]);
    prf(
        p.prf,
        true,
        base,
        p.label,
        &[p.client, p.server, p.context],
        &mut out,
    )?;
    Ok(out)
}

/// The master secret (RFC 5246 §8.1) or extended master secret (RFC 7627
/// §4) of `pre_master`.
pub fn master_secret(p: &MasterParams, pre_master: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    let mut out = Zeroizing::new(vec![0u8; MASTER_LEN]);
    match (&p.randoms, &p.session_hash) {
        (Some((c, s)), None) => prf(p.prf, false, pre_master, MASTER_SECRET, &[c, s], &mut out)?,
        (None, Some(h)) => prf(
            p.prf,
            false,
            pre_master,
            EXTENDED_MASTER_SECRET,
            &[h],
            &mut out,
        )?,
        _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
    }
    Ok(out)
}

/// The key block of `master` (RFC 5246 §6.3: server random first), as long
/// as the split of `p` takes.
pub fn key_block(p: &KeyMatParams, master: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    let mut out = Zeroizing::new(vec![0u8; p.block_len()]);
    prf(
        p.prf,
        false,
        master,
        KEY_EXPANSION,
        &[&p.server, &p.client],
        &mut out,
    )?;
    Ok(out)
}

/// `CKM_TLS_MAC` / `CKM_TLS12_MAC`: `PRF(master, "server finished" or
/// "client finished", data)`, `ulMacLength` bytes; the data (the handshake
/// hash) is collected over the parts and bounded.
#[derive(Clone)]
pub struct TlsMacSign {
    key: Arc<KeyMaterial>,
    prf: CK_MECHANISM_TYPE,
    label: &'static [u8],
    out_len: usize,
    data: Zeroizing<Vec<u8>>,
}

impl TlsMacSign {
    /// Starts a TLS MAC with a generic secret (the master secret).
    pub fn new(mech: &crate::mechanisms::Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let crate::mechanisms::Param::TlsMac(p) = mech.param else {
            return Err(err(CKR_MECHANISM_PARAM_INVALID));
        };
        let label = match p.server_or_client {
            1 => SERVER_FINISHED,
            2 => CLIENT_FINISHED,
            _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
        };
        if p.mac_len == 0
            || p.mac_len as u128 > MAX_MAC_LEN as u128
            || !(is_prf_hash(p.prf) || p.prf == CKM_TLS_PRF)
        {
            return Err(err(CKR_MECHANISM_PARAM_INVALID));
        }
        if !matches!(
            &*key,
            KeyMaterial::Secret {
                key_type: CKK_GENERIC_SECRET,
                ..
            }
        ) {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        }
        Ok(TlsMacSign {
            key,
            prf: p.prf,
            label,
            out_len: p.mac_len as usize,
            data: Zeroizing::new(Vec::new()),
        })
    }
}

impl SignOperation for TlsMacSign {
    fn output_len(&self) -> usize {
        self.out_len
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        if self.data.len().saturating_add(data.len()) > MAX_MAC_DATA {
            return Err(err(CKR_DATA_LEN_RANGE));
        }
        self.data.extend_from_slice(data);
        Ok(())
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let KeyMaterial::Secret { value, .. } = &*self.key else {
            return Err(err(CKR_GENERAL_ERROR));
        };
        let n = self.out_len;
        let result = prf(
            self.prf,
            true,
            value,
            self.label,
            &[&self.data],
            &mut out[..n],
        );
        self.data.clear();
        result.map(|()| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::unhex;

    /// The TLS 1.2 PRF "test label" vectors (IETF TLS WG list, as in
    /// BearSSL `test/test_crypto.c`).
    #[test]
    fn test_label_vectors() {
        let mut out = vec![0u8; 100];
        prf(
            CKM_SHA256,
            false,
            &unhex("9bbe436ba940f017b17652849a71db35"),
            b"test label",
            &[&unhex("a0ba9f936cda311827a6f796ffd5198c")],
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out,
            unhex(
                "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a\
                 6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab\
                 4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701\
                 87347b66"
            )
        );
    }

    /// The TLS 1.0/1.1 PRF (`CKM_TLS_PRF`): CAVS 17.8 "[TLS 1.0/1.1]"
    /// COUNT = 0 (kryoptic `testdata/tlsprf_vectors.txt`), master secret.
    #[test]
    fn tls10_prf_cavs_master_secret() {
        let mut out = vec![0u8; 48];
        prf(
            CKM_TLS_PRF,
            true,
            &unhex(
                "4850b7f08f8502ea0b699377f649fa6f5af5b56c03f11381766cad0d96b129c9\
                 62ff9246ef465d1e1847b857ef93d543",
            ),
            MASTER_SECRET,
            &[
                &unhex("b47ec547fa8553959510982b9bf5628af8b1295f3bead03035ab417bfb26d6f5"),
                &unhex("75d3a1c51c9651992d805a367b0446415d492c76be054eaeb7e31736d20068cf"),
            ],
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out,
            unhex(
                "e8d72a6c2b05dee3b2d1516ef0963ce7686e491d4cc2d4b647d0889fa9ae2f6a\
                 4e3c3c57e442268e60dc27b3cadfe17c"
            )
        );
    }

    /// The SHA-384 "test label" vector (IETF TLS WG list msg03416, as in
    /// GnuTLS `tests/tls12-prf.c`), 148 bytes.
    #[test]
    fn test_label_vector_sha384() {
        let mut out = vec![0u8; 148];
        prf(
            CKM_SHA384,
            false,
            &unhex("b80b733d6ceefcdc71566ea48e5567df"),
            b"test label",
            &[&unhex("cd665cf6a8447dd6ff8b27555edb7465")],
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out,
            unhex(
                "7b0c18e9ced410ed1804f2cfa34a336a1c14dffb4900bb5fd7942107e81c83cd\
                 e9ca0faa60be9fe34f82b1233c9146a0e534cb400fed2700884f9dc236f80edd\
                 8bfa961144c9e8d792eca722a7b32fc3d416d473ebc2c5fd4abfdad05d918425\
                 9b5bf8cd4d90fa0d31e2dec479e4f1a26066f2eea9a69236a3e52655c9e9aee6\
                 91c8f3a26854308d5eaa3be85e0990703d73e56f"
            )
        );
    }

    /// Seeds split over several parts give the same PRF as one seed.
    #[test]
    fn seeds_concatenate() {
        let mut a = [0u8; 77];
        let mut b = [0u8; 77];
        prf(CKM_SHA384, false, b"k", b"l", &[b"ab", b"", b"c"], &mut a).unwrap();
        prf(CKM_SHA384, false, b"k", b"l", &[b"abc"], &mut b).unwrap();
        assert_eq!(a, b);
        assert!(prf(CKM_TLS_PRF, false, b"k", b"l", &[], &mut a).is_err());
        assert!(prf(CKM_MD5, true, b"k", b"l", &[], &mut a).is_err());
    }

    #[test]
    fn reserved_seeds() {
        let r = [0u8; 32];
        let p = |label, client, server| KdfParams {
            prf: CKM_SHA256,
            label,
            client,
            server,
            context: &[],
        };
        assert!(seed_is_reserved(&p(b"key expansion", &r, &r)));
        // A short label with chosen randoms spelling a reserved one.
        let mut c = [0u8; 32];
        c[..12].copy_from_slice(b"ey expansion");
        assert!(seed_is_reserved(&p(b"k", &c, &r)));
        assert!(!seed_is_reserved(&p(b"EXPORTER-test", &r, &r)));
        assert_eq!(
            kdf(&p(b"master secret", &r, &r), b"secret", 16)
                .unwrap_err()
                .rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }
}
