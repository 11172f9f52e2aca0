//! The DES key's two back ends against each other and against known
//! answers: the schedule `DesKey::new` picks (AWS-LC's in the default build)
//! and the des crate's (`DesKey::with_rust_crypto`, the pure-Rust build's),
//! over random DES, two-key and three-key values (also K1 = K3, weak
//! components and values without parity), ECB and CBC, both directions and
//! many lengths. The known answers (FIPS 81, SP 800-67 Rev. 2, and two-key
//! EDE composed from single DES) pin both, so a fault shared by both fails
//! too.

use super::key::{BLOCK, DesKey, set_parity};
use crate::mechanisms::block_modes::BlockEngine;
use crate::mechanisms::test_util::unhex;
use cryptoki_sys::*;
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

/// The two back ends of one value: (`DesKey::new`'s, the des crate's).
fn both(kt: CK_KEY_TYPE, value: &[u8]) -> [DesKey; 2] {
    [
        DesKey::new(kt, value).unwrap(),
        DesKey::with_rust_crypto(kt, value).unwrap(),
    ]
}

fn blocks(bytes: &[u8]) -> Vec<[u8; BLOCK]> {
    let (b, rest) = bytes.as_chunks::<BLOCK>();
    assert!(rest.is_empty());
    b.to_vec()
}

fn ecb(k: &DesKey, encrypt: bool, data: &[u8]) -> Vec<u8> {
    let mut b = blocks(data);
    if encrypt {
        k.ecb_encrypt(&mut b).unwrap();
    } else {
        k.ecb_decrypt(&mut b).unwrap();
    }
    b.as_flattened().to_vec()
}

/// CBC output ‖ the chaining value left afterwards.
fn cbc(k: &DesKey, encrypt: bool, iv: &[u8], data: &[u8]) -> Vec<u8> {
    let mut iv: [u8; BLOCK] = iv.try_into().unwrap();
    let mut b = blocks(data);
    if encrypt {
        k.cbc_encrypt(&mut iv, &mut b).unwrap();
    } else {
        k.cbc_decrypt(&mut iv, &mut b).unwrap();
    }
    [b.as_flattened(), &iv].concat()
}

/// Key type, key, CBC IV (`None`: ECB), plaintext, ciphertext.
type KnownAnswer<'a> = (CK_KEY_TYPE, &'a str, Option<&'a [u8]>, &'a [u8], Vec<u8>);

const KEY3: &str = "0123456789abcdef23456789abcdef01456789abcdef0123";

/// FIPS 81 Appendix B (ECB) and C (CBC), SP 800-67 Rev. 2's three-key
/// example (ECB), and the three-key CBC vector of `cipher.rs` (OpenSSL's
/// des-ede3-cbc), through both back ends and both directions.
#[test]
fn known_answers_on_both_back_ends() {
    let des = "0123456789abcdef";
    let now = b"Now is the time for all ";
    let iv = unhex("1234567890abcdef");
    let tdea_plain = unhex("54686520717566636b2062726f776e20666f78206a756d70");
    let cases: [KnownAnswer<'_>; 4] = [
        (
            CKK_DES,
            des,
            None,
            now,
            unhex("3fa40e8a984d48156a271787ab8883f9893d51ec4b563b53"),
        ),
        (
            CKK_DES,
            des,
            Some(&iv),
            now,
            unhex("e5c7cdde872bf27c43e934008c389c0f683788499a7c05f6"),
        ),
        (
            CKK_DES3,
            KEY3,
            None,
            &tdea_plain,
            unhex("a826fd8ce53b855fcce21c8112256fe668d5c05dd9b6b900"),
        ),
        (
            CKK_DES3,
            KEY3,
            Some(&iv),
            &[tdea_plain.as_slice(), &[1, 2, 6, 6, 6, 6, 6, 6]].concat(),
            unhex("38413d4ba2325cf1141f707471ac2ced57db530f0123b5ace7e14579e7692bc1"),
        ),
    ];
    for (kt, key, iv, plain, ct) in cases {
        for k in both(kt, &unhex(key)) {
            let what = (kt, iv.is_some(), k.in_aws_lc());
            match iv {
                None => {
                    assert_eq!(ecb(&k, true, plain), ct, "{what:?}");
                    assert_eq!(ecb(&k, false, &ct), plain, "{what:?}");
                }
                Some(iv) => {
                    let last = &ct[ct.len() - BLOCK..];
                    assert_eq!(cbc(&k, true, iv, plain), [&ct, last].concat(), "{what:?}");
                    assert_eq!(cbc(&k, false, iv, &ct), [plain, last].concat(), "{what:?}");
                }
            }
        }
    }
}

/// Two-key EDE is E_K1 ∘ D_K2 ∘ E_K1 of single DES (SP 800-67 Rev. 2 §3.1,
/// keying option 2), the same as the three-key cipher of K1 ‖ K2 ‖ K1.
#[test]
fn two_key_ede_is_composed_single_des() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    for _ in 0..50 {
        let mut v = [0u8; 16];
        rng.fill_bytes(&mut v);
        let mut data = [0u8; 4 * BLOCK];
        rng.fill_bytes(&mut data);
        let [k1, k2] = [&v[..8], &v[8..]].map(|c| DesKey::with_rust_crypto(CKK_DES, c).unwrap());
        let composed = ecb(&k1, true, &ecb(&k2, false, &ecb(&k1, true, &data)));
        let k1k2k1 = [&v[..], &v[..8]].concat();
        for k in both(CKK_DES2, &v).iter().chain(&both(CKK_DES3, &k1k2k1)) {
            assert_eq!(ecb(k, true, &data), composed, "{v:02x?} {}", k.in_aws_lc());
        }
    }
}

