//! ML-KEM (seed, expanded and both forms of draft-ietf-lamps-kyber-certificates)
//! and SLH-DSA (RFC 9909) PKCS#8 keys and their SubjectPublicKeyInfos, from
//! fixed seeds (SHA-512 of "dalek-pkcs11-util fixture NAME", as
//! gen_python.py derives them, so ML-KEM-768/1024 match its keys).

#[allow(deprecated)]
use ml_kem::{DecapsulationKey, ExpandedKeyEncoding, KeyExport, MlKem512, MlKem768, MlKem1024};
use pkcs8::der::Encode;
use pkcs8::{EncodePrivateKey, EncodePublicKey};
use sha2::Digest;
use std::path::Path;

fn seed(name: &str, len: usize) -> Vec<u8> {
    // Past 64 bytes (SLH-DSA-192/256's three n-byte seeds), SHA-512 of
    // "... NAME/1" follows.
    let mut out =
        sha2::Sha512::digest(format!("dalek-pkcs11-util fixture {name}").as_bytes()).to_vec();
    out.extend(sha2::Sha512::digest(
        format!("dalek-pkcs11-util fixture {name}/1").as_bytes(),
    ));
    out.truncate(len);
    out
}

fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = body.len();
    if len < 0x80 {
        out.push(len as u8);
    } else if len < 0x100 {
        out.extend_from_slice(&[0x81, len as u8]);
    } else {
        out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]);
    }
    out.extend_from_slice(body);
    out
}

/// PrivateKeyInfo v0 with the algorithm of `spki` and `private_key`.
fn pkcs8_with(spki: &[u8], private_key: &[u8]) -> Vec<u8> {
    let alg = pkcs8::SubjectPublicKeyInfoRef::try_from(spki)
        .unwrap()
        .algorithm
        .to_der()
        .unwrap();
    let mut body = vec![0x02, 0x01, 0x00];
    body.extend_from_slice(&alg);
    body.extend(tlv(0x04, private_key));
    tlv(0x30, &body)
}

/// Writes `bytes`, or checks that the file gen_python.py wrote holds them.
fn check_or_write(dir: &Path, name: &str, bytes: &[u8]) {
    match std::fs::read(dir.join(name)) {
        Ok(old) => assert_eq!(old, bytes, "{name}: python's encoding differs"),
        Err(_) => write(dir, name, bytes),
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

macro_rules! mlkem {
    ($dir:expr, $p:ty, $name:expr) => {{
        let (dir, name): (&Path, &str) = ($dir, $name);
        let s = seed(name, 64);
        let dk = DecapsulationKey::<$p>::from_seed(s.as_slice().try_into().unwrap());
        let seed_der = dk.to_pkcs8_der().unwrap();
        let spki = dk.encapsulation_key().to_public_key_der().unwrap();
        let expanded = dk.to_expanded_bytes();
        assert_eq!(&dk.to_bytes()[..], &s[..]);
        // gen_python.py wrote ML-KEM-768/1024 (python has no ML-KEM-512):
        // the same key from the same seed must have the same encodings.
        let py = dir.join(format!("{name}.seed.pem"));
        if py.exists() {
            let text = std::fs::read_to_string(&py).unwrap();
            let (_, der) = pkcs8::der::pem::decode_vec(text.as_bytes()).unwrap();
            assert_eq!(der, seed_der.as_bytes(), "{name}: python's PKCS#8 differs");
        } else {
            write(dir, &format!("{name}.seed.der"), seed_der.as_bytes());
        }
        check_or_write(dir, &format!("{name}.spki.der"), spki.as_bytes());
        write(
            dir,
            &format!("{name}.expanded.der"),
            &pkcs8_with(spki.as_bytes(), &tlv(0x04, &expanded)),
        );
        let mut both = tlv(0x04, &s);
        both.extend(tlv(0x04, &expanded));
        write(
            dir,
            &format!("{name}.both.der"),
            &pkcs8_with(spki.as_bytes(), &tlv(0x30, &both)),
        );
    }};
}

fn slhdsa<P: slh_dsa::ParameterSet>(dir: &Path, name: &str, n: usize) {
    let s = seed(name, 3 * n);
    let sk = slh_dsa::SigningKey::<P>::slh_keygen_internal(&s[..n], &s[n..2 * n], &s[2 * n..]);
    write(
        dir,
        &format!("{name}.der"),
        sk.to_pkcs8_der().unwrap().as_bytes(),
    );
    let vk: &slh_dsa::VerifyingKey<P> = sk.as_ref();
    write(
        dir,
        &format!("{name}.spki.der"),
        vk.to_public_key_der().unwrap().as_bytes(),
    );
}

#[allow(deprecated)]
fn main() {
    let out = std::env::args().nth(1).expect("the output directory");
    let dir = Path::new(&out);
    mlkem!(dir, MlKem512, "ml-kem-512");
    mlkem!(dir, MlKem768, "ml-kem-768");
    mlkem!(dir, MlKem1024, "ml-kem-1024");
    use slh_dsa::*;
    slhdsa::<Sha2_128s>(dir, "slh-dsa-sha2-128s", 16);
    slhdsa::<Sha2_128f>(dir, "slh-dsa-sha2-128f", 16);
    slhdsa::<Sha2_192s>(dir, "slh-dsa-sha2-192s", 24);
    slhdsa::<Sha2_192f>(dir, "slh-dsa-sha2-192f", 24);
    slhdsa::<Sha2_256s>(dir, "slh-dsa-sha2-256s", 32);
    slhdsa::<Sha2_256f>(dir, "slh-dsa-sha2-256f", 32);
    slhdsa::<Shake128s>(dir, "slh-dsa-shake-128s", 16);
    slhdsa::<Shake128f>(dir, "slh-dsa-shake-128f", 16);
    slhdsa::<Shake192s>(dir, "slh-dsa-shake-192s", 24);
    slhdsa::<Shake192f>(dir, "slh-dsa-shake-192f", 24);
    slhdsa::<Shake256s>(dir, "slh-dsa-shake-256s", 32);
    slhdsa::<Shake256f>(dir, "slh-dsa-shake-256f", 32);
}
