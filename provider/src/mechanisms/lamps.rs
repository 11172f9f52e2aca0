//! The encodings the IETF LAMPS specifications give post-quantum keys:
//! a SubjectPublicKeyInfo whose algorithm identifier has no parameters and
//! whose BIT STRING is the raw public key (RFC 9881 §4 for ML-DSA, the
//! ML-KEM certificate specification §4, RFC 9909 for SLH-DSA), and a
//! PKCS#8 `PrivateKeyInfo` (RFC 5958) around a private key's own encoding.

use zeroize::Zeroizing;

/// The DER `AlgorithmIdentifier` (no parameters) of the NIST OID
/// 2.16.840.1.101.3.4.`group`.`arc` (CSOR: `group` 3 holds the signature
/// algorithms, ML-DSA and SLH-DSA; 4 the KEMs, ML-KEM).
pub fn nist_algorithm_identifier(group: u8, arc: u8) -> [u8; 13] {
    [
        0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, group, arc,
    ]
}

/// DER length octets of `len` (up to 65,535, more than any key here).
fn der_len(len: usize, out: &mut Vec<u8>) {
    match len {
        0..0x80 => out.push(len as u8),
        0x80..0x100 => out.extend_from_slice(&[0x81, len as u8]),
        _ => out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]),
    }
}

/// SubjectPublicKeyInfo DER: `algorithm` (a DER `AlgorithmIdentifier`)
/// and the raw public key as the BIT STRING.
pub fn spki(algorithm: &[u8], public: &[u8]) -> Vec<u8> {
    let mut bits = vec![0x03];
    der_len(public.len() + 1, &mut bits);
    bits.push(0);
    let mut out = vec![0x30];
    der_len(algorithm.len() + bits.len() + public.len(), &mut out);
    out.extend_from_slice(algorithm);
    out.extend_from_slice(&bits);
    out.extend_from_slice(public);
    out
}

/// PKCS#8 `PrivateKeyInfo` DER (version 0, no attributes) whose
/// `privateKey` OCTET STRING holds `private` (the key's own DER, e.g. the
/// `[0]` seed choice of ML-DSA and ML-KEM).
pub fn pkcs8(algorithm: &[u8], private: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut octets = vec![0x04];
    der_len(private.len(), &mut octets);
    let mut out = Zeroizing::new(vec![0x30]);
    der_len(3 + algorithm.len() + octets.len() + private.len(), &mut out);
    out.extend_from_slice(&[0x02, 0x01, 0x00]);
    out.extend_from_slice(algorithm);
    out.extend_from_slice(&octets);
    out.extend_from_slice(private);
    out
}

/// PKCS#8 of a key in the seed form of ML-DSA and ML-KEM: the
/// `privateKey` holds the `[0] IMPLICIT OCTET STRING` seed choice (RFC 9881
/// §6, the ML-KEM certificate specification §6).
pub fn seed_pkcs8(algorithm: &[u8], seed: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut choice = Zeroizing::new(vec![0x80]);
    der_len(seed.len(), &mut choice);
    choice.extend_from_slice(seed);
    pkcs8(algorithm, &choice)
}

/// The seed of a [`seed_pkcs8`] encoding for `algorithm` with a seed of
/// `seed_len` bytes, if `der` is exactly that.
pub fn seed_of_pkcs8<'a>(der: &'a [u8], algorithm: &[u8], seed_len: usize) -> Option<&'a [u8]> {
    let template = seed_pkcs8(algorithm, &vec![0; seed_len]);
    let prefix = &template[..template.len() - seed_len];
    der.strip_prefix(prefix)
        .filter(|seed| seed.len() == seed_len)
}

/// Byte offset of the last arc of the OID in a [`seed_pkcs8`] encoding
/// (and of a short SubjectPublicKeyInfo's header): the parameter set's.
pub const PKCS8_OID_ARC_OFFSET: usize = 17;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_lengths_are_encoded_in_der() {
        let alg = [0x30, 0x00];
        assert_eq!(
            spki(&alg, &[7]),
            [0x30, 0x06, 0x30, 0x00, 0x03, 0x02, 0x00, 7]
        );
        let long = spki(&alg, &[0u8; 300]);
        assert_eq!(&long[..4], &[0x30, 0x82, 0x01, 0x33]);
        assert_eq!(&long[6..10], &[0x03, 0x82, 0x01, 0x2d]);
        assert_eq!(long.len(), 4 + 0x133);
        let p8 = pkcs8(&alg, &[0x80, 0x01, 9]);
        assert_eq!(
            &p8[..],
            &[
                0x30, 0x0a, 0x02, 0x01, 0x00, 0x30, 0x00, 0x04, 0x03, 0x80, 0x01, 9
            ]
        );
        let seeded = seed_pkcs8(&alg, &[5, 6]);
        assert_eq!(seed_of_pkcs8(&seeded, &alg, 2), Some(&[5u8, 6][..]));
        assert_eq!(seed_of_pkcs8(&seeded, &alg, 3), None);
        assert_eq!(seed_of_pkcs8(&seeded[..seeded.len() - 1], &alg, 2), None);
    }
}
