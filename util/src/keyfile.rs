//! Key and certificate files for `import`: PEM (RFC 7468) or DER holding a
//! PKCS#8 `PrivateKeyInfo` (RFC 5208 / RFC 5958), a traditional PKCS#1
//! `RSAPrivateKey` (RFC 8017 §A.1.2) or SEC1 `ECPrivateKey` (RFC 5915), or
//! an X.509 certificate (RFC 5280 §4.1). Keys come out as the attributes a
//! PKCS#11 consumer would give `C_CreateObject` (base spec §4.9; mechanisms
//! spec §2.1.3 RSA, §2.3.4 EC, §2.3.7 Edwards, §2.3.8 Montgomery); the
//! module itself checks them and computes the rest, as it does for any
//! caller. PKCS#8 keys of ML-DSA, ML-KEM and SLH-DSA are read by `pqc`.
//! Also the SubjectPublicKeyInfo (RFC 5280 §4.1.2.7) of a public key's
//! attributes, for `export-public` and default `CKA_ID`s.

use cryptoki_sys::*;
use sha1::Digest;
use zeroize::Zeroizing;

use crate::asn1::{self, Reader};
use crate::{kdf, pqc};

/// `rsaEncryption` (1.2.840.113549.1.1.1), contents octets.
const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// `id-RSASSA-PSS` (1.2.840.113549.1.1.10).
const OID_RSA_PSS: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a];
/// `id-ecPublicKey` (1.2.840.10045.2.1).
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// `id-Ed25519` (1.3.101.112).
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];
/// `id-X25519` (1.3.101.110).
const OID_X25519: &[u8] = &[0x2b, 0x65, 0x6e];
/// `id-Ed448` (1.3.101.113).
const OID_ED448: &[u8] = &[0x2b, 0x65, 0x71];
/// `id-X448` (1.3.101.111).
const OID_X448: &[u8] = &[0x2b, 0x65, 0x6f];

/// The RFC 8410 curves: algorithm OID, PKCS#11 key type, name, and the
/// length of both the private key and the public key (RFC 8032 §5.1.5 and
/// §5.2.5, RFC 7748 §6: the two lengths are equal for all four).
const RFC8410_CURVES: [(&[u8], CK_KEY_TYPE, &str, usize); 4] = [
    (OID_ED25519, CKK_EC_EDWARDS, "Ed25519", 32),
    (OID_X25519, CKK_EC_MONTGOMERY, "X25519", 32),
    (OID_ED448, CKK_EC_EDWARDS, "Ed448", 57),
    (OID_X448, CKK_EC_MONTGOMERY, "X448", 56),
];

pub use crate::items::{Certificate, Item, PrivateKey};

/// Where the passphrase of an encrypted key comes from; asked only when
/// the file holds one.
pub type Passphrase<'a> = &'a dyn Fn() -> Result<Zeroizing<Vec<u8>>, String>;

/// One PEM block: its label, headers present, and decoded contents.
struct PemBlock {
    label: String,
    has_headers: bool,
    der: Zeroizing<Vec<u8>>,
}

/// The PEM blocks of `text` (RFC 7468 §2; text between blocks is ignored).
fn pem_blocks(text: &str) -> Result<Vec<PemBlock>, String> {
    use base64ct::{Base64, Encoding};
    let mut blocks = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let Some(label) = line
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut body = Zeroizing::new(String::new());
        let mut has_headers = false;
        let mut closed = false;
        for l in lines.by_ref() {
            if l == end {
                closed = true;
                break;
            }
            if l.contains(':') {
                has_headers = true;
            } else {
                body.push_str(l);
            }
        }
        if !closed {
            return Err(format!("the PEM block '{label}' has no END line"));
        }
        let der = if has_headers {
            Zeroizing::new(Vec::new())
        } else {
            Zeroizing::new(
                Base64::decode_vec(&body)
                    .map_err(|_| format!("the PEM block '{label}' is not valid base64"))?,
            )
        };
        blocks.push(PemBlock {
            label: label.to_string(),
            has_headers,
            der,
        });
    }
    Ok(blocks)
}

