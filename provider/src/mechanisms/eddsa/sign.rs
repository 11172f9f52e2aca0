//! EdDSA signatures (mechanisms spec §2.3.6): `CKM_EDDSA` runs Ed25519,
//! Ed25519ph or Ed25519ctx (RFC 8032 §5.1) on Ed25519 keys and Ed448 or
//! Ed448ph (RFC 8032 §5.2) on Ed448 keys, as its `CK_EDDSA_PARAMS`
//! selects (see `Variant`).

use super::ctx;
use super::ed448;
use crate::error::{Result, err};
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::{SignOperation, VerifyOperation};
use crate::mechanisms::params::{Mechanism, Param};
use cryptoki_sys::*;
use ed25519_dalek::SIGNATURE_LENGTH as SIG_LEN;
use ed25519_dalek::{Signature, Signer, VerifyingKey};
use sha2::{Digest, Sha512};
use sha3::Shake256;
use std::sync::Arc;

/// Longest context RFC 8032 §5.1 allows (its length is one octet of `dom2`).
const MAX_CONTEXT: usize = 255;

/// The RFC 8032 §5.1 instance a `CKM_EDDSA` operation runs, chosen by its
/// `CK_EDDSA_PARAMS` (PKCS#11 3.0 mechanisms spec §2.3.14, `CKM_EDDSA`):
/// no parameter is Ed25519; `phFlag` true is Ed25519ph (context 0–255
/// bytes); `phFlag` false with a context is Ed25519ctx. `phFlag` false and
/// no context is pure Ed25519: RFC 8032 §5.1 says Ed25519ctx "SHOULD NOT"
/// be used with an empty context (OpenSSL refuses it), so the parameter
/// most likely means "no variant" — the reading the mechanisms spec's
/// table (context "optional") leaves open.
///
/// On an Ed448 key, which always signs with a context (RFC 8032 §5.2,
/// `dom4`), `Pure` is Ed448 with the empty context, `Ctx` Ed448 with its
/// context and `Ph` Ed448ph.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Variant {
    /// Ed25519 (RFC 8032 §5.1, no `dom2`).
    Pure,
    /// Ed25519ctx with its 1–255-byte context.
    Ctx(Box<[u8]>),
    /// Ed25519ph with its 0–255-byte context.
    Ph(Box<[u8]>),
}

impl Variant {
    /// Reads the mechanism parameter; a context over 255 bytes (or any
    /// other parameter) is `CKR_MECHANISM_PARAM_INVALID`.
    fn of(mech: &Mechanism<'_>) -> Result<Variant> {
        match mech.param {
            Param::None
            | Param::EdDsa {
                prehash: false,
                context: None,
            } => Ok(Variant::Pure),
            Param::EdDsa { prehash, context } => {
                let c = context.unwrap_or_default();
                if c.len() > MAX_CONTEXT {
                    return Err(err(CKR_MECHANISM_PARAM_INVALID));
                }
                if prehash {
                    Ok(Variant::Ph(c.into()))
                } else if c.is_empty() {
                    Ok(Variant::Pure)
                } else {
                    Ok(Variant::Ctx(c.into()))
                }
            }
            _ => Err(err(CKR_MECHANISM_PARAM_INVALID)),
        }
    }
}

/// True if `mech` is pure Ed25519 (what batch verification supports).
pub fn is_pure(mech: &Mechanism<'_>) -> Result<bool> {
    Ok(Variant::of(mech)? == Variant::Pure)
}

/// The multi-part input of an operation: the message itself for the pure
/// schemes (Ed25519, Ed25519ctx and Ed448 read it twice, RFC 8032 §5.1.6
/// and §5.2.6), or the hash state of `PH(M)` for Ed25519ph (SHA-512) and
/// Ed448ph (SHAKE256), which streams.
enum Input {
    Buffer(Vec<u8>),
    Prehash(Sha512),
    Prehash448(Box<Shake256>),
}

impl Input {
    fn new(variant: &Variant, ed448: bool) -> Input {
        match variant {
            Variant::Ph(_) if ed448 => Input::Prehash448(Box::default()),
            Variant::Ph(_) => Input::Prehash(Sha512::new()),
            _ => Input::Buffer(Vec::new()),
        }
    }

    fn update(&mut self, data: &[u8]) {
        use sha3::digest::Update;
        match self {
            Input::Buffer(b) => b.extend_from_slice(data),
            Input::Prehash(h) => Digest::update(h, data),
            Input::Prehash448(h) => h.update(data),
        }
    }

