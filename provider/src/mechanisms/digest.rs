//! Message digests: `CKM_SHA_1`, `CKM_SHA224`, `CKM_SHA256`, `CKM_SHA384`,
//! `CKM_SHA512` (mechanisms spec §2.16–2.20) with the sha1 and sha2 crates;
//! with the `aws-lc` back end, SHA-384 and SHA-512 run in AWS-LC, whose
//! AVX2 code is about 20% faster on CPUs without SHA-512 instructions, and
//! so does SHA-1 on x86-64 CPUs without SHA-NI (there the sha1 crate's
//! portable code only matches SoftHSM2's OpenSSL, AWS-LC's AVX2 code is
//! 1.7 times faster; with SHA-NI the sha1 crate is twice AWS-LC's speed).
//! SHA-256 stays in sha2, which uses SHA-NI like AWS-LC.
//!
//! `CKM_SHA512_224` and `CKM_SHA512_256` (mechanisms spec 3.0 §2.25,
//! FIPS 180-4 §5.3.6) with the sha2 crate, and `CKM_SHA3_224`,
//! `CKM_SHA3_256`, `CKM_SHA3_384`, `CKM_SHA3_512` (mechanisms spec 3.0
//! §2.26, FIPS 202) with the sha3 crate, in both builds. `CKM_SHA512_T`
//! (an arbitrary t) is not supported: the sha2 crate has no SHA-512/t IV
//! generation for other t.
//!
//! `CKM_MD5` (mechanisms spec §6.5.2, RFC 1321) with the md-5 crate, for
//! SoftHSM2 migration only: MD5 is broken (collisions), see docs/mechanisms.md.

use super::operation::DigestOperation;
use crate::error::{Result, err};
use cryptoki_sys::*;
use sha2::Digest;

/// A digest in progress.
#[derive(Clone)]
pub enum DigestOp {
    /// MD5 (legacy).
    Md5(md5::Md5),
    /// SHA-1.
    Sha1(sha1::Sha1),
    /// SHA-224.
    Sha224(sha2::Sha224),
    /// SHA-256.
    Sha256(sha2::Sha256),
    /// SHA-384.
    Sha384(sha2::Sha384),
    /// SHA-512.
    Sha512(sha2::Sha512),
    /// SHA-512/224.
    Sha512_224(sha2::Sha512_224),
    /// SHA-512/256.
    Sha512_256(sha2::Sha512_256),
    /// SHA3-224.
    Sha3_224(sha3::Sha3_224),
    /// SHA3-256.
    Sha3_256(sha3::Sha3_256),
    /// SHA3-384.
    Sha3_384(sha3::Sha3_384),
    /// SHA3-512.
    Sha3_512(sha3::Sha3_512),
    /// SHA-384 or SHA-512 in AWS-LC.
    #[cfg(feature = "aws-lc")]
    AwsLc(aws_lc_rs::digest::Context),
}

macro_rules! each {
    ($self:ident, $h:ident => $e:expr) => {
        match $self {
            DigestOp::Md5($h) => $e,
            DigestOp::Sha1($h) => $e,
            DigestOp::Sha224($h) => $e,
            DigestOp::Sha256($h) => $e,
            DigestOp::Sha384($h) => $e,
            DigestOp::Sha512($h) => $e,
            DigestOp::Sha512_224($h) => $e,
            DigestOp::Sha512_256($h) => $e,
            DigestOp::Sha3_224($h) => $e,
            DigestOp::Sha3_256($h) => $e,
            DigestOp::Sha3_384($h) => $e,
            DigestOp::Sha3_512($h) => $e,
            #[cfg(feature = "aws-lc")]
            DigestOp::AwsLc(_) => unreachable!("handled before each!"),
        }
    };
}

impl DigestOp {
    /// A fresh digest for `mechanism`.
    pub fn new(mechanism: CK_MECHANISM_TYPE) -> Result<DigestOp> {
        Ok(match mechanism {
            CKM_MD5 => DigestOp::Md5(Default::default()),
            #[cfg(feature = "aws-lc")]
            CKM_SHA_1 if !sha1_crate_has_its_instructions() => DigestOp::AwsLc(
                aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY),
            ),
            CKM_SHA_1 => DigestOp::Sha1(Default::default()),
            CKM_SHA224 => DigestOp::Sha224(Default::default()),
            CKM_SHA256 => DigestOp::Sha256(Default::default()),
            #[cfg(feature = "aws-lc")]
            CKM_SHA384 => {
                DigestOp::AwsLc(aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA384))
            }
            #[cfg(feature = "aws-lc")]
            CKM_SHA512 => {
                DigestOp::AwsLc(aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA512))
            }
            #[cfg(not(feature = "aws-lc"))]
            CKM_SHA384 => DigestOp::Sha384(Default::default()),
            #[cfg(not(feature = "aws-lc"))]
            CKM_SHA512 => DigestOp::Sha512(Default::default()),
            CKM_SHA512_224 => DigestOp::Sha512_224(Default::default()),
            CKM_SHA512_256 => DigestOp::Sha512_256(Default::default()),
            CKM_SHA3_224 => DigestOp::Sha3_224(Default::default()),
            CKM_SHA3_256 => DigestOp::Sha3_256(Default::default()),
            CKM_SHA3_384 => DigestOp::Sha3_384(Default::default()),
            CKM_SHA3_512 => DigestOp::Sha3_512(Default::default()),
            _ => return Err(err(CKR_MECHANISM_INVALID)),
        })
    }
}