/// What `bytes` (a PEM or DER file) holds: at most one private key and at
/// most one certificate. An encrypted PKCS#8 key (RFC 5958 §3, PBES2 of
/// RFC 8018 with PBKDF2 or scrypt) is decrypted with `passphrase` if its
/// key derivation costs at most `limits`.
pub fn parse(
    bytes: &[u8],
    passphrase: Passphrase<'_>,
    limits: kdf::Limits,
) -> Result<Vec<Item>, String> {
    let pem = std::str::from_utf8(bytes)
        .ok()
        .filter(|t| t.contains("-----BEGIN "));
    let mut items = Vec::new();
    match pem {
        None => items.push(parse_der(bytes, passphrase, limits)?),
        Some(text) => {
            let blocks = pem_blocks(text)?;
            // A separate "EC PARAMETERS" block names the curve of a SEC1 key
            // written without its parameters.
            let params = blocks
                .iter()
                .find(|b| b.label == "EC PARAMETERS")
                .map(|b| b.der.to_vec());
            for b in &blocks {
                if b.has_headers {
                    return Err(format!(
                        "the PEM block '{}' has headers (OpenSSL's legacy encryption): convert it \
                         first, e.g. `openssl pkcs8 -topk8 -in FILE -out key.p8.pem` (encrypted \
                         PKCS#8 is read with --file-pin-env)",
                        b.label
                    ));
                }
                let item = match b.label.as_str() {
                    "EC PARAMETERS" => continue,
                    "PRIVATE KEY" => Item::Key(pkcs8(&b.der)?),
                    "RSA PRIVATE KEY" => Item::Key(pkcs1(&b.der)?),
                    "EC PRIVATE KEY" => Item::Key(sec1(&b.der, params.as_deref())?),
                    "CERTIFICATE" | "X509 CERTIFICATE" | "TRUSTED CERTIFICATE" => {
                        Item::Certificate(certificate(&b.der)?)
                    }
                    "ENCRYPTED PRIVATE KEY" => {
                        Item::Key(encrypted_pkcs8(&b.der, passphrase, limits)?)
                    }
                    "PUBLIC KEY" | "RSA PUBLIC KEY" => {
                        return Err("the file holds a public key only: import the private key \
                             (its public key is imported with it)"
                            .into());
                    }
                    other => return Err(format!("PEM blocks labelled '{other}' are not imported")),
                };
                items.push(item);
            }
        }
    }
    let keys = items.iter().filter(|i| matches!(i, Item::Key(_))).count();
    let certs = items.len() - keys;
    if items.is_empty() {
        return Err("no private key or certificate in the file".into());
    }
    if keys > 1 || certs > 1 {
        return Err(format!(
            "the file holds {keys} private key(s) and {certs} certificate(s): \
             import one key and its certificate at a time"
        ));
    }
    Ok(items)
}

/// A DER file: PKCS#8, then certificate, PKCS#1, SEC1, by their shape.
fn parse_der(der: &[u8], passphrase: Passphrase<'_>, limits: kdf::Limits) -> Result<Item, String> {
    let outer = asn1::single(der, asn1::SEQUENCE)
        .ok_or("not a PEM file, nor one DER structure (a key or a certificate)")?;
    let mut r = Reader::new(outer.body);
    let first = r.peek_tag();
    let _ = r.any();
    match (first, r.peek_tag()) {
        (Some(asn1::INTEGER), Some(asn1::SEQUENCE)) => Ok(Item::Key(pkcs8(der)?)),
        (Some(asn1::INTEGER), Some(asn1::OCTET_STRING)) => Ok(Item::Key(sec1(der, None)?)),
        (Some(asn1::INTEGER), Some(asn1::INTEGER)) => Ok(Item::Key(pkcs1(der)?)),
        (Some(asn1::SEQUENCE), Some(asn1::SEQUENCE)) => Ok(Item::Certificate(certificate(der)?)),
        (Some(asn1::SEQUENCE), Some(asn1::OCTET_STRING)) => {
            Ok(Item::Key(encrypted_pkcs8(der, passphrase, limits)?))
        }
        _ => Err("the DER structure is neither a private key nor a certificate".into()),
    }
}

