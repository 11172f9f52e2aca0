//! Attacks through key encapsulation (PKCS#11 3.2 `C_EncapsulateKey` /
//! `C_DecapsulateKey`, ML-KEM): each makes a secret key from another key,
//! so each is a derivation an attacker can steer. Key-length reduction
//! (Clulow 2003) by decapsulating into a short key, and the trojan
//! wrapping key (Clulow §2.4) whose value the attacker learns by holding
//! the private key the KEM secret was sent to.

use super::*;
use cryptoki::object::MlKemParameterSetType;

const MESSAGE: &[u8] = b"the attacker's chosen message";

/// An ML-KEM-768 key pair generated on the token (the private key
/// sensitive and unextractable): the victim's decapsulation key.
fn kem_pair(s: &Session) -> Result<(ObjectHandle, ObjectHandle), Outcome> {
    step(
        "C_GenerateKeyPair (ML-KEM)",
        s.generate_key_pair(
            &Mechanism::MlKemKeyPairGen,
            &[
                Attribute::Token(false),
                Attribute::ParameterSet(MlKemParameterSetType::ML_KEM_768.into()),
            ],
            &[Attribute::Token(false)],
        ),
    )
}

/// A 2-byte MAC key decapsulated from the victim's private key would be an
/// oracle searched in 2^16 MACs: refused at the floor, as for derivation.
#[test]
fn decapsulation_into_a_short_key() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let (public, private) = kem_pair(s)?;
            let (ct, _) = step(
                "C_EncapsulateKey",
                s.encapsulate_key(&Mechanism::MlKem, public, &aes_template(&[])),
            )?;
            let short = step(
                "C_DecapsulateKey (2-byte key)",
                s.decapsulate_key(
                    &Mechanism::MlKem,
                    private,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::Token(false),
                        Attribute::ValueLen(2.into()),
                        Attribute::Sign(true),
                    ],
                    &ct,
                ),
            )?;
            step(
                "C_Sign (HMAC)",
                s.sign(&Mechanism::Sha256Hmac, short, MESSAGE),
            )?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_DecapsulateKey (2-byte key)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// The trojan wrapping key by encapsulation: the attacker imports an
/// ML-KEM private key whose seed they chose, encapsulates to its public
/// half asking for a wrapping key, learns the secret by decapsulating into
/// a readable key, and wraps the victim under the first key.
#[test]
fn trojan_wrapping_key_encapsulated() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = step(
                "C_GenerateKey (victim)",
                aes_key(s, true, &[AttributeType::Encrypt]),
            )?;
            let mine = step(
                "C_CreateObject (attacker's ML-KEM key)",
                s.create_object(&[
                    Attribute::Class(ObjectClass::PRIVATE_KEY),
                    Attribute::KeyType(KeyType::ML_KEM),
                    Attribute::Token(false),
                    Attribute::ParameterSet(MlKemParameterSetType::ML_KEM_768.into()),
                    Attribute::Seed(vec![0x77; 64]),
                    Attribute::Sensitive(false),
                    Attribute::Extractable(true),
                ]),
            )?;
            let info = match s.get_attributes(mine, &[AttributeType::PublicKeyInfo]) {
                Ok(mut v) => match v.pop() {
                    Some(Attribute::PublicKeyInfo(v)) => v,
                    other => panic!("{other:?}"),
                },
                Err(e) => panic!("{e}"),
            };
            let public = step(
                "C_CreateObject (its public key)",
                s.create_object(&[
                    Attribute::Class(ObjectClass::PUBLIC_KEY),
                    Attribute::KeyType(KeyType::ML_KEM),
                    Attribute::Token(false),
                    Attribute::ParameterSet(MlKemParameterSetType::ML_KEM_768.into()),
                    Attribute::Value(info[info.len() - 1184..].to_vec()),
                ]),
            )?;
            let (ct, wrapping) = step(
                "C_EncapsulateKey (wrapping key)",
                s.encapsulate_key(
                    &Mechanism::MlKem,
                    public,
                    &aes_template(&usage_flags(&[AttributeType::Wrap])),
                ),
            )?;
            let copy = step(
                "C_DecapsulateKey (readable copy)",
                s.decapsulate_key(
                    &Mechanism::MlKem,
                    mine,
                    // No usage: a copy that may decrypt would trip wrap
                    // separation (it tracks copies of a wrapping key's value).
                    &aes_template(
                        &[
                            usage_flags(&[]),
                            vec![Attribute::Sensitive(false), Attribute::Extractable(true)],
                        ]
                        .concat(),
                    ),
                    &ct,
                ),
            )?;
            let kek = match step(
                "C_GetAttributeValue",
                s.get_attributes(copy, &[AttributeType::Value]),
            )?
            .pop()
            {
                Some(Attribute::Value(v)) => v,
                other => panic!("{other:?}"),
            };
            let blob = step(
                "C_WrapKey",
                s.wrap_key(&Mechanism::AesKeyWrap, wrapping, victim),
            )?;
            use aes::cipher::KeyInit;
            let kw = aes_kw::KwAes256::new_from_slice(&kek).unwrap();
            let mut out = vec![0u8; blob.len() - 8];
            let value = kw.unwrap_key(&blob, &mut out).unwrap().to_vec();
            assert!(same_aes_key(s, victim, &value));
            Ok(Outcome::Recovered)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_EncapsulateKey (wrapping key)",
            RvError::TemplateInconsistent,
        ),
    );
}
