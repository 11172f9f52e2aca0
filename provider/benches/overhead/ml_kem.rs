//! ML-KEM-768 (FIPS 203) encapsulation and decapsulation, each timed on
//! the RustCrypto `ml-kem` crate directly, on aws-lc-rs (default build:
//! the other back end `docs/mechanisms.md` weighs), and through
//! `C_EncapsulateKey` / `C_DecapsulateKey` (`CKM_ML_KEM`, 3.2 function
//! list), where each call also makes a session secret key (destroyed off
//! the clock). Also ML-DSA-65 hedged signing and verification on aws-lc-rs,
//! beside the `ml_dsa` group's RustCrypto figures.

use super::new_keys::timed;
use super::{Template, Token};
use criterion::Criterion;
use cryptoki_sys::*;
use dalek_pkcs11::ffi::v3_2::{C_DecapsulateKey, C_EncapsulateKey};
use ml_kem::{Decapsulate, DecapsulationKey, KeyExport, MlKem768};
use std::hint::black_box;
use std::time::{Duration, Instant};

const SEED: [u8; 64] = [7; 64];

/// A generic secret the KEM calls make (a session object).
fn secret_template() -> Template {
    Template::new()
        .ulong(CKA_CLASS, CKO_SECRET_KEY)
        .ulong(CKA_KEY_TYPE, CKK_GENERIC_SECRET)
}

fn mechanism() -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: CKM_ML_KEM,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    }
}

/// Times `f` over `iters` calls.
fn time(iters: u64, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    start.elapsed()
}

pub fn bench(c: &mut Criterion, t: &Token) {
    let direct = DecapsulationKey::<MlKem768>::from_seed(SEED.into());
    let ek = direct.encapsulation_key().clone();
    let private = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PRIVATE_KEY)
            .ulong(CKA_KEY_TYPE, CKK_ML_KEM)
            .ulong(CKA_PARAMETER_SET, CKP_ML_KEM_768)
            .bytes(CKA_SEED, &SEED),
    );
    let public = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PUBLIC_KEY)
            .ulong(CKA_KEY_TYPE, CKK_ML_KEM)
            .ulong(CKA_PARAMETER_SET, CKP_ML_KEM_768)
            .bytes(CKA_VALUE, &ek.to_bytes()),
    );
    let mut template = secret_template();
    let mut attrs = template.raw();
    let mut ct = vec![0u8; 1088];
    let encapsulate = |ct: &mut [u8], attrs: &mut [CK_ATTRIBUTE]| {
        let mut len = ct.len() as CK_ULONG;
        let mut key = 0;
        // SAFETY: live buffers of the stated lengths.
        let rv = unsafe {
            C_EncapsulateKey(
                t.s,
                &mut mechanism(),
                public,
                attrs.as_mut_ptr(),
                attrs.len() as CK_ULONG,
                ct.as_mut_ptr(),
                &mut len,
                &mut key,
            )
        };
        super::call(rv, "C_EncapsulateKey");
        key
    };
    let decapsulate = |ct: &mut [u8], attrs: &mut [CK_ATTRIBUTE]| {
        let mut key = 0;
        // SAFETY: live buffers of the stated lengths.
        let rv = unsafe {
            C_DecapsulateKey(
                t.s,
                &mut mechanism(),
                private,
                attrs.as_mut_ptr(),
                attrs.len() as CK_ULONG,
                ct.as_mut_ptr(),
                ct.len() as CK_ULONG,
                &mut key,
            )
        };
        super::call(rv, "C_DecapsulateKey");
        key
    };
    // One ciphertext made through the module decapsulates in the crate too
    // (the secret equality is the integration tests' job).
    t.destroy(encapsulate(&mut ct, &mut attrs));
    let ciphertext = ml_kem::array::Array::try_from(&ct[..]).unwrap();

    let mut g = c.benchmark_group("ml-kem-768-encaps");
    g.sample_size(30);
    g.bench_function(super::DIRECT, |b| {
        b.iter_custom(|n| {
            time(n, || {
                // m from the OS, as the module draws it.
                let mut m = [0u8; 32];
                getrandom::fill(&mut m).unwrap();
                black_box(ek.encapsulate_deterministic(&m.into()));
            })
        })
    });
    #[cfg(feature = "aws-lc")]
    {
        let lc = aws_lc_rs::kem::EncapsulationKey::new(&aws_lc_rs::kem::ML_KEM_768, &ek.to_bytes())
            .unwrap();
        g.bench_function(AWS_LC, |b| {
            b.iter_custom(|n| time(n, || drop(black_box(lc.encapsulate().unwrap()))))
        });
    }
    g.bench_function(super::THROUGH, |b| {
        b.iter_custom(|n| timed(t, n, || [encapsulate(&mut ct, &mut attrs)]))
    });
    g.finish();

    let mut g = c.benchmark_group("ml-kem-768-decaps");
    g.sample_size(30);
    g.bench_function(super::DIRECT, |b| {
        b.iter_custom(|n| {
            time(n, || {
                black_box(direct.decapsulate(&ciphertext));
            })
        })
    });
    #[cfg(feature = "aws-lc")]
    {
        // The expanded form is what aws-lc takes.
        #[allow(deprecated)]
        let dk =
            <DecapsulationKey<MlKem768> as ml_kem::ExpandedKeyEncoding>::to_expanded_bytes(&direct);
        let lc = aws_lc_rs::kem::DecapsulationKey::new(&aws_lc_rs::kem::ML_KEM_768, &dk).unwrap();
        g.bench_function(AWS_LC, |b| {
            b.iter_custom(|n| {
                time(n, || {
                    drop(black_box(lc.decapsulate(ct.as_slice().into()).unwrap()))
                })
            })
        });
    }
    g.bench_function(super::THROUGH, |b| {
        b.iter_custom(|n| timed(t, n, || [decapsulate(&mut ct, &mut attrs)]))
    });
    g.finish();
    #[cfg(feature = "aws-lc")]
    aws_lc_ml_dsa(c);
}

#[cfg(feature = "aws-lc")]
const AWS_LC: &str = "aws-lc-rs directly";

/// ML-DSA-65 on aws-lc-rs (hedged signing, empty context: all it offers).
#[cfg(feature = "aws-lc")]
fn aws_lc_ml_dsa(c: &mut Criterion) {
    use aws_lc_rs::signature::{
        KeyPair, ML_DSA_65, ML_DSA_65_SIGNING, PqdsaKeyPair, UnparsedPublicKey,
    };
    let key = PqdsaKeyPair::from_seed(&ML_DSA_65_SIGNING, &[42; 32]).unwrap();
    let data = [0x5au8; 32];
    let mut sig = vec![0u8; 3309];
    let n = key.sign(&data, &mut sig).unwrap();
    let public = UnparsedPublicKey::new(&ML_DSA_65, key.public_key().as_ref().to_vec());
    let mut g = c.benchmark_group("ml-dsa-65-aws-lc");
    g.sample_size(30);
    g.bench_function("sign (hedged)", |b| {
        b.iter(|| key.sign(black_box(&data), &mut sig).unwrap())
    });
    g.bench_function("verify", |b| {
        b.iter(|| public.verify(black_box(&data), &sig[..n]).unwrap())
    });
    g.finish();
}
