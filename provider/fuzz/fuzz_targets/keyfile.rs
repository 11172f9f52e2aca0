//! The operator tool's key and certificate file parser (`dalek-pkcs11-util
//! import`): PEM and DER; PKCS#8 v1 and v2, encrypted PKCS#8 (PBES2 with
//! PBKDF2 or scrypt), SEC1, PKCS#1, X.509, and the LAMPS forms of ML-DSA,
//! ML-KEM and SLH-DSA keys (seed, expanded, both). The tool's own modules are
//! compiled in as they are, from its source directory (`util/src/`). An
//! input is a file's bytes, or (first byte 0) a DER tree whose lengths are
//! right by construction, as DER or PEM. An encrypted input is decrypted with a fixed
//! passphrase under small key derivation limits, so the fuzzer's costly KDF
//! parameters reach the limit checks and every run stays far below
//! `-timeout`; scripts/fuzz runs this target with `-malloc_limit_mb=32`, so
//! any single allocation above 32 MiB (scrypt's is at most 8 MiB here)
//! fails the run, as a panic does.
#![no_main]

#[allow(dead_code)]
#[path = "../../../util/src/asn1.rs"]
mod asn1;
#[allow(dead_code)]
#[path = "../../../util/src/kdf.rs"]
mod kdf;
#[allow(dead_code)]
#[path = "../../../util/src/items.rs"]
mod items;
#[allow(dead_code)]
#[path = "../../../util/src/keyfile.rs"]
mod keyfile;
#[allow(dead_code)]
#[path = "../../../util/src/pqc.rs"]
mod pqc;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

/// The seeds' passphrase.
const PASSPHRASE: &[u8] = b"fuzz";

/// Well below the tool's defaults (256 MiB, 10,000,000), for throughput:
/// the checks are the same code.
const LIMITS: kdf::Limits = kdf::Limits {
    memory_mib: 8,
    iterations: 50_000,
};

/// A DER element whose lengths are right by construction: a byte mutation
/// of the raw file rarely keeps every enclosing length consistent, so the
/// shape checks would stop most of them before the code behind.
#[derive(Arbitrary, Debug)]
enum Node {
    Primitive(Tag, Vec<u8>),
    Constructed(Tag, Vec<Node>),
}

/// The tags the formats use, or any.
#[derive(Arbitrary, Debug)]
enum Tag {
    Integer,
    BitString,
    OctetString,
    Null,
    Oid,
    Sequence,
    Context(u8),
    Other(u8),
}

impl Node {
    fn encode(&self, out: &mut Vec<u8>) {
        let tag = |t: &Tag| match t {
            Tag::Integer => 0x02,
            Tag::BitString => 0x03,
            Tag::OctetString => 0x04,
            Tag::Null => 0x05,
            Tag::Oid => 0x06,
            Tag::Sequence => 0x30,
            Tag::Context(n) => 0xa0 | (n & 3),
            Tag::Other(t) => *t,
        };
        let (t, body) = match self {
            Node::Primitive(t, bytes) => (tag(t), bytes.clone()),
            Node::Constructed(t, children) => {
                let mut body = Vec::new();
                for c in children {
                    c.encode(&mut body);
                }
                (tag(t), body)
            }
        };
        out.extend(asn1::tlv(t, &body));
    }
}

/// PEM labels the parser knows (and one it does not).
const LABELS: &[&str] = &[
    "PRIVATE KEY",
    "ENCRYPTED PRIVATE KEY",
    "RSA PRIVATE KEY",
    "EC PRIVATE KEY",
    "EC PARAMETERS",
    "CERTIFICATE",
    "TRUSTED CERTIFICATE",
    "OTHER",
];

/// The file of an input: the bytes themselves, or (first byte 0) a DER
/// tree built from the rest, as DER or PEM.
fn file(data: &[u8]) -> Option<Vec<u8>> {
    let Some((0, rest)) = data.split_first() else {
        return Some(data.to_vec());
    };
    let mut u = Unstructured::new(rest);
    let pem: Option<u8> = u.arbitrary().ok()?;
    let nodes: Vec<Node> = u.arbitrary().ok()?;
    let mut out = Vec::new();
    for n in &nodes {
        match pem {
            None => n.encode(&mut out),
            Some(l) => {
                let mut der = Vec::new();
                n.encode(&mut der);
                let label = LABELS[usize::from(l) % LABELS.len()];
                out.extend(keyfile::to_pem(label, &der).into_bytes());
            }
        }
    }
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let Some(data) = file(data) else {
        return;
    };
    let passphrase = || Ok(zeroize::Zeroizing::new(PASSPHRASE.to_vec()));
    let Ok(items) = keyfile::parse(&data, &passphrase, LIMITS) else {
        return;
    };
    assert!(!items.is_empty() && items.len() <= 2);
    for item in &items {
        if let keyfile::Item::Certificate(c) = item {
            // A certificate read comes back the same from its PEM, and its
            // key identifier is computed without a panic.
            let pem = keyfile::to_pem("CERTIFICATE", &c.der);
            let again = keyfile::parse(pem.as_bytes(), &passphrase, LIMITS)
                .expect("a certificate's own PEM parses");
            match &again[..] {
                [keyfile::Item::Certificate(d)] => assert_eq!(d.der, c.der),
                _ => panic!("a certificate's PEM parsed as something else"),
            }
            let _ = keyfile::default_id(&c.spki);
        }
    }
});
