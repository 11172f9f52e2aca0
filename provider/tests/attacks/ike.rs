//! Attacks through the IKE derivations (`CKM_IKE_PRF_DERIVE`,
//! `CKM_IKE1_PRF_DERIVE`, `CKM_IKE1_EXTENDED_DERIVE`,
//! `CKM_IKE2_PRF_PLUS_DERIVE`): a readable output from protected inputs,
//! key-length reduction through prf+ (Clulow 2003 §3), and the second keys
//! their parameters name (`hNewKey`, `hKeygxy`, `hPrevKey`, `hSeedKey`),
//! which must pass the checks a base passes. cryptoki 0.12 names none of
//! these mechanisms: the calls go through the raw function list.

use super::ike_params::*;
use super::*;
use cryptoki_sys::*;

const NI: &[u8] = &[0x11; 16];
const NR: &[u8] = &[0x22; 16];

/// The outcome of several variants of one attack: the first that got
/// through, else their common refusal (or the first refusal that differs
/// from the others, so that no variant hides behind another).
fn every_variant(results: Vec<Result<Outcome, Outcome>>) -> Outcome {
    let mut refusals = Vec::new();
    for r in results {
        match r {
            Ok(o) => return o,
            Err(o) => refusals.push(o),
        }
    }
    let first = refusals.remove(0);
    refusals.into_iter().find(|o| *o != first).unwrap_or(first)
}

/// A generated 32-byte generic secret allowed to derive: sensitive and
/// unextractable (a victim), or readable. Allowed the IKE derivations only:
/// an HMAC under it, or under a copy of it, computes the PRF output
/// (tls::master_secret_computed_by_hmac_under_the_premaster).
fn generic(s: &Session, protected: bool, derive: bool) -> Result<ObjectHandle, Outcome> {
    raw_step(
        "C_GenerateKey (generic secret)",
        generate_allowed(
            s,
            &Mechanism::GenericSecretKeyGen,
            &[
                Attribute::Token(false),
                Attribute::ValueLen(32.into()),
                Attribute::Sensitive(protected),
                Attribute::Extractable(!protected),
                Attribute::Derive(derive),
            ],
            &[
                CKM_IKE_PRF_DERIVE,
                CKM_IKE1_PRF_DERIVE,
                CKM_IKE1_EXTENDED_DERIVE,
                CKM_IKE2_PRF_PLUS_DERIVE,
            ],
        ),
    )
}

/// Derives with `p` from `base` a generic secret of `len` bytes asked to
/// be readable.
fn derive_readable(
    s: &Session,
    p: &mut IkeParam,
    base: ObjectHandle,
    len: usize,
) -> Result<ObjectHandle, Outcome> {
    let h = raw_step(
        "C_DeriveKey",
        derive_ike(
            s.handle(),
            &mut p.mechanism(),
            base.handle(),
            &mut secret_template(
                Some(len),
                &[(CKA_SENSITIVE, false), (CKA_EXTRACTABLE, true)],
            ),
        ),
    )?;
    // SAFETY: a handle the module just returned for this session.
    Ok(unsafe { ObjectHandle::new_from_raw(h) })
}

/// The IKE SA's keying material from a sensitive, unextractable SKEYSEED,
/// asked to be readable: made sensitive and unextractable instead (the
/// template overruled), so its value, a PRF of the victim, stays inside.
#[test]
fn ike_output_asked_readable_from_a_sensitive_base() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = generic(s, true, true)?;
            let seed = [NI, NR].concat();
            let mut p = IkeParam::prf_plus(CKM_SHA256_HMAC, None, &seed);
            let dkm = derive_readable(s, &mut p, victim, 64)?;
            super::attributes::read_value(s, dkm)
        })())
    }
    expect(attack, value_refused(), value_refused());
}