    /// What is signed or verified: for the pure schemes the message as
    /// given, for Ed25519ph the hash state and for Ed448ph `PH(M)` (`data`
    /// is the whole message of a single-part call).
    fn message<'a>(&'a mut self, data: Option<&'a [u8]>) -> Message<'a> {
        match (self, data) {
            (Input::Buffer(_), Some(d)) => Message::Whole(d),
            (Input::Prehash(_), Some(d)) => Message::Hash(Sha512::new().chain_update(d)),
            (Input::Prehash448(_), Some(d)) => {
                let mut h = Shake256::default();
                sha3::digest::Update::update(&mut h, d);
                Message::Ph448(ed448::prehash(h))
            }
            (Input::Buffer(b), None) => Message::Whole(b),
            (Input::Prehash(h), None) => Message::Hash(std::mem::take(h)),
            (Input::Prehash448(h), None) => {
                Message::Ph448(ed448::prehash(std::mem::take(&mut **h)))
            }
        }
    }

    /// Drops the buffered message (the operation is over).
    fn clear(&mut self) {
        if let Input::Buffer(b) = self {
            *b = Vec::new();
        }
    }
}

/// See [`Input::message`].
enum Message<'a> {
    Whole(&'a [u8]),
    Hash(Sha512),
    Ph448([u8; ed448::PH_LEN]),
}

impl Variant {
    /// The Ed448 context: empty for `Pure` (RFC 8032 §5.2 always has one).
    fn context(&self) -> &[u8] {
        match self {
            Variant::Pure => &[],
            Variant::Ctx(c) | Variant::Ph(c) => c,
        }
    }
}

