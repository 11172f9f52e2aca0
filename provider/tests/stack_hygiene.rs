//! Stack hygiene keeps its promise (docs/SECURITY.md, "Memory hygiene"):
//! what an exported call leaves on its thread's stack is overwritten before
//! the call returns (or, for the data calls, before the thread's next other
//! call runs), however deep the call went. Each case paints the stack below
//! this frame, makes the call, and surveys what is left: the lowest bytes the
//! call changed must be the start of the zeroed block the module's wipe left,
//! never bytes the call wrote below it. A call that reaches deeper than the
//! stack its guard wipes fails here with its depth — the measurement the
//! wipe lengths in `provider/src/hygiene.rs` rest on (run it against a
//! module built with tiny wipe lengths to read each call's true depth;
//! `STACK_HYGIENE_DUMP=1` prints where non-zero bytes lie above a failing
//! bottom).

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::elliptic_curve::{EcKdf, Ecdh1DeriveParams};
use cryptoki::mechanism::rsa::{PkcsMgfType, PkcsPssParams};
use cryptoki::object::{Attribute, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;

/// Bytes of stack painted and surveyed below the test's frame: more than
/// the deepest wipe (192 KiB), so a call reaching past it shows.
const PROBE: usize = 320 * 1024;
/// The paint.
const PAINT: u8 = 0xa5;
/// Painted beyond what the survey reads: the survey's frame may sit lower
/// than the painter's.
const SLACK: usize = 16 * 1024;
/// A run of zeros at least this long at the bottom of what changed is the
/// module's wipe (what a call itself writes is not that uniform).
const WIPE_RUN: usize = 2048;
/// Bytes below the wipe's zeros that its own callees may have used (in a
/// test build, two frames: about 630 bytes).
const WIPE_TAIL: usize = 1024;

/// Fills the `PROBE` (and `SLACK`) bytes below this function's stack pointer (where the
/// call's frames will go: nothing lives there) with `PAINT`.
#[inline(never)]
fn paint() {
    // SAFETY: writes only below the stack pointer, inside this thread's
    // 16 MiB stack, where no frame lives; DF is clear (SysV ABI).
    unsafe {
        std::arch::asm!(
            "lea rdi, [rsp - {n}]",
            "mov rcx, {n}",
            "mov al, {paint}",
            "rep stosb",
            n = const PROBE + SLACK,
            paint = const PAINT,
            out("rdi") _, out("rcx") _, out("al") _,
            options(nostack, preserves_flags),
        );
    }
}

/// This function's caller's stack pointer.
#[inline(always)]
fn stack_pointer() -> usize {
    let sp: usize;
    // SAFETY: reads a register.
    unsafe {
        std::arch::asm!("mov {sp}, rsp", sp = out(reg) sp, options(nomem, nostack, preserves_flags));
    }
    sp
}

/// The byte at `addr`, a stack address no Rust value owns any more (the
/// load is opaque to the compiler).
#[inline(always)]
fn byte_at(addr: usize) -> u8 {
    let v: u8;
    // SAFETY: `addr` lies inside this thread's 16 MiB stack mapping, at
    // most `PROBE` bytes below the survey's stack pointer; nothing written.
    unsafe {
        std::arch::asm!(
            "mov {v}, byte ptr [{a}]",
            a = in(reg) addr,
            v = out(reg_byte) v,
            options(nostack, readonly, preserves_flags),
        );
    }
    v
}

/// What a call left below the caller's frame.
#[derive(Debug)]
struct Survey {
    /// Bytes from the top of the probe down to the lowest changed byte.
    depth: usize,
    /// Whether the lowest changed bytes are a run of zeros (a wipe).
    wiped_at_bottom: bool,
}

/// Surveys the `PROBE` bytes below this function's stack pointer, where
/// [`paint`] painted and the call ran. Addresses are taken from the stack
/// pointer once: helper frames (closures are calls in test builds) must not
/// move the origin.
#[inline(never)]
fn survey() -> Survey {
    let sp = stack_pointer();
    let at = |offset: usize| byte_at(sp - offset);
    // From the bottom up: the first byte no longer painted.
    let mut offset = PROBE;
    while offset > 256 && at(offset) == PAINT {
        offset -= 1;
    }
    // The wipe's zeros start within a few bytes of the bottom: below the
    // zeroed array lie only the frames of the wipe's own callees (a return
    // address, saved registers).
    let zeros_from = |start: usize| {
        (0..WIPE_RUN)
            .take_while(|&j| start > j && at(start - j) == 0)
            .count()
    };
    let wiped_at_bottom = (0..WIPE_TAIL).any(|k| offset > k && zeros_from(offset - k) == WIPE_RUN);
    if !wiped_at_bottom && std::env::var_os("STACK_HYGIENE_DUMP").is_some() {
        let nz: Vec<usize> = (0..offset.min(4096))
            .filter(|&k| at(offset - k) != 0)
            .collect();
        eprintln!("{offset}: non-zero at {nz:?}");
    }
    Survey {
        depth: offset,
        wiped_at_bottom,
    }
}

/// Paints, runs `call`, surveys.
#[inline(never)]
fn probe<R>(call: impl FnOnce() -> R) -> Survey {
    paint();
    std::hint::black_box(call());
    survey()
}

fn ecdh(s: &Session, private: ObjectHandle, public: &[u8]) -> ObjectHandle {
    s.derive_key(
        &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), public)),
        private,
        &[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::ValueLen(32.into()),
        ],
    )
    .unwrap()
}

