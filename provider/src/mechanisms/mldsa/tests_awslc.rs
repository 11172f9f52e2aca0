//! Unit tests of which path computes an ML-DSA signature in the default
//! build (`sign` module docs): aws-lc for pure ML-DSA with an empty
//! context, hedged, single-part or multi-part up to `MAX_BUFFERED` bytes;
//! μ on the crate otherwise. Every signature is checked with the crate.

use super::awslc::MAX_BUFFERED;
use super::*;
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::{SignOperation, VerifyOperation};
use crate::mechanisms::params::{Mechanism, Param};
use cryptoki_sys::*;
use ml_dsa::{MlDsa65, Signature, SigningKey};
use signature::Keypair;
use std::sync::Arc;

const SEED: [u8; 32] = [9; 32];

fn fresh() -> (Arc<KeyMaterial>, Arc<KeyMaterial>) {
    let sk = PrivateKey::from_seed(ParamSet::P65, &SEED).unwrap();
    let pk = PublicKey::decode(ParamSet::P65, &sk.public_encoding()).unwrap();
    (
        Arc::new(KeyMaterial::MlDsaPrivate(Box::new(sk))),
        Arc::new(KeyMaterial::MlDsaPublic(Box::new(pk))),
    )
}

fn built(key: &KeyMaterial) -> bool {
    let KeyMaterial::MlDsaPrivate(k) = key else {
        unreachable!()
    };
    k.aws_lc_built()
}

fn ctx(hedge: CK_ULONG, context: &[u8]) -> Param<'_> {
    Param::SignContext { hedge, context }
}

/// Signs `data` in `parts` (`None`: single-part); the signature.
fn sign(m: &Mechanism<'_>, key: &Arc<KeyMaterial>, data: &[u8], parts: Option<usize>) -> Vec<u8> {
    let mut op = MlDsaSign::new(m, key.clone()).unwrap();
    let mut out = vec![0u8; op.output_len()];
    let n = match parts {
        None => op.sign(data, &mut out).unwrap(),
        Some(chunk) => {
            for part in data.chunks(chunk) {
                op.update(part).unwrap();
            }
            op.finish(&mut out).unwrap()
        }
    };
    out.truncate(n);
    out
}

fn verify(
    m: &Mechanism<'_>,
    key: &Arc<KeyMaterial>,
    data: &[u8],
    parts: Option<usize>,
    sig: &[u8],
) -> crate::error::Result<()> {
    let mut op = MlDsaVerify::new(m, key.clone())?;
    match parts {
        None => op.verify(data, sig),
        Some(chunk) => {
            for part in data.chunks(chunk) {
                op.update(part)?;
            }
            op.finish(sig)
        }
    }
}

/// A mechanism, the data, the parts (`None`: single-part), the context it
/// signs with, and whether aws-lc must sign it.
type Case<'a> = (Mechanism<'a>, &'a [u8], Option<usize>, &'a [u8], bool);

#[test]
fn each_operation_takes_the_path_the_design_says() {
    let reference = SigningKey::<MlDsa65>::from_seed(&SEED.into()).verifying_key();
    let small = vec![0x33u8; 1000];
    let at_bound = vec![0x44u8; MAX_BUFFERED];
    let past = vec![0x55u8; MAX_BUFFERED + 1];
    let cases: [Case<'_>; 12] = [
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: Param::None,
            },
            &small,
            None,
            b"",
            true,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: ctx(CKH_HEDGE_PREFERRED, b""),
            },
            &small,
            None,
            b"",
            true,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: ctx(CKH_HEDGE_REQUIRED, b""),
            },
            &past,
            None,
            b"",
            true,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: Param::None,
            },
            &small,
            Some(100),
            b"",
            true,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: Param::None,
            },
            &at_bound,
            Some(4096),
            b"",
            true,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: Param::None,
            },
            &at_bound,
            Some(MAX_BUFFERED),
            b"",
            true,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: Param::None,
            },
            &past,
            Some(4096),
            b"",
            false,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: Param::None,
            },
            &past,
            Some(MAX_BUFFERED + 1),
            b"",
            false,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: ctx(CKH_DETERMINISTIC_REQUIRED, b""),
            },
            &small,
            None,
            b"",
            false,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: ctx(CKH_HEDGE_PREFERRED, b"c"),
            },
            &small,
            None,
            b"c",
            false,
        ),
        (
            Mechanism {
                ty: CKM_ML_DSA,
                param: ctx(CKH_HEDGE_REQUIRED, b"c"),
            },
            &small,
            Some(10),
            b"c",
            false,
        ),
        (
            Mechanism {
                ty: CKM_HASH_ML_DSA_SHA256,
                param: Param::None,
            },
            &small,
            None,
            b"",
            false,
        ),
    ];
    for (i, (m, data, parts, context, aws)) in cases.iter().enumerate() {
        let (sk, pk) = fresh();
        let sig = sign(m, &sk, data, *parts);
        assert_eq!(built(&sk), *aws, "case {i}");
        if m.ty == CKM_ML_DSA {
            let parsed = Signature::<MlDsa65>::try_from(&sig[..]).unwrap();
            assert!(
                reference.verify_with_context(data, context, &parsed),
                "case {i}"
            );
        }
        // Verified by the token on the path its own mechanism picks.
        verify(m, &pk, data, *parts, &sig).unwrap();
        let mut bad = sig.clone();
        bad[7] ^= 1;
        assert_eq!(
            verify(m, &pk, data, *parts, &bad).unwrap_err().rv(),
            CKR_SIGNATURE_INVALID,
            "case {i}"
        );
        assert_eq!(
            verify(m, &pk, data, *parts, &sig[1..]).unwrap_err().rv(),
            CKR_SIGNATURE_LEN_RANGE,
            "case {i}"
        );
    }
}

#[test]
fn the_buffer_keeps_every_part_in_order() {
    // Parts of uneven sizes that grow the buffer several times: aws-lc
    // signs the buffer, so a lost or reordered part would not verify.
    let reference = SigningKey::<MlDsa65>::from_seed(&SEED.into()).verifying_key();
    let data: Vec<u8> = (0..MAX_BUFFERED).map(|i| (i % 253) as u8).collect();
    let (sk, pk) = fresh();
    let m = Mechanism {
        ty: CKM_ML_DSA,
        param: Param::None,
    };
    let mut op = MlDsaSign::new(&m, sk.clone()).unwrap();
    let mut rest = &data[..];
    let mut n = 1;
    while !rest.is_empty() {
        let (part, tail) = rest.split_at(n.min(rest.len()));
        op.update(part).unwrap();
        rest = tail;
        n = n * 3 + 1;
    }
    let mut sig = vec![0u8; op.output_len()];
    let len = op.finish(&mut sig).unwrap();
    assert!(built(&sk));
    let parsed = Signature::<MlDsa65>::try_from(&sig[..len]).unwrap();
    assert!(reference.verify_with_context(&data, b"", &parsed));
    verify(&m, &pk, &data, Some(5000), &sig).unwrap();
    verify(&m, &pk, &data, Some(MAX_BUFFERED + 1), &sig).unwrap();
}