/// A random value of `kt`; `shape` 1 gives it odd parity, 2 also makes a
/// three-key value K1 ‖ K2 ‖ K1.
fn random_value(rng: &mut ChaCha20Rng, kt: CK_KEY_TYPE, shape: u32) -> Vec<u8> {
    let len = super::key::key_len(kt).unwrap();
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    if shape >= 1 {
        set_parity(&mut v);
    }
    if shape == 2 && len == 24 {
        v.copy_within(..8, 16);
    }
    v
}

/// Random values, data, IVs and lengths (0 to 40 blocks): the picked back
/// end computes what the des crate computes, block and pass by pass, and
/// decryption undoes encryption.
#[test]
fn back_ends_agree_on_random_keys_and_lengths() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x3de5);
    let mut in_aws_lc = 0;
    for round in 0..300u32 {
        let kt = [CKK_DES, CKK_DES2, CKK_DES3][round as usize % 3];
        let value = random_value(&mut rng, kt, round / 3 % 3);
        let [fast, reference] = both(kt, &value);
        in_aws_lc += fast.in_aws_lc() as u32;
        let n = (rng.next_u32() % 41) as usize;
        let mut data = vec![0u8; n * BLOCK];
        rng.fill_bytes(&mut data);
        let mut iv = [0u8; BLOCK];
        rng.fill_bytes(&mut iv);
        let what = format!("{kt:#x} {value:02x?} {n} blocks");
        for encrypt in [true, false] {
            let e = ecb(&fast, encrypt, &data);
            assert_eq!(e, ecb(&reference, encrypt, &data), "ecb {encrypt} {what}");
            assert_eq!(ecb(&fast, !encrypt, &e), data, "ecb round trip {what}");
            let c = cbc(&fast, encrypt, &iv, &data);
            assert_eq!(
                c,
                cbc(&reference, encrypt, &iv, &data),
                "cbc {encrypt} {what}"
            );
            let back = cbc(&fast, !encrypt, &iv, &c[..n * BLOCK]);
            assert_eq!(back[..n * BLOCK], data, "cbc round trip {what}");
        }
        // One block at a time, and CBC split into two passes.
        let mut b = iv;
        fast.encrypt_block(&mut b).unwrap();
        assert_eq!(b.to_vec(), ecb(&reference, true, &iv), "{what}");
        fast.decrypt_block(&mut b).unwrap();
        assert_eq!(b, iv, "{what}");
        let cut = n / 2 * BLOCK;
        let mut chain = iv;
        let mut split = blocks(&data);
        let (a, rest) = split.split_at_mut(cut / BLOCK);
        fast.cbc_encrypt(&mut chain, a).unwrap();
        fast.cbc_encrypt(&mut chain, rest).unwrap();
        let whole = cbc(&reference, true, &iv, &data);
        assert_eq!(
            [split.as_flattened(), &chain].concat(),
            whole,
            "split {what}"
        );
    }
    // Every value above runs in AWS-LC in the default build (random values
    // have no weak component; K1 = K3 runs as two-key EDE).
    let expected = if cfg!(feature = "aws-lc") { 300 } else { 0 };
    assert_eq!(in_aws_lc, expected);
}

/// Values AWS-LC refuses (a weak or semi-weak component, equal components)
/// keep the des crate's schedule and compute the same as in the pure-Rust
/// build; the token refuses such values at creation (`check_value`), so
/// only a value stored before that check reaches here.
#[test]
fn values_aws_lc_refuses_fall_back_to_the_des_crate() {
    let weak = unhex("0101010101010101");
    let semi_weak = unhex("01fe01fe01fe01fe");
    let good = unhex(KEY3);
    let cases = [
        (CKK_DES, weak.clone()),
        (CKK_DES, semi_weak.clone()),
        (CKK_DES2, [&good[..8], &good[..8]].concat()),
        (CKK_DES3, [&weak[..], &good[8..]].concat()),
        (CKK_DES3, [&good[..16], &good[8..16]].concat()),
    ];
    let data = unhex("54686520717566636b2062726f776e20666f78206a756d70");
    for (kt, value) in cases {
        let [picked, reference] = both(kt, &value);
        assert!(!picked.in_aws_lc(), "{value:02x?}");
        assert!(!reference.in_aws_lc());
        assert_eq!(ecb(&picked, true, &data), ecb(&reference, true, &data));
    }
    // A weak value with its parity bits cleared is weak to the token
    // (`check_value`) but not to AWS-LC's table: it runs there, the same.
    let [picked, reference] = both(CKK_DES, &[0; 8]);
    assert_eq!(picked.in_aws_lc(), cfg!(feature = "aws-lc"));
    assert_eq!(ecb(&picked, true, &data), ecb(&reference, true, &data));
    // The all-zero key on the zero block (a classic DES known answer).
    assert_eq!(ecb(&picked, true, &[0; 8]), unhex("8ca64de9c1b123a7"));
}
