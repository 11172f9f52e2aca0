//! IV reuse in the GCM IVs and CCM nonces the token generates for the
//! message-based API (issue 23 item 2; SP 800-38D §8, SP 800-38C §A.5):
//! two messages under one key and one IV give away the XOR of their
//! plaintexts (and, for GCM, the authentication key); and the
//! ChaCha20-Poly1305 nonces the caller gives, which the token does not
//! police (RFC 8439 §4).

use super::*;
use crate::raw_message::*;
use cryptoki::mechanism::MessageParam;
use cryptoki::mechanism::aead::{GcmMessageParams, GeneratorFunction};
use cryptoki_sys::*;

/// Encrypts `data` as one message of a fresh message-encryption operation
/// with a token-generated IV; the IV and the ciphertext.
fn one_message(
    s: &Session,
    key: ObjectHandle,
    fixed_bits: u64,
    generator: GeneratorFunction,
    data: &[u8],
) -> Result<(Vec<u8>, Vec<u8>), Outcome> {
    step(
        "C_MessageEncryptInit",
        s.message_encrypt_init(&Mechanism::AesGcmMessage(placeholder()), key),
    )?;
    let mut iv = [0u8; 12];
    let mut tag = [0u8; 16];
    let params = GcmMessageParams::new(&mut iv, fixed_bits.into(), generator, &mut tag).unwrap();
    let out = step(
        "C_EncryptMessage",
        s.encrypt_message(&MessageParam::AesGcmMessage(params), b"", data),
    );
    let _ = s.message_encrypt_final();
    Ok((iv.to_vec(), out?))
}

/// The mechanism parameter of `C_MessageEncryptInit` is ignored for GCM
/// (the per-message parameters come with each message); cryptoki wants one.
fn placeholder() -> GcmMessageParams<'static> {
    let iv: &'static mut [u8] = Box::leak(Box::new([0u8; 12]));
    let tag: &'static mut [u8] = Box::leak(Box::new([0u8; 16]));
    GcmMessageParams::new(iv, 0.into(), GeneratorFunction::NoGenerate, tag).unwrap()
}

/// Two message-encryption operations on one key, each with a counter IV:
/// the counter must not start again.
#[test]
fn counter_iv_repeats_across_inits() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = step(
                "C_GenerateKey",
                aes_key(s, false, &[AttributeType::Encrypt, AttributeType::Decrypt]),
            )?;
            let p1 = b"attack at dawn!!";
            let p2 = b"retreat at noon!";
            let (iv1, c1) = one_message(s, key, 0, GeneratorFunction::GenerateCounter, p1)?;
            let (iv2, c2) = one_message(s, key, 0, GeneratorFunction::GenerateCounter, p2)?;
            if iv1 != iv2 {
                return Ok(Outcome::Blind("two counter IVs"));
            }
            // Same key, same IV: the keystreams cancel.
            let x: Vec<u8> = c1.iter().zip(&c2).map(|(a, b)| a ^ b).collect();
            let p: Vec<u8> = p1.iter().zip(p2).map(|(a, b)| a ^ b).collect();
            assert_eq!(x, p);
            Ok(Outcome::Recovered)
        })())
    }
    let blind = || Outcome::Blind("two counter IVs");
    expect(attack, blind(), blind());
}

/// Random IVs with 95 of 96 bits fixed by the caller repeat after two
/// messages; fewer than 64 random bits are refused (SP 800-38D §8.2.2).
#[test]
fn random_iv_with_one_random_bit() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = step(
                "C_GenerateKey",
                aes_key(s, false, &[AttributeType::Encrypt, AttributeType::Decrypt]),
            )?;
            let mut seen = std::collections::HashSet::new();
            for _ in 0..64 {
                let (iv, _) = one_message(s, key, 95, GeneratorFunction::GenerateRandom, b"m")?;
                if !seen.insert(iv) {
                    return Ok(Outcome::Recovered);
                }
            }
            Ok(Outcome::Blind("64 random IVs"))
        })())
    }
    let refused = || Outcome::Refused("C_EncryptMessage", RvError::MechanismParamInvalid);
    expect(attack, refused(), refused());
}

/// A raw call's `CK_RV` as a step: `Err(Refused(name, rv))` unless `CKR_OK`.
fn raw_step(name: &'static str, rv: CK_RV) -> Result<(), Outcome> {
    match cryptoki::error::Rv::from(rv) {
        cryptoki::error::Rv::Ok => Ok(()),
        cryptoki::error::Rv::Error(e) => Err(Outcome::Refused(name, e)),
    }
}