/// An unsigned big-endian integer without its DER sign octet.
fn unsigned(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take_while(|&&b| b == 0)
        .count()
        .min(bytes.len().saturating_sub(1));
    &bytes[skip..]
}

/// PKCS#8 `EncryptedPrivateKeyInfo`, decrypted with the passphrase once
/// its key derivation's cost is within `limits` (nothing is derived, and no
/// passphrase asked for, otherwise).
fn encrypted_pkcs8(
    der: &[u8],
    passphrase: Passphrase<'_>,
    limits: kdf::Limits,
) -> Result<PrivateKey, String> {
    let info = pkcs8::EncryptedPrivateKeyInfoOwned::try_from(der)
        .map_err(|_| "the encrypted PKCS#8 structure is damaged".to_string())?;
    kdf::check(&info.encryption_algorithm, limits)?;
    let pass = passphrase()?;
    let plain = info.decrypt(&*pass).map_err(|_| {
        "the encrypted key could not be decrypted: a wrong passphrase, or a scheme other than \
         PBES2 (PBKDF2 or scrypt, with AES-CBC)"
            .to_string()
    })?;
    pkcs8(plain.as_bytes())
}

/// PKCS#8 `PrivateKeyInfo` / `OneAsymmetricKey`.
fn pkcs8(der: &[u8]) -> Result<PrivateKey, String> {
    let bad = || "the PKCS#8 structure is damaged".to_string();
    let outer = asn1::single(der, asn1::SEQUENCE).ok_or_else(bad)?;
    let mut r = Reader::new(outer.body);
    r.expect(asn1::INTEGER).ok_or_else(bad)?;
    let alg = r.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    let key = r.expect(asn1::OCTET_STRING).ok_or_else(bad)?;
    let mut a = Reader::new(alg.body);
    let oid = a.expect(asn1::OID).ok_or_else(bad)?;
    let params = a.any();
    match oid.body {
        OID_RSA | OID_RSA_PSS => pkcs1(key.body),
        OID_EC => sec1(key.body, params.map(|p| p.whole)),
        OID_ED25519 | OID_X25519 | OID_ED448 | OID_X448 => {
            let secret = asn1::single(key.body, asn1::OCTET_STRING).ok_or_else(bad)?;
            let &(_, key_type, kind, len) = RFC8410_CURVES
                .iter()
                .find(|c| c.0 == oid.body)
                .ok_or_else(bad)?;
            if secret.body.len() != len {
                return Err(format!(
                    "the {kind} private key is {} bytes long, not {len}",
                    secret.body.len()
                ));
            }
            Ok(PrivateKey {
                key_type,
                kind: kind.into(),
                values: vec![
                    (
                        CKA_EC_PARAMS,
                        Zeroizing::new(asn1::tlv(asn1::OID, oid.body)),
                    ),
                    (CKA_VALUE, Zeroizing::new(secret.body.to_vec())),
                ],
                public: None,
            })
        }
        other => match pqc::by_oid(other) {
            Some(set) => pqc::private_key(set, params, key.body),
            None => Err(format!(
                "PKCS#8 keys of algorithm {} are not supported (RSA, EC, Ed25519, X25519, \
                 Ed448, X448, ML-DSA, ML-KEM, SLH-DSA are)",
                oid_text(other)
            )),
        },
    }
}

/// PKCS#1 `RSAPrivateKey` (two primes only: PKCS#11 has no attributes for
/// more).
fn pkcs1(der: &[u8]) -> Result<PrivateKey, String> {
    let bad = || "the RSA private key structure is damaged".to_string();
    let outer = asn1::single(der, asn1::SEQUENCE).ok_or_else(bad)?;
    let mut r = Reader::new(outer.body);
    let version = r.expect(asn1::INTEGER).ok_or_else(bad)?;
    if version.body != [0] {
        return Err("multi-prime RSA keys cannot be held by a PKCS#11 token".into());
    }
    let mut values = Vec::new();
    for ty in [
        CKA_MODULUS,
        CKA_PUBLIC_EXPONENT,
        CKA_PRIVATE_EXPONENT,
        CKA_PRIME_1,
        CKA_PRIME_2,
        CKA_EXPONENT_1,
        CKA_EXPONENT_2,
        CKA_COEFFICIENT,
    ] {
        let i = r.expect(asn1::INTEGER).ok_or_else(bad)?;
        values.push((ty, Zeroizing::new(unsigned(i.body).to_vec())));
    }
    // `unsigned` leaves no leading zero octet but the last: an empty or
    // zero modulus is no key (and has no size).
    let n = &values[0].1;
    if n.iter().all(|&b| b == 0) {
        return Err(bad());
    }
    let bits = n.len() * 8 - n[0].leading_zeros() as usize;
    Ok(PrivateKey {
        key_type: CKK_RSA,
        kind: format!("RSA {bits}"),
        values,
        public: None,
    })
}