/// Whether the sha1 crate runs on this CPU's SHA instructions (x86-64:
/// SHA-NI, which it detects at run time the same way; other targets: taken
/// as yes, the crate's ARMv8 code and AWS-LC's being alike).
#[cfg(feature = "aws-lc")]
fn sha1_crate_has_its_instructions() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("sse4.1")
    }
    #[cfg(not(target_arch = "x86_64"))]
    true
}

impl DigestOperation for DigestOp {
    fn output_len(&self) -> usize {
        match self {
            DigestOp::Md5(_) => 16,
            DigestOp::Sha1(_) => 20,
            DigestOp::Sha224(_) => 28,
            DigestOp::Sha256(_) => 32,
            DigestOp::Sha384(_) => 48,
            DigestOp::Sha512(_) => 64,
            DigestOp::Sha512_224(_) | DigestOp::Sha3_224(_) => 28,
            DigestOp::Sha512_256(_) | DigestOp::Sha3_256(_) => 32,
            DigestOp::Sha3_384(_) => 48,
            DigestOp::Sha3_512(_) => 64,
            #[cfg(feature = "aws-lc")]
            DigestOp::AwsLc(c) => c.algorithm().output_len(),
        }
    }

    fn update(&mut self, data: &[u8]) {
        #[cfg(feature = "aws-lc")]
        if let DigestOp::AwsLc(c) = self {
            return c.update(data);
        }
        each!(self, h => Digest::update(h, data))
    }

    fn finish(&mut self, out: &mut [u8]) -> usize {
        let n = self.output_len();
        #[cfg(feature = "aws-lc")]
        if let DigestOp::AwsLc(c) = self {
            // Ready for another message afterwards, like finalize_reset.
            let done = std::mem::replace(c, aws_lc_rs::digest::Context::new(c.algorithm()));
            out[..n].copy_from_slice(done.finish().as_ref());
            return n;
        }
        each!(self, h => out[..n].copy_from_slice(&h.finalize_reset()));
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        crate::mechanisms::test_util::hex(b)
    }

    /// Both SHA-1 engines of the default build (the one this CPU gets and
    /// the other) give the FIPS 180-4 answers, in parts and again after a
    /// finish.
    #[cfg(feature = "aws-lc")]
    #[test]
    fn both_sha1_engines_agree() {
        let engines = [
            DigestOp::Sha1(Default::default()),
            DigestOp::AwsLc(aws_lc_rs::digest::Context::new(
                &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
            )),
        ];
        let long = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        for mut e in engines {
            for _ in 0..2 {
                let mut out = [0u8; 20];
                e.update(&long.as_bytes()[..7]);
                e.update(&long.as_bytes()[7..]);
                assert_eq!(e.finish(&mut out), 20);
                assert_eq!(hex(&out), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
            }
        }
    }

    /// FIPS 180-4 examples, message "abc".
    #[test]
    fn known_answers_for_abc() {
        let cases = [
            // RFC 1321 §A.5.
            (CKM_MD5, "900150983cd24fb0d6963f7d28e17f72"),
            (CKM_SHA_1, "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (
                CKM_SHA224,
                "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
            ),
            (
                CKM_SHA256,
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                CKM_SHA384,
                "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
            ),
            (
                CKM_SHA512,
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            ),
            // FIPS 180-4 / FIPS 202 examples (NIST CSRC "Examples with
            // Intermediate Values"), "abc".
            (
                CKM_SHA512_224,
                "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa",
            ),
            (
                CKM_SHA512_256,
                "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23",
            ),
            (
                CKM_SHA3_224,
                "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf",
            ),
            (
                CKM_SHA3_256,
                "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532",
            ),
            (
                CKM_SHA3_384,
                "ec01498288516fc926459f58e2c6ad8df9b473cb0fc08c2596da7cf0e49be4b298d88cea927ac7f539f1edf228376d25",
            ),
            (
                CKM_SHA3_512,
                "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e10e116e9192af3c91a7ec57647e3934057340b4cf408d5a56592f8274eec53f0",
            ),
        ];
        for (m, want) in cases {
            let mut d = DigestOp::new(m).unwrap();
            d.update(b"a");
            d.update(b"bc");
            let mut out = [0u8; 64];
            let n = d.finish(&mut out);
            assert_eq!(n, d.output_len());
            assert_eq!(hex(&out[..n]), want);
            // Finishing leaves the digest ready for the next message.
            d.update(b"abc");
            assert_eq!(d.finish(&mut out), n);
            assert_eq!(hex(&out[..n]), want, "reused");
        }
        assert!(DigestOp::new(CKM_MD2).is_err());
    }
}
