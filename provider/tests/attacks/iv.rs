//! IV reuse in the GCM IVs the token generates for the message-based API
//! (issue 23 item 2; SP 800-38D §8): two messages under one key and one IV
//! give away the XOR of their plaintexts and the authentication key.

use super::*;
use cryptoki::mechanism::MessageParam;
use cryptoki::mechanism::aead::{GcmMessageParams, GeneratorFunction};

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