/// SEC1 `ECPrivateKey`; `outer_params` are the PKCS#8 algorithm parameters
/// or a separate "EC PARAMETERS" block.
fn sec1(der: &[u8], outer_params: Option<&[u8]>) -> Result<PrivateKey, String> {
    let bad = || "the EC private key structure is damaged".to_string();
    let outer = asn1::single(der, asn1::SEQUENCE).ok_or_else(bad)?;
    let mut r = Reader::new(outer.body);
    let version = r.expect(asn1::INTEGER).ok_or_else(bad)?;
    if version.body != [1] {
        return Err(bad());
    }
    let scalar = r.expect(asn1::OCTET_STRING).ok_or_else(bad)?;
    let inner_params = r
        .optional(asn1::CONTEXT_0)
        .map(|p| p.body.to_vec())
        .filter(|p| !p.is_empty());
    let params = inner_params
        .or_else(|| outer_params.map(<[u8]>::to_vec))
        .ok_or("the EC key does not name its curve")?;
    let curve = asn1::single(&params, asn1::OID).ok_or(
        "the EC key's curve is given by explicit parameters: only named curves are supported",
    )?;
    Ok(PrivateKey {
        key_type: CKK_EC,
        kind: format!("EC {}", curve_name(curve.body)),
        values: vec![
            (CKA_EC_PARAMS, Zeroizing::new(params.clone())),
            (CKA_VALUE, Zeroizing::new(scalar.body.to_vec())),
        ],
        public: None,
    })
}

/// The common name of a curve OID (contents octets).
pub fn curve_name(oid: &[u8]) -> String {
    match oid {
        [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07] => "P-256".into(),
        [0x2b, 0x81, 0x04, 0x00, 0x22] => "P-384".into(),
        [0x2b, 0x81, 0x04, 0x00, 0x23] => "P-521".into(),
        [0x2b, 0x81, 0x04, 0x00, 0x21] => "P-224".into(),
        [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x01] => "P-192".into(),
        [0x2b, 0x81, 0x04, 0x00, 0x0a] => "secp256k1".into(),
        other => oid_text(other),
    }
}