/// One CCM message (13-byte nonce, `fixed_bits` of it the caller's) in a
/// fresh message-encryption operation with a token-generated nonce; the
/// nonce and the ciphertext.
fn one_ccm_message(
    s: &Session,
    key: ObjectHandle,
    fixed_bits: CK_ULONG,
    generator: CK_GENERATOR_FUNCTION,
    data: &[u8],
) -> Result<(Vec<u8>, Vec<u8>), Outcome> {
    let l = raw30();
    raw_step(
        "C_MessageEncryptInit",
        message_init(l, s, CKM_AES_CCM, key, true),
    )?;
    let mut nonce = [0u8; 13];
    let mut mac = [0u8; 16];
    let mut p = ccm_params(data.len(), &mut nonce, fixed_bits, generator, &mut mac);
    let mut ct = vec![0u8; data.len()];
    let rv = message(l, s, true, &mut p, b"", data, Some(&mut ct)).0;
    message_final(l, s, true);
    raw_step("C_EncryptMessage", rv)?;
    Ok((nonce.to_vec(), ct))
}

/// Two CCM message-encryption operations on one key, each with a counter
/// nonce: the counter (the key value's, shared with its GCM IVs) must not
/// start again.
#[test]
fn ccm_counter_nonce_repeats_across_inits() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = generated_cipher_key(s, CKM_AES_KEY_GEN);
            let key = key.map_err(|rv| raw_step("C_GenerateKey", rv).unwrap_err())?;
            let p1 = b"attack at dawn!!";
            let p2 = b"retreat at noon!";
            let (n1, c1) = one_ccm_message(s, key, 0, CKG_GENERATE_COUNTER, p1)?;
            let (n2, c2) = one_ccm_message(s, key, 0, CKG_GENERATE_COUNTER, p2)?;
            if n1 != n2 {
                return Ok(Outcome::Blind("two counter nonces"));
            }
            let x: Vec<u8> = c1.iter().zip(&c2).map(|(a, b)| a ^ b).collect();
            let p: Vec<u8> = p1.iter().zip(p2).map(|(a, b)| a ^ b).collect();
            assert_eq!(x, p);
            Ok(Outcome::Recovered)
        })())
    }
    let blind = || Outcome::Blind("two counter nonces");
    expect(attack, blind(), blind());
}

/// Random CCM nonces with 97 of 104 bits fixed by the caller would repeat
/// within a few hundred messages; fewer than 64 random bits are refused.
#[test]
fn ccm_random_nonce_with_few_random_bits() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = generated_cipher_key(s, CKM_AES_KEY_GEN);
            let key = key.map_err(|rv| raw_step("C_GenerateKey", rv).unwrap_err())?;
            let mut seen = std::collections::HashSet::new();
            for _ in 0..256 {
                let (nonce, _) = one_ccm_message(s, key, 97, CKG_GENERATE_RANDOM, b"m")?;
                if !seen.insert(nonce) {
                    return Ok(Outcome::Recovered);
                }
            }
            Ok(Outcome::Blind("256 random nonces"))
        })())
    }
    let refused = || Outcome::Refused("C_EncryptMessage", RvError::MechanismParamInvalid);
    expect(attack, refused(), refused());
}

/// `CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS` has no generator: the caller
/// picks each nonce, and the token, as for GCM's `CKG_NO_GENERATE`, does
/// not remember them. A caller reusing one gets two messages under one
/// keystream: their XOR is the plaintexts' XOR. No defence beyond the
/// documentation (docs/SECURITY.md, "GCM IVs the token generates").
#[test]
fn chacha20_poly1305_caller_nonce_reused() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let l = raw30();
            let key = generated_cipher_key(s, CKM_CHACHA20_KEY_GEN);
            let key = key.map_err(|rv| raw_step("C_GenerateKey", rv).unwrap_err())?;
            raw_step(
                "C_MessageEncryptInit",
                message_init(l, s, CKM_CHACHA20_POLY1305, key, true),
            )?;
            let p1 = b"attack at dawn!!";
            let p2 = b"retreat at noon!";
            let mut cts = Vec::new();
            for data in [p1, p2] {
                let (mut nonce, mut tag) = ([7u8; 12], [0u8; 16]);
                let mut p = chacha_params(&mut nonce, &mut tag);
                let mut ct = vec![0u8; data.len()];
                let rv = message(l, s, true, &mut p, b"", data, Some(&mut ct)).0;
                raw_step("C_EncryptMessage", rv)?;
                cts.push(ct);
            }
            message_final(l, s, true);
            let x: Vec<u8> = cts[0].iter().zip(&cts[1]).map(|(a, b)| a ^ b).collect();
            let p: Vec<u8> = p1.iter().zip(p2).map(|(a, b)| a ^ b).collect();
            Ok(if x == p {
                Outcome::Recovered
            } else {
                Outcome::Blind("two messages under one nonce")
            })
        })())
    }
    expect(attack, Outcome::Recovered, Outcome::Recovered);
}