/// An Ed448 input from a message (the variant decides `Ph448`).
fn ed448_input(message: Message<'_>) -> ed448::Input<'_> {
    match message {
        Message::Whole(m) => ed448::Input::Message(m),
        Message::Ph448(ph) => ed448::Input::Prehashed(ph),
        Message::Hash(_) => unreachable!("Ed448 operations have no SHA-512 state"),
    }
}

/// The signature length of the key's curve.
fn sig_len(ed448: bool) -> usize {
    if ed448 { ed448::SIG_LEN } else { SIG_LEN }
}

/// `CKM_EDDSA` signing: Ed25519, Ed25519ctx, Ed25519ph, Ed448 or Ed448ph.
pub struct EdDsaSign {
    key: Arc<KeyMaterial>,
    variant: Variant,
    input: Input,
}

impl EdDsaSign {
    /// Starts a signature with a private key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let variant = Variant::of(mech)?;
        let ed448 = match *key {
            KeyMaterial::Ed25519Private(_) => false,
            KeyMaterial::Ed448Private(_) => true,
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        Ok(EdDsaSign {
            key,
            input: Input::new(&variant, ed448),
            variant,
        })
    }

    /// Signs `data` (single-part) or the input gathered so far.
    fn sign_message(&mut self, data: Option<&[u8]>, out: &mut [u8]) -> Result<usize> {
        let key = match &*self.key {
            KeyMaterial::Ed25519Private(k) => k,
            KeyMaterial::Ed448Private(k) => {
                let message = ed448_input(self.input.message(data));
                let sig = ed448::sign(k, self.variant.context(), message)?;
                out[..ed448::SIG_LEN].copy_from_slice(&sig);
                return Ok(ed448::SIG_LEN);
            }
            _ => unreachable!("checked in new"),
        };
        let sig = match (&self.variant, self.input.message(data)) {
            (Variant::Pure, Message::Whole(m)) => key.sign(m).to_bytes(),
            (Variant::Ctx(c), Message::Whole(m)) => ctx::sign(key, c, m),
            // RFC 8032 §5.1: PH = SHA-512, dom2(1, C).
            (Variant::Ph(c), Message::Hash(h)) => key
                .sign_prehashed(h, Some(c))
                .map_err(|_| err(CKR_FUNCTION_FAILED))?
                .to_bytes(),
            _ => unreachable!("the input follows the variant"),
        };
        out[..SIG_LEN].copy_from_slice(&sig);
        Ok(SIG_LEN)
    }
}

impl SignOperation for EdDsaSign {
    fn output_len(&self) -> usize {
        sig_len(matches!(*self.key, KeyMaterial::Ed448Private(_)))
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        self.sign_message(Some(data), out)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.input.update(data);
        Ok(())
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let n = self.sign_message(None, out);
        self.input.clear();
        n
    }
}

/// The public key of a verification.
enum PublicKey {
    Ed25519(VerifyingKey),
    Ed448(Box<ed448_goldilocks::VerifyingKey>),
}

/// `CKM_EDDSA` verification, strict for every instance: rejects
/// non-canonical `S`, small-order `A` and `R` (RFC 8032 §5.1.7 and
/// OpenSSL do too; for Ed448 see `ed448.rs`).
pub struct EdDsaVerify {
    key: PublicKey,
    variant: Variant,
    input: Input,
}

impl EdDsaVerify {
    /// Starts a verification with a public key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let variant = Variant::of(mech)?;
        let key = match &*key {
            KeyMaterial::Ed25519Public(k) => PublicKey::Ed25519(*k),
            KeyMaterial::Ed448Public(k) => PublicKey::Ed448(k.clone()),
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        Ok(EdDsaVerify {
            input: Input::new(&variant, matches!(key, PublicKey::Ed448(_))),
            key,
            variant,
        })
    }

    /// Verifies `data` (single-part) or the input gathered so far.
    fn verify_message(&mut self, data: Option<&[u8]>, signature: &[u8]) -> Result<()> {
        let key = match &self.key {
            PublicKey::Ed25519(k) => k,
            PublicKey::Ed448(k) => {
                let sig: &[u8; ed448::SIG_LEN] = signature
                    .try_into()
                    .map_err(|_| err(CKR_SIGNATURE_LEN_RANGE))?;
                let message = ed448_input(self.input.message(data));
                return if ed448::verify(k, self.variant.context(), message, sig) {
                    Ok(())
                } else {
                    Err(err(CKR_SIGNATURE_INVALID))
                };
            }
        };
        let sig: &[u8; SIG_LEN] = signature
            .try_into()
            .map_err(|_| err(CKR_SIGNATURE_LEN_RANGE))?;
        let ok = match (&self.variant, self.input.message(data)) {
            (Variant::Pure, Message::Whole(m)) => {
                key.verify_strict(m, &Signature::from_bytes(sig)).is_ok()
            }
            (Variant::Ctx(c), Message::Whole(m)) => ctx::verify_strict(key, c, m, sig),
            (Variant::Ph(c), Message::Hash(h)) => key
                .verify_prehashed_strict(h, Some(c), &Signature::from_bytes(sig))
                .is_ok(),
            _ => unreachable!("the input follows the variant"),
        };
        if ok {
            Ok(())
        } else {
            Err(err(CKR_SIGNATURE_INVALID))
        }
    }
}

impl VerifyOperation for EdDsaVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        self.verify_message(Some(data), signature)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.input.update(data);
        Ok(())
    }

    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        let r = self.verify_message(None, signature);
        self.input.clear();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::super::keys::*;
    use super::*;
    use crate::attributes::Attributes;
    use crate::mechanisms::rfc8410::{der_point, parse_point};
    use ed25519_dalek::SigningKey;

    fn unhex(s: &str) -> Vec<u8> {
        crate::mechanisms::test_util::unhex(s)
    }

    /// RFC 8032 §7.1, TEST 2.
    #[test]
    fn rfc8032_test_2() {
        let sk = unhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb");
        let pk = unhex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
        let expected = unhex(
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
        );
        let key = Arc::new(load_private(&sk).unwrap());
        let mut s = EdDsaSign::new(&Mechanism::plain(CKM_EDDSA), key).unwrap();
        let mut out = [0u8; 64];
        assert_eq!(s.sign(&[0x72], &mut out).unwrap(), 64);
        assert_eq!(out.to_vec(), expected);
        let pubkey = Arc::new(load_public(&pk).unwrap());
        let mut v = EdDsaVerify::new(&Mechanism::plain(CKM_EDDSA), pubkey).unwrap();
        v.verify(&[0x72], &out).unwrap();
        out[0] ^= 1;
        assert_eq!(
            v.verify(&[0x72], &out).unwrap_err().rv(),
            CKR_SIGNATURE_INVALID
        );
        assert_eq!(
            v.verify(&[0x72], &out[..63]).unwrap_err().rv(),
            CKR_SIGNATURE_LEN_RANGE
        );
    }

    #[test]
    fn multipart_equals_single_part() {
        let key = Arc::new(load_private(&[9; 32]).unwrap());
        let mut a = EdDsaSign::new(&Mechanism::plain(CKM_EDDSA), key.clone()).unwrap();
        let mut b = EdDsaSign::new(&Mechanism::plain(CKM_EDDSA), key).unwrap();
        let (mut x, mut y) = ([0u8; 64], [0u8; 64]);
        a.sign(b"hello world", &mut x).unwrap();
        b.update(b"hello ").unwrap();
        b.update(b"world").unwrap();
        b.finish(&mut y).unwrap();
        assert_eq!(x, y);
    }

    fn eddsa(prehash: bool, context: Option<&[u8]>) -> Mechanism<'_> {
        Mechanism {
            ty: CKM_EDDSA,
            param: Param::EdDsa { prehash, context },
        }
    }

    fn sign_with(mech: &Mechanism<'_>, sk: &[u8], msg: &[u8]) -> [u8; 64] {
        let key = Arc::new(load_private(sk).unwrap());
        let mut out = [0u8; 64];
        EdDsaSign::new(mech, key)
            .unwrap()
            .sign(msg, &mut out)
            .unwrap();
        out
    }

    fn verify_with(mech: &Mechanism<'_>, pk: &[u8], msg: &[u8], sig: &[u8]) -> Result<()> {
        let key = Arc::new(load_public(pk).unwrap());
        EdDsaVerify::new(mech, key).unwrap().verify(msg, sig)
    }

    /// RFC 8032 §7.2 (Ed25519ctx): the four vectors, byte for byte; each
    /// signature fails under another context, as pure Ed25519 and as
    /// Ed25519ph.
    #[test]
    fn rfc8032_ed25519ctx() {
        let k1 = "0305334e381af78f141cb666f6199f57bc3495335a256a95bd2a55bf546663f6";
        let p1 = "dfc9425e4f968f7f0c29f0259cf5f9aed6851c2bb4ad8bfb860cfee0ab248292";
        let m1 = "f726936d19c800494e3fdaff20b276a8";
        let vectors = [
            (
                k1,
                p1,
                m1,
                "666f6f",
                "55a4cc2f70a54e04288c5f4cd1e45a7bb520b36292911876cada7323198dd87a8b36950b95130022907a7fb7c4e9b2d5f6cca685a587b4b21f4b888e4e7edb0d",
            ),
            (
                k1,
                p1,
                m1,
                "626172",
                "fc60d5872fc46b3aa69f8b5b4351d5808f92bcc044606db097abab6dbcb1aee3216c48e8b3b66431b5b186d1d28f8ee15a5ca2df6668346291c2043d4eb3e90d",
            ),
            (
                k1,
                p1,
                "508e9e6882b979fea900f62adceaca35",
                "666f6f",
                "8b70c1cc8310e1de20ac53ce28ae6e7207f33c3295e03bb5c0732a1d20dc64908922a8b052cf99b7c4fe107a5abb5b2c4085ae75890d02df26269d8945f84b0b",
            ),
            (
                "ab9c2853ce297ddab85c993b3ae14bcad39b2c682beabc27d6d4eb20711d6560",
                "0f1d1274943b91415889152e893d80e93275a1fc0b65fd71b4b0dda10ad7d772",
                m1,
                "666f6f",
                "21655b5f1aa965996b3f97b3c849eafba922a0a62992f73b3d1b73106a84ad85e9b86a7b6005ea868337ff2d20a7f5fbd4cd10b0be49a68da2b2e0dc0ad8960f",
            ),
        ];
        for (sk, pk, msg, ctx, sig) in vectors {
            let (sk, pk, msg, ctx, sig) =
                (unhex(sk), unhex(pk), unhex(msg), unhex(ctx), unhex(sig));
            let mech = eddsa(false, Some(&ctx));
            assert_eq!(sign_with(&mech, &sk, &msg).to_vec(), sig);
            verify_with(&mech, &pk, &msg, &sig).unwrap();
            let invalid = |m: &Mechanism<'_>, msg: &[u8], sig: &[u8]| {
                assert_eq!(
                    verify_with(m, &pk, msg, sig).unwrap_err().rv(),
                    CKR_SIGNATURE_INVALID
                );
            };
            invalid(&eddsa(false, Some(b"other")), &msg, &sig);
            invalid(&Mechanism::plain(CKM_EDDSA), &msg, &sig);
            invalid(&eddsa(true, Some(&ctx)), &msg, &sig);
            invalid(&mech, &[&msg[..], b"x"].concat(), &sig);
            for i in [0, 31, 32, 63] {
                let mut bad = sig.clone();
                bad[i] ^= 0x01;
                invalid(&mech, &msg, &bad);
            }
        }
    }

    /// Ed25519ctx verification keeps verify_strict's rules: a small-order
    /// key with R = identity and S = 0 (which the equation accepts), and a
    /// non-canonical S (S + L), are refused.
    #[test]
    fn ed25519ctx_verification_is_strict() {
        let mech = eddsa(false, Some(b"foo"));
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let mut forged = [0u8; 64];
        forged[..32].copy_from_slice(&identity);
        let weak = Arc::new(load_public(&identity).unwrap());
        let mut v = EdDsaVerify::new(&mech, weak).unwrap();
        assert_eq!(
            v.verify(b"m", &forged).unwrap_err().rv(),
            CKR_SIGNATURE_INVALID
        );
        // S + L for a valid signature: same equation, non-canonical S.
        let sk = [4u8; 32];
        let pk = SigningKey::from_bytes(&sk).verifying_key().to_bytes();
        let sig = sign_with(&mech, &sk, b"m");
        verify_with(&mech, &pk, b"m", &sig).unwrap();
        let l = unhex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010");
        let mut s_plus_l = sig;
        let mut carry = 0u16;
        for i in 0..32 {
            let t = u16::from(sig[32 + i]) + u16::from(l[i]) + carry;
            s_plus_l[32 + i] = t as u8;
            carry = t >> 8;
        }
        assert_eq!(carry, 0);
        assert_eq!(
            verify_with(&mech, &pk, b"m", &s_plus_l).unwrap_err().rv(),
            CKR_SIGNATURE_INVALID
        );
        // R replaced by a small-order point.
        let mut small_r = sig;
        small_r[..32].copy_from_slice(&identity);
        assert_eq!(
            verify_with(&mech, &pk, b"m", &small_r).unwrap_err().rv(),
            CKR_SIGNATURE_INVALID
        );
    }

    /// RFC 8032 §7.3 (Ed25519ph, "abc"), single- and multi-part, which must
    /// agree; the context is part of the signature.
    #[test]
    fn rfc8032_ed25519ph() {
        let sk = unhex("833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42");
        let pk = unhex("ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf");
        let sig = unhex(
            "98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae4131f85042463c2a355a2003d062adf5aaa10b8c61e636062aaad11c2a26083406",
        );
        for mech in [eddsa(true, None), eddsa(true, Some(b""))] {
            assert_eq!(sign_with(&mech, &sk, b"abc").to_vec(), sig);
            let key = Arc::new(load_private(&sk).unwrap());
            let mut s = EdDsaSign::new(&mech, key).unwrap();
            for part in [&b"a"[..], b"", b"bc"] {
                s.update(part).unwrap();
            }
            let mut out = [0u8; 64];
            s.finish(&mut out).unwrap();
            assert_eq!(out.to_vec(), sig);
            verify_with(&mech, &pk, b"abc", &sig).unwrap();
            let mut v = EdDsaVerify::new(&mech, Arc::new(load_public(&pk).unwrap())).unwrap();
            v.update(b"ab").unwrap();
            v.update(b"c").unwrap();
            v.finish(&sig).unwrap();
        }
        let invalid = |m: &Mechanism<'_>, msg: &[u8], sig: &[u8]| {
            assert_eq!(
                verify_with(m, &pk, msg, sig).unwrap_err().rv(),
                CKR_SIGNATURE_INVALID
            );
        };
        invalid(&eddsa(true, Some(b"c")), b"abc", &sig);
        invalid(&Mechanism::plain(CKM_EDDSA), b"abc", &sig);
        invalid(&eddsa(true, None), b"abd", &sig);
        let mut bad = sig.clone();
        bad[40] ^= 4;
        invalid(&eddsa(true, None), b"abc", &bad);
        // With a context: sign and verify, a different context fails.
        let with_ctx = sign_with(&eddsa(true, Some(b"ctx")), &sk, b"abc");
        verify_with(&eddsa(true, Some(b"ctx")), &pk, b"abc", &with_ctx).unwrap();
        invalid(&eddsa(true, Some(b"cty")), b"abc", &with_ctx);
        invalid(&eddsa(false, Some(b"ctx")), b"abc", &with_ctx);
    }

    #[test]
    fn multipart_ctx_equals_single_part() {
        let mech = eddsa(false, Some(b"foo"));
        let key = Arc::new(load_private(&[9; 32]).unwrap());
        let mut a = EdDsaSign::new(&mech, key.clone()).unwrap();
        let mut b = EdDsaSign::new(&mech, key).unwrap();
        let (mut x, mut y) = ([0u8; 64], [0u8; 64]);
        a.sign(b"hello world", &mut x).unwrap();
        b.update(b"hello ").unwrap();
        b.update(b"world").unwrap();
        b.finish(&mut y).unwrap();
        assert_eq!(x, y);
    }

    #[test]
    fn parameters_and_encodings() {
        let key = Arc::new(load_private(&[9; 32]).unwrap());
        let long = [0u8; 256];
        for prehash in [false, true] {
            assert_eq!(
                EdDsaSign::new(&eddsa(prehash, Some(&long)), key.clone())
                    .err()
                    .unwrap()
                    .rv(),
                CKR_MECHANISM_PARAM_INVALID
            );
            assert!(EdDsaSign::new(&eddsa(prehash, Some(&long[..255])), key.clone()).is_ok());
        }
        // phFlag false and no context: pure Ed25519, the same signature.
        assert_eq!(
            sign_with(&eddsa(false, None), &[9; 32], b"m"),
            sign_with(&Mechanism::plain(CKM_EDDSA), &[9; 32], b"m")
        );
        assert!(is_pure(&eddsa(false, None)).unwrap());
        assert!(is_pure(&Mechanism::plain(CKM_EDDSA)).unwrap());
        assert!(!is_pure(&eddsa(true, None)).unwrap());
        assert!(!is_pure(&eddsa(false, Some(b"c"))).unwrap());
        let other = Mechanism {
            ty: CKM_EDDSA,
            param: Param::Bytes(b"x"),
        };
        assert_eq!(
            EdDsaSign::new(&other, key).err().unwrap().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert!(is_ed25519_params(OID_ED25519) && is_ed25519_params(NAME_ED25519));
        assert!(
            !is_ed25519_params(&[0x06, 0x03, 0x2b, 0x65, 0x71]),
            "Ed448 is not Ed25519"
        );
        // Ed448 (OID 1.3.101.113 or "edwards448") goes to `ed448.rs`: a
        // generated pair signs there; a 57-byte point off the curve is
        // refused as a bad value, not as an unknown curve.
        for ed448 in [&[0x06, 0x03, 0x2b, 0x65, 0x71][..], b"\x13\x0aedwards448"] {
            let mut t = Attributes::new();
            t.set_bytes(CKA_EC_PARAMS, ed448);
            let g = generate(&t).unwrap();
            let k = Arc::new(load_private(g.private.bytes(CKA_VALUE).unwrap()).unwrap());
            let mut sig = [0u8; 114];
            let mut op = EdDsaSign::new(&Mechanism::plain(CKM_EDDSA), k).unwrap();
            assert_eq!(op.output_len(), 114);
            assert_eq!(op.sign(b"m", &mut sig).unwrap(), 114);
            let pk = Arc::new(load_public(g.public.bytes(CKA_EC_POINT).unwrap()).unwrap());
            EdDsaVerify::new(&Mechanism::plain(CKM_EDDSA), pk)
                .unwrap()
                .verify(b"m", &sig)
                .unwrap();
            t.set_bytes(CKA_EC_POINT, &[1; 57]);
            assert_eq!(
                complete_import(CKO_PUBLIC_KEY, &mut t).unwrap_err().rv(),
                CKR_ATTRIBUTE_VALUE_INVALID
            );
        }
        let p = [5u8; 32];
        assert_eq!(parse_point(&der_point(&p)).unwrap(), p);
        assert_eq!(parse_point(&p).unwrap(), p);
        assert!(parse_point(&[4, 32, 1]).is_err());
    }

    #[test]
    fn generated_pair_matches() {
        let mut t = Attributes::new();
        t.set_bytes(CKA_EC_PARAMS, NAME_ED25519);
        let g = generate(&t).unwrap();
        let sk = load_private(g.private.bytes(CKA_VALUE).unwrap()).unwrap();
        let pk = g.public.bytes(CKA_EC_POINT).unwrap();
        match sk {
            KeyMaterial::Ed25519Private(k) => {
                assert_eq!(der_point(&k.verifying_key().to_bytes()).to_vec(), pk)
            }
            _ => panic!("wrong key type"),
        }
        let mut bad = Attributes::new();
        bad.set_bytes(CKA_EC_PARAMS, &[0x06, 0x01, 0x00]);
        assert_eq!(generate(&bad).err().unwrap().rv(), CKR_CURVE_NOT_SUPPORTED);
    }
}