/// Dotted text of an OID's contents octets (X.690 §8.19).
fn oid_text(oid: &[u8]) -> String {
    let mut arcs: Vec<u128> = Vec::new();
    let mut v: u128 = 0;
    for &b in oid {
        v = (v << 7) | u128::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (v / 40).min(2);
                arcs.push(first);
                arcs.push(v - first * 40);
            } else {
                arcs.push(v);
            }
            v = 0;
        }
        if v > u128::from(u64::MAX) {
            return "(an overlong OID)".into();
        }
    }
    arcs.iter()
        .map(u128::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// An X.509 `Certificate`.
fn certificate(der: &[u8]) -> Result<Certificate, String> {
    let bad = || "the certificate structure is damaged".to_string();
    // OpenSSL's "TRUSTED CERTIFICATE" carries its trust settings after the
    // certificate: only the first element is the certificate.
    let outer = Reader::new(der).expect(asn1::SEQUENCE).ok_or_else(bad)?;
    let mut c = Reader::new(outer.body);
    let tbs = c.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    c.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    c.expect(asn1::BIT_STRING).ok_or_else(bad)?;
    let mut t = Reader::new(tbs.body);
    t.optional(asn1::CONTEXT_0);
    let serial = t.expect(asn1::INTEGER).ok_or_else(bad)?;
    t.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    let issuer = t.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    t.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    let subject = t.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    let spki = t.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    Ok(Certificate {
        der: outer.whole.to_vec(),
        subject: subject.whole.to_vec(),
        issuer: issuer.whole.to_vec(),
        serial: serial.whole.to_vec(),
        spki: spki.whole.to_vec(),
    })
}

/// The point of a `CKA_EC_POINT`: DER `OCTET STRING` as the spec says, or
/// the raw point some producers store.
fn ec_point(value: &[u8]) -> &[u8] {
    asn1::single(value, asn1::OCTET_STRING).map_or(value, |e| e.body)
}

/// The SubjectPublicKeyInfo of a public key given by its attributes
/// (`get`: `CKA_MODULUS`, `CKA_PUBLIC_EXPONENT`, `CKA_EC_PARAMS`,
/// `CKA_EC_POINT`, or `CKA_PARAMETER_SET` and `CKA_VALUE`, as the key type
/// needs).
pub fn public_key_info(
    key_type: CK_KEY_TYPE,
    get: &dyn Fn(CK_ATTRIBUTE_TYPE) -> Option<Vec<u8>>,
) -> Result<Vec<u8>, String> {
    let need = |ty: CK_ATTRIBUTE_TYPE, name: &str| {
        get(ty).ok_or_else(|| format!("the key has no readable {name}"))
    };
    let integer = |v: &[u8]| {
        let v = unsigned(v);
        let mut body = Vec::with_capacity(v.len() + 1);
        if v.first().is_some_and(|b| b & 0x80 != 0) {
            body.push(0);
        }
        body.extend_from_slice(v);
        asn1::tlv(asn1::INTEGER, &body)
    };
    let bits = |key: &[u8]| {
        let mut body = vec![0u8];
        body.extend_from_slice(key);
        asn1::tlv(asn1::BIT_STRING, &body)
    };
    let (algorithm, key) = match key_type {
        CKK_RSA => {
            let mut alg = asn1::tlv(asn1::OID, OID_RSA);
            alg.extend_from_slice(&[0x05, 0x00]);
            let mut rsa = integer(&need(CKA_MODULUS, "CKA_MODULUS")?);
            rsa.extend(integer(&need(CKA_PUBLIC_EXPONENT, "CKA_PUBLIC_EXPONENT")?));
            (alg, asn1::tlv(asn1::SEQUENCE, &rsa))
        }
        CKK_EC => {
            let mut alg = asn1::tlv(asn1::OID, OID_EC);
            alg.extend(need(CKA_EC_PARAMS, "CKA_EC_PARAMS")?);
            let point = need(CKA_EC_POINT, "CKA_EC_POINT")?;
            (alg, ec_point(&point).to_vec())
        }
        CKK_EC_EDWARDS | CKK_EC_MONTGOMERY => {
            let point = need(CKA_EC_POINT, "CKA_EC_POINT")?;
            let point = ec_point(&point);
            let &(oid, ..) = RFC8410_CURVES
                .iter()
                .find(|c| c.1 == key_type && c.3 == point.len())
                .ok_or("the public key's point has the length of no RFC 8410 curve")?;
            (asn1::tlv(asn1::OID, oid), point.to_vec())
        }
        CKK_ML_DSA | CKK_ML_KEM | CKK_SLH_DSA => {
            return pqc::public_key_info(
                key_type,
                get(CKA_PARAMETER_SET).as_deref(),
                get(CKA_VALUE).as_deref(),
            );
        }
        other => {
            return Err(format!(
                "public keys of key type {other:#x} are not exported (RSA, EC, Ed25519, X25519, \
                 Ed448, X448, ML-DSA, ML-KEM, SLH-DSA are)"
            ));
        }
    };
    let mut body = asn1::tlv(asn1::SEQUENCE, &algorithm);
    body.extend(bits(&key));
    Ok(asn1::tlv(asn1::SEQUENCE, &body))
}

/// The default `CKA_ID` of a key or certificate: the SHA-1 of the public
/// key's bits (RFC 5280 §4.2.1.2 method 1, the key identifier GnuTLS and
/// OpenSC compute), so a key and its certificate imported without `--id`
/// share one.
pub fn default_id(spki: &[u8]) -> Result<Vec<u8>, String> {
    let bad = || "the SubjectPublicKeyInfo is damaged".to_string();
    let outer = asn1::single(spki, asn1::SEQUENCE).ok_or_else(bad)?;
    let mut r = Reader::new(outer.body);
    r.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    let key = r.expect(asn1::BIT_STRING).ok_or_else(bad)?;
    let bits = key.body.get(1..).ok_or_else(bad)?;
    Ok(sha1::Sha1::digest(bits).to_vec())
}

/// The subjectPublicKey bits of a SubjectPublicKeyInfo (whole octets).
pub fn spki_public_key(spki: &[u8]) -> Result<Vec<u8>, String> {
    let bad = || "the SubjectPublicKeyInfo is damaged".to_string();
    let outer = asn1::single(spki, asn1::SEQUENCE).ok_or_else(bad)?;
    let mut r = Reader::new(outer.body);
    r.expect(asn1::SEQUENCE).ok_or_else(bad)?;
    let key = r.expect(asn1::BIT_STRING).ok_or_else(bad)?;
    match key.body.split_first() {
        Some((0, bits)) if r.is_empty() => Ok(bits.to_vec()),
        _ => Err(bad()),
    }
}

/// PEM text (RFC 7468 §2, 64-character lines) of `der` under `label`.
pub fn to_pem(label: &str, der: &[u8]) -> String {
    use base64ct::{Base64, Encoding};
    let b64 = Base64::encode_string(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No passphrase: a test file is never encrypted.
    const NONE: Passphrase<'static> = &|| Err("no passphrase".into());

    #[test]
    fn oid_text_and_curve_names() {
        assert_eq!(oid_text(OID_RSA), "1.2.840.113549.1.1.1");
        assert_eq!(oid_text(OID_ED25519), "1.3.101.112");
        assert_eq!(curve_name(&[0x2b, 0x81, 0x04, 0x00, 0x22]), "P-384");
        assert_eq!(curve_name(&[0x2b, 0x24, 0x03]), "1.3.36.3");
    }

    #[test]
    fn refuses_what_it_cannot_import_with_a_reason() {
        let msg = |b: &[u8]| {
            parse(b, NONE, kdf::Limits::DEFAULT)
                .err()
                .unwrap_or_default()
        };
        assert!(msg(b"junk").contains("not a PEM file"));
        assert!(msg(b"-----BEGIN PRIVATE KEY-----\nAAAA\n").contains("no END line"));
        assert!(
            msg(b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n")
                .contains("damaged")
        );
        assert!(msg(b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n").contains("legacy encryption"));
        assert!(
            msg(b"-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n")
                .contains("base64")
        );
        assert!(msg(b"-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n").contains("'FOO'"));
        // A truncated PKCS#8 Ed25519 key.
        let mut ed = dalek_pkcs11::mechanisms::eddsa::pkcs8(&[1; 32]).to_vec();
        ed.truncate(20);
        assert!(msg(&ed).contains("DER"));
    }

    #[test]
    fn truncated_and_flipped_files_are_refused_without_panicking() {
        let p256 = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
        let samples = [
            dalek_pkcs11::mechanisms::eddsa::pkcs8(&[1; 32]).to_vec(),
            dalek_pkcs11::mechanisms::ec::to_pkcs8(&p256, &[1; 32])
                .unwrap()
                .to_vec(),
            to_pem(
                "PRIVATE KEY",
                &dalek_pkcs11::mechanisms::x25519::pkcs8(&[2; 32]),
            )
            .into_bytes(),
        ];
        let pqc_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pqc");
        let samples: Vec<Vec<u8>> = samples
            .into_iter()
            .chain(
                [
                    "ml-kem-512.both.der",
                    "slh-dsa-sha2-128s.der",
                    "ml-dsa-44.seed.pem",
                ]
                .map(|f| std::fs::read(pqc_dir.join(f)).unwrap()),
            )
            .collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for sample in &samples {
            assert!(parse(sample, NONE, kdf::Limits::DEFAULT).is_ok());
            for len in 0..sample.len() {
                let _ = parse(&sample[..len], NONE, kdf::Limits::DEFAULT);
            }
            for _ in 0..2000 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let mut m = sample.clone();
                let at = (state % m.len() as u64) as usize;
                m[at] ^= 1 << (state >> 61);
                let _ = parse(&m, NONE, kdf::Limits::DEFAULT);
            }
        }
    }

    #[test]
    fn an_rsa_key_without_a_modulus_is_damaged() {
        // Version 0 and eight INTEGERs, the modulus empty (`02 00`) or zero:
        // its size in bits once underflowed (a panic with overflow checks).
        for modulus in [
            &[0x02, 0x00][..],
            &[0x02, 0x01, 0x00],
            &[0x02, 0x02, 0x00, 0x00],
        ] {
            let mut body = vec![0x02, 0x01, 0x00];
            body.extend_from_slice(modulus);
            for _ in 0..7 {
                body.extend_from_slice(&[0x02, 0x01, 0x03]);
            }
            let der = asn1::tlv(asn1::SEQUENCE, &body);
            let e = parse(&der, NONE, kdf::Limits::DEFAULT).err();
            assert!(e.as_deref().is_some_and(|e| e.contains("damaged")), "{e:?}");
        }
    }

    #[test]
    fn reads_a_one_asymmetric_key_v2_with_its_public_key() {
        // RFC 5958: version 1, and the [1] publicKey after the private key.
        let mut body = vec![
            0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
        ];
        body.extend_from_slice(&[4; 32]);
        body.extend_from_slice(&[0x81, 0x21, 0x00]);
        body.extend_from_slice(&[5; 32]);
        let der = asn1::tlv(asn1::SEQUENCE, &body);
        let items = parse(&der, NONE, kdf::Limits::DEFAULT).unwrap();
        let Item::Key(k) = &items[0] else {
            panic!("not a key")
        };
        assert_eq!(k.key_type, CKK_EC_EDWARDS);
        assert_eq!(&k.values[1].1[..], &[4; 32]);
    }

    /// The key files python `cryptography` and the RustCrypto crates wrote
    /// (tests/data/pqc/): every one parses as the parameter set its name
    /// says (so the OID arcs are theirs), with the seed or value the file
    /// holds, and where the file holds the public key (SLH-DSA, an expanded
    /// ML-KEM key) its SubjectPublicKeyInfo is theirs byte for byte.
    #[test]
    fn post_quantum_key_files_of_other_implementations_parse_as_they_wrote_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pqc");
        let mut seen = 0;
        let mut with_public = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_str().unwrap().to_string();
            if !(file.ends_with(".der") || file.ends_with(".pem"))
                || file.contains(".spki.")
                || file.contains(".encrypted.")
            {
                continue;
            }
            let name = file.split('.').next().unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let items =
                parse(&bytes, NONE, kdf::Limits::DEFAULT).unwrap_or_else(|e| panic!("{file}: {e}"));
            let Item::Key(k) = &items[0] else {
                panic!("{file}: not a key")
            };
            assert_eq!(k.kind.to_lowercase(), name, "{file}");
            let get = |ty| {
                k.values
                    .iter()
                    .find(|(t, _)| *t == ty)
                    .map(|(_, v)| v.to_vec())
            };
            let ckp = get(CKA_PARAMETER_SET).unwrap();
            let set = pqc::by_ckp(
                k.key_type,
                dalek_pkcs11::attributes::decode_ulong(&ckp).unwrap(),
            )
            .unwrap();
            assert_eq!(set.name, k.kind);
            let der = if file.ends_with(".pem") {
                pem_blocks(std::str::from_utf8(&bytes).unwrap()).unwrap()[0]
                    .der
                    .to_vec()
            } else {
                bytes.clone()
            };
            if file.contains(".seed.") {
                assert_eq!(get(CKA_SEED).as_deref(), Some(&der[22..]), "{file}");
                assert_eq!(get(CKA_VALUE), None, "{file}");
            }
            if file.contains(".expanded.") || file.contains(".both.") {
                let value = get(CKA_VALUE).unwrap();
                assert_eq!(value.len(), set.private_len, "{file}");
                assert_eq!(&der[der.len() - set.private_len..], &value[..], "{file}");
                assert_eq!(get(CKA_SEED).is_some(), file.contains(".both."), "{file}");
            }
            if let Some(public) = &k.public {
                let spki = std::fs::read(dir.join(format!("{name}.spki.der"))).unwrap();
                assert_eq!(
                    pqc::public_key_info(k.key_type, Some(&ckp), Some(public)).unwrap(),
                    spki,
                    "{file}"
                );
                with_public += 1;
            }
            seen += 1;
        }
        // 3 ML-DSA seed files; 3 ML-KEM sets in 3 forms; 12 SLH-DSA sets.
        assert_eq!((seen, with_public), (24, 18));
    }

    #[test]
    fn an_encrypted_post_quantum_key_decrypts_to_the_same_key() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pqc");
        let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
        let pass: Passphrase<'_> = &|| Ok(Zeroizing::new(b"pqc fixture".to_vec()));
        let enc = parse(&read("ml-dsa-65.encrypted.pem"), pass, kdf::Limits::DEFAULT).unwrap();
        let plain = parse(&read("ml-dsa-65.seed.pem"), NONE, kdf::Limits::DEFAULT).unwrap();
        let (Item::Key(a), Item::Key(b)) = (&enc[0], &plain[0]) else {
            panic!("not keys")
        };
        assert_eq!(
            (a.key_type, &a.kind, &a.values),
            (b.key_type, &b.kind, &b.values)
        );
        let wrong: Passphrase<'_> = &|| Ok(Zeroizing::new(b"pqc fixturE".to_vec()));
        assert!(
            parse(
                &read("ml-dsa-65.encrypted.pem"),
                wrong,
                kdf::Limits::DEFAULT
            )
            .is_err()
        );
    }

    #[test]
    fn post_quantum_public_key_infos_round_trip_through_the_bit_string() {
        let spki = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/pqc/ml-dsa-65.spki.der"),
        )
        .unwrap();
        let pk = spki_public_key(&spki).unwrap();
        assert_eq!(pk.len(), 1952);
        let ckp = CKP_ML_DSA_65.to_ne_bytes();
        let get = |ty| match ty {
            CKA_PARAMETER_SET => Some(ckp.to_vec()),
            CKA_VALUE => Some(pk.clone()),
            _ => None,
        };
        assert_eq!(public_key_info(CKK_ML_DSA, &get).unwrap(), spki);
        // The private key's value (an expanded key) is no public key.
        let get = |ty| match ty {
            CKA_PARAMETER_SET => Some(ckp.to_vec()),
            CKA_VALUE => Some(vec![0; 4032]),
            _ => None,
        };
        assert!(public_key_info(CKK_ML_DSA, &get).is_err());
        let mut unused_bits = spki.clone();
        unused_bits[spki.len() - pk.len() - 1] = 1;
        assert!(spki_public_key(&unused_bits).is_err());
    }

    #[test]
    fn parses_rfc8410_keys_and_builds_their_public_key_info() {
        let der = dalek_pkcs11::mechanisms::x25519::pkcs8(&[9; 32]);
        let items = parse(&der, NONE, kdf::Limits::DEFAULT).unwrap();
        let Item::Key(k) = &items[0] else {
            panic!("not a key")
        };
        assert_eq!(k.key_type, CKK_EC_MONTGOMERY);
        assert_eq!(&k.values[1].1[..], &[9; 32]);
        let spki = public_key_info(CKK_EC_MONTGOMERY, &|ty| {
            (ty == CKA_EC_POINT).then(|| asn1::tlv(asn1::OCTET_STRING, &[3; 32]))
        })
        .unwrap();
        assert_eq!(
            spki,
            dalek_pkcs11::mechanisms::rfc8410::spki(
                dalek_pkcs11::mechanisms::rfc8410::X25519,
                &[3; 32]
            )
        );
        assert_eq!(
            default_id(&spki).unwrap(),
            sha1::Sha1::digest([3u8; 32]).to_vec()
        );
        let pem = to_pem("PRIVATE KEY", &der);
        assert!(matches!(
            &parse(pem.as_bytes(), NONE, kdf::Limits::DEFAULT).unwrap()[0],
            Item::Key(_)
        ));
    }
}