/// One byte of prf+ output from a protected SK_d: a key searched in 256
/// tries, then the next byte with a longer output (Clulow 2003 §3, key-length
/// reduction; here every byte is a PRF of the whole key, but a 1-byte key
/// is still a key weaker than its base). Refused by the derivation floor.
#[test]
fn key_length_reduction_by_prf_plus() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let sk_d = generic(s, true, true)?;
            let seed = [NI, NR].concat();
            let variants = [
                IkeParam::prf_plus(CKM_SHA256_HMAC, None, &seed),
                IkeParam::extended(CKM_SHA256_HMAC, None, &seed),
                IkeParam::prf(CKM_SHA256_HMAC, false, false, NI, NR, 0),
            ];
            Ok(every_variant(
                variants
                    .into_iter()
                    .map(|mut p| derive_readable(s, &mut p, sk_d, 1).map(|_| Outcome::Weakened))
                    .collect(),
            ))
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// A sensitive key made for another role (`CKA_DERIVE` false) named as a
/// second key: as `hKeygxy`, `hPrevKey`, `hSeedKey` or `hNewKey` it would
/// become PRF input under a key the caller knows, an offline oracle on its
/// value. Each is refused as a base without `CKA_DERIVE` would be.
#[test]
fn second_keys_without_derive_are_refused() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let known = generic(s, false, true)?;
            let other = generic(s, true, false)?.handle();
            let gxy = generic(s, false, true)?.handle();
            let cky = [0x33u8; 8];
            let variants = [
                IkeParam::prf(CKM_SHA256_HMAC, false, true, NI, NR, other),
                IkeParam::ike1_prf(CKM_SHA256_HMAC, other, None, &cky, &cky, 0),
                IkeParam::ike1_prf(CKM_SHA256_HMAC, gxy, Some(other), &cky, &cky, 1),
                IkeParam::extended(CKM_SHA256_HMAC, Some(other), &[]),
                IkeParam::prf_plus(CKM_SHA256_HMAC, Some(other), NI),
            ];
            Ok(every_variant(
                variants
                    .into_iter()
                    .map(|mut p| derive_readable(s, &mut p, known, 32).map(|_| Outcome::Weakened))
                    .collect(),
            ))
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey", RvError::KeyFunctionNotPermitted);
    expect(attack, refused(), refused());
}

/// A readable base with a sensitive second key (the new D-H secret as
/// `hSeedKey`, g^xy as `hKeygxy`) asked for a readable output: the output
/// is sensitive, as the second key is (its protection joins the base's).
#[test]
fn sensitive_second_key_makes_the_output_sensitive() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let known = generic(s, false, true)?;
            let secret = generic(s, true, true)?.handle();
            let variants = [
                IkeParam::prf_plus(CKM_SHA256_HMAC, Some(secret), NI),
                IkeParam::extended(CKM_SHA256_HMAC, Some(secret), &[]),
                IkeParam::prf(CKM_SHA256_HMAC, false, true, NI, NR, secret),
            ];
            Ok(every_variant(
                variants
                    .into_iter()
                    .map(|mut p| {
                        let out = derive_readable(s, &mut p, known, 32)?;
                        super::attributes::read_value(s, out)
                    })
                    .collect(),
            ))
        })())
    }
    expect(attack, value_refused(), value_refused());
}

/// Key-length reduction through a second key: a readable one-byte base
/// (the caller's own) and a protected g^ir as `hSeedKey` / `hKeygxy` /
/// `hNewKey`, asked for two bytes of output. The base alone would allow a
/// two-byte key (its own strength is 8 bits); the floor counts the
/// protected second key's bytes, so the output must keep 112 bits.
#[test]
fn key_length_reduction_through_a_second_key() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let mine = step(
                "C_CreateObject (one-byte base)",
                known_key(
                    s,
                    KeyType::GENERIC_SECRET,
                    &[0x42],
                    &[AttributeType::Derive],
                ),
            )?;
            let gir = generic(s, true, true)?.handle();
            let variants = [
                IkeParam::prf_plus(CKM_SHA256_HMAC, Some(gir), NI),
                IkeParam::extended(CKM_SHA256_HMAC, Some(gir), &[]),
                IkeParam::prf(CKM_SHA256_HMAC, false, true, NI, NR, gir),
            ];
            Ok(every_variant(
                variants
                    .into_iter()
                    .map(|mut p| derive_readable(s, &mut p, mine, 2).map(|_| Outcome::Weakened))
                    .collect(),
            ))
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}