fn ec_pair(s: &Session, mech: Mechanism<'_>, params: &[u8]) -> (ObjectHandle, ObjectHandle) {
    s.generate_key_pair(
        &mech,
        &[Attribute::EcParams(params.to_vec())],
        &[if matches!(mech, Mechanism::EccEdwardsKeyPairGen) {
            Attribute::Sign(true)
        } else {
            Attribute::Derive(true)
        }],
    )
    .unwrap()
}

fn rsa_pair(s: &Session, bits: u64, exponent: &[u8]) -> (ObjectHandle, ObjectHandle) {
    s.generate_key_pair(
        &Mechanism::RsaPkcsKeyPairGen,
        &[
            Attribute::ModulusBits(bits.into()),
            Attribute::PublicExponent(exponent.to_vec()),
        ],
        &[Attribute::Sign(true), Attribute::Extractable(true)],
    )
    .unwrap()
}

const P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const P521: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23];
const K256: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a];
const X25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x6e];
const ED25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];

/// Every kind of call that handles a secret, on a thread of its own with
/// room below it: the bottom of what each left is the wipe's zeros.
#[test]
fn no_call_leaves_its_stack_below_the_wipe() {
    let f = Fixture::new();
    let slot = f.token("stack");
    let mut results: Vec<(String, Survey)> = Vec::new();
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(16 << 20)
            .spawn_scoped(scope, || {
                let s = f.p().open_rw_session(slot).unwrap();
                let mut rec = |name: &str, sv: Survey| results.push((name.to_string(), sv));
                rec(
                    "C_Login",
                    probe(|| s.login(cryptoki::session::UserType::User, Some(&pin("1234")))),
                );
                for (name, params) in [("p256", P256), ("p521", P521), ("secp256k1", K256)] {
                    rec(
                        &format!("C_GenerateKeyPair {name}"),
                        probe(|| ec_pair(&s, Mechanism::EccKeyPairGen, params)),
                    );
                    let (_, ours) = ec_pair(&s, Mechanism::EccKeyPairGen, params);
                    let (peer, _) = ec_pair(&s, Mechanism::EccKeyPairGen, params);
                    let peer = ec_point(&s, peer);
                    // The first derive parses the key, the second reuses it.
                    for n in ["first", "second"] {
                        rec(
                            &format!("C_DeriveKey ECDH {name} ({n})"),
                            probe(|| ecdh(&s, ours, &peer)),
                        );
                    }
                }
                // Parsing a P-521 key in pure Rust (the public point from
                // the scalar) is the deepest work: on import, and on a key's
                // first use by a data call.
                let scalar = {
                    let mut v = vec![0u8; 66];
                    v[20] = 0x5a;
                    v[65] = 0x17;
                    v
                };
                let import = |sign: bool| {
                    s.create_object(&[
                        Attribute::Class(ObjectClass::PRIVATE_KEY),
                        Attribute::KeyType(KeyType::EC),
                        Attribute::EcParams(P521.to_vec()),
                        Attribute::Value(scalar.clone()),
                        if sign {
                            Attribute::Sign(true)
                        } else {
                            Attribute::Derive(true)
                        },
                    ])
                    .unwrap()
                };
                rec("C_CreateObject p521", probe(|| import(true)));
                let fresh = import(true);
                rec(
                    "C_Sign p521 (first use), then C_GetSessionInfo",
                    probe(|| {
                        s.sign(&Mechanism::Ecdsa, fresh, &[9u8; 64]).unwrap();
                        s.get_session_info().unwrap()
                    }),
                );
                rec(
                    "C_GenerateKeyPair x25519",
                    probe(|| ec_pair(&s, Mechanism::EccMontgomeryKeyPairGen, X25519)),
                );
                let (_, ours) = ec_pair(&s, Mechanism::EccMontgomeryKeyPairGen, X25519);
                let (peer, _) = ec_pair(&s, Mechanism::EccMontgomeryKeyPairGen, X25519);
                let peer = ec_point(&s, peer);
                rec("C_DeriveKey X25519", probe(|| ecdh(&s, ours, &peer)));
                let (_, ed) = ec_pair(&s, Mechanism::EccEdwardsKeyPairGen, ED25519);
                rec(
                    "C_GenerateKeyPair ed25519",
                    probe(|| ec_pair(&s, Mechanism::EccEdwardsKeyPairGen, ED25519)),
                );
                // aws-lc's sizes and exponent, and the rsa crate's (e = 3).
                for (bits, e) in [(2048, &[1u8, 0, 1][..]), (2048, &[3][..])] {
                    rec(
                        &format!("C_GenerateKeyPair rsa{bits} e={e:?}"),
                        probe(|| rsa_pair(&s, bits, e)),
                    );
                }
                let (_, rsa) = rsa_pair(&s, 2048, &[1, 0, 1]);
                let aes = s
                    .generate_key(
                        &Mechanism::AesKeyGen,
                        &[
                            Attribute::ValueLen(32.into()),
                            Attribute::Wrap(true),
                            Attribute::Unwrap(true),
                            // Wrap-only: the token's wrap separation.
                            Attribute::Decrypt(false),
                            Attribute::Encrypt(false),
                        ],
                    )
                    .unwrap();
                let wrapped = s.wrap_key(&Mechanism::AesKeyWrapPad, aes, rsa).unwrap();
                rec(
                    "C_UnwrapKey rsa2048",
                    probe(|| {
                        s.unwrap_key(
                            &Mechanism::AesKeyWrapPad,
                            aes,
                            &wrapped,
                            &[
                                Attribute::Class(ObjectClass::PRIVATE_KEY),
                                Attribute::KeyType(KeyType::RSA),
                                Attribute::Sign(true),
                            ],
                        )
                        .unwrap()
                    }),
                );
                // Data calls leave their stack to the thread's next other
                // call, which wipes it before it runs.
                let pss = Mechanism::Sha256RsaPkcsPss(PkcsPssParams {
                    hash_alg: cryptoki::mechanism::MechanismType::SHA256,
                    mgf: PkcsMgfType::MGF1_SHA256,
                    s_len: 32.into(),
                });
                let data = [7u8; 64];
                rec(
                    "C_Sign rsa2048 PSS, then C_GetSessionInfo",
                    probe(|| {
                        s.sign(&pss, rsa, &data).unwrap();
                        s.get_session_info().unwrap()
                    }),
                );
                rec(
                    "C_Sign ed25519, then C_GetSessionInfo",
                    probe(|| {
                        s.sign(
                            &Mechanism::Eddsa(cryptoki::mechanism::eddsa::EddsaParams::new(
                                cryptoki::mechanism::eddsa::EddsaSignatureScheme::Pure,
                            )),
                            ed,
                            &data,
                        )
                        .unwrap();
                        s.get_session_info().unwrap()
                    }),
                );
                // ML-DSA-87 (the largest set): generation, import from the
                // seed, a first signature (the key is expanded from its seed
                // then) and unwrapping.
                let ml_dsa_87 = || {
                    s.generate_key_pair(
                        &Mechanism::MlDsaKeyPairGen,
                        &[Attribute::ParameterSet(
                            cryptoki::object::MlDsaParameterSetType::ML_DSA_87.into(),
                        )],
                        &[Attribute::Sign(true), Attribute::Extractable(true)],
                    )
                    .unwrap()
                };
                rec("C_GenerateKeyPair ml-dsa-87", probe(ml_dsa_87));
                let ml_dsa_import = || {
                    s.create_object(&[
                        Attribute::Class(ObjectClass::PRIVATE_KEY),
                        Attribute::KeyType(KeyType::ML_DSA),
                        Attribute::ParameterSet(
                            cryptoki::object::MlDsaParameterSetType::ML_DSA_87.into(),
                        ),
                        Attribute::Seed(vec![0x5a; 32]),
                        Attribute::Sign(true),
                    ])
                    .unwrap()
                };
                rec("C_CreateObject ml-dsa-87", probe(ml_dsa_import));
                // The expanded key alone is decoded and checked on import.
                let readable = s
                    .create_object(&[
                        Attribute::Class(ObjectClass::PRIVATE_KEY),
                        Attribute::KeyType(KeyType::ML_DSA),
                        Attribute::ParameterSet(
                            cryptoki::object::MlDsaParameterSetType::ML_DSA_87.into(),
                        ),
                        Attribute::Seed(vec![0x33; 32]),
                        Attribute::Sensitive(false),
                        Attribute::Extractable(true),
                    ])
                    .unwrap();
                let expanded = match s
                    .get_attributes(readable, &[cryptoki::object::AttributeType::Value])
                    .unwrap()
                    .pop()
                {
                    Some(Attribute::Value(v)) => v,
                    other => panic!("{other:?}"),
                };
                rec(
                    "C_CreateObject ml-dsa-87 (expanded key)",
                    probe(|| {
                        s.create_object(&[
                            Attribute::Class(ObjectClass::PRIVATE_KEY),
                            Attribute::KeyType(KeyType::ML_DSA),
                            Attribute::ParameterSet(
                                cryptoki::object::MlDsaParameterSetType::ML_DSA_87.into(),
                            ),
                            Attribute::Value(expanded.clone()),
                        ])
                        .unwrap()
                    }),
                );
                let fresh = ml_dsa_import();
                let ml_dsa =
                    Mechanism::MlDsa(cryptoki::mechanism::dsa::SignAdditionalContext::new(
                        cryptoki::mechanism::dsa::HedgeType::Preferred,
                        None,
                    ));
                rec(
                    "C_Sign ml-dsa-87 (first use), then C_GetSessionInfo",
                    probe(|| {
                        s.sign(&ml_dsa, fresh, &data).unwrap();
                        s.get_session_info().unwrap()
                    }),
                );
                let (_, extractable) = ml_dsa_87();
                let wrapped = s
                    .wrap_key(&Mechanism::AesKeyWrapPad, aes, extractable)
                    .unwrap();
                rec(
                    "C_UnwrapKey ml-dsa-87",
                    probe(|| {
                        s.unwrap_key(
                            &Mechanism::AesKeyWrapPad,
                            aes,
                            &wrapped,
                            &[
                                Attribute::Class(ObjectClass::PRIVATE_KEY),
                                Attribute::KeyType(KeyType::ML_DSA),
                                Attribute::Sign(true),
                            ],
                        )
                        .unwrap()
                    }),
                );
                // ML-KEM-1024 (the largest set): generation, import from the
                // seed, and both KEM calls (the first decapsulation parses
                // the key).
                let kem_set = || {
                    Attribute::ParameterSet(
                        cryptoki::object::MlKemParameterSetType::ML_KEM_1024.into(),
                    )
                };
                let (kem_public, _) = {
                    let mut pair = None;
                    rec(
                        "C_GenerateKeyPair ml-kem-1024",
                        probe(|| {
                            pair = Some(
                                s.generate_key_pair(&Mechanism::MlKemKeyPairGen, &[kem_set()], &[])
                                    .unwrap(),
                            )
                        }),
                    );
                    pair.unwrap()
                };
                let kem_import = || {
                    s.create_object(&[
                        Attribute::Class(ObjectClass::PRIVATE_KEY),
                        Attribute::KeyType(KeyType::ML_KEM),
                        kem_set(),
                        Attribute::Seed(vec![0x6b; 64]),
                    ])
                    .unwrap()
                };
                rec("C_CreateObject ml-kem-1024", probe(kem_import));
                let kem_private = kem_import();
                let secret = [
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(KeyType::AES),
                ];
                let mut ct = Vec::new();
                rec(
                    "C_EncapsulateKey ml-kem-1024",
                    probe(|| {
                        ct = s
                            .encapsulate_key(&Mechanism::MlKem, kem_public, &secret)
                            .unwrap()
                            .0
                    }),
                );
                rec(
                    "C_DecapsulateKey ml-kem-1024 (first use)",
                    probe(|| {
                        s.decapsulate_key(&Mechanism::MlKem, kem_private, &secret, &ct)
                            .unwrap()
                    }),
                );
                // SLH-DSA-SHAKE-256f (the largest signature) and -SHA2-256s
                // (the deepest trees): generation, import (PK.root is
                // recomputed), a signature and unwrapping.
                for set in [
                    cryptoki::object::SlhDsaParameterSetType::SHAKE_256F,
                    cryptoki::object::SlhDsaParameterSetType::SHA2_256S,
                ] {
                    let pair = || {
                        s.generate_key_pair(
                            &Mechanism::SlhDsaKeyPairGen,
                            &[Attribute::ParameterSet(set.into())],
                            &[
                                Attribute::Sign(true),
                                Attribute::Sensitive(false),
                                Attribute::Extractable(true),
                            ],
                        )
                        .unwrap()
                    };
                    rec(&format!("C_GenerateKeyPair slh-dsa {set}"), probe(pair));
                    let (_, readable) = pair();
                    let value = match s
                        .get_attributes(readable, &[cryptoki::object::AttributeType::Value])
                        .unwrap()
                        .pop()
                    {
                        Some(Attribute::Value(v)) => v,
                        other => panic!("{other:?}"),
                    };
                    let import = || {
                        s.create_object(&[
                            Attribute::Class(ObjectClass::PRIVATE_KEY),
                            Attribute::KeyType(KeyType::SLH_DSA),
                            Attribute::ParameterSet(set.into()),
                            Attribute::Value(value.clone()),
                            Attribute::Sign(true),
                        ])
                        .unwrap()
                    };
                    rec(&format!("C_CreateObject slh-dsa {set}"), probe(import));
                    let fresh = import();
                    let slh_dsa =
                        Mechanism::SlhDsa(cryptoki::mechanism::dsa::SignAdditionalContext::new(
                            cryptoki::mechanism::dsa::HedgeType::Preferred,
                            None,
                        ));
                    rec(
                        &format!("C_Sign slh-dsa {set}, then C_GetSessionInfo"),
                        probe(|| {
                            s.sign(&slh_dsa, fresh, &data).unwrap();
                            s.get_session_info().unwrap()
                        }),
                    );
                    let wrapped = s
                        .wrap_key(&Mechanism::AesKeyWrapPad, aes, readable)
                        .unwrap();
                    rec(
                        &format!("C_UnwrapKey slh-dsa {set}"),
                        probe(|| {
                            s.unwrap_key(
                                &Mechanism::AesKeyWrapPad,
                                aes,
                                &wrapped,
                                &[
                                    Attribute::Class(ObjectClass::PRIVATE_KEY),
                                    Attribute::KeyType(KeyType::SLH_DSA),
                                    Attribute::Sign(true),
                                ],
                            )
                            .unwrap()
                        }),
                    );
                }
                rec("C_Logout", probe(|| s.logout()));
            })
            .unwrap();
    });
    let report: Vec<String> = results
        .iter()
        .map(|(name, sv)| {
            format!(
                "{name}: {} KiB, wiped at the bottom: {}",
                sv.depth / 1024,
                sv.wiped_at_bottom
            )
        })
        .collect();
    eprintln!("{}", report.join("\n"));
    for (name, sv) in &results {
        assert!(
            sv.wiped_at_bottom,
            "{name} left its stack {} KiB deep below the wipe:\n{}",
            sv.depth / 1024,
            report.join("\n")
        );
    }
}
