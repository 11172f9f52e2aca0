//! Message-based encryption and decryption (base spec 3.0 §5.19 / §5.20)
//! with `CKM_AES_GCM` and `CK_GCM_MESSAGE_PARAMS`, through the raw 3.0
//! function list (`C_GetInterface("PKCS 11", 3.0)`).
//!
//! The tests are grouped by subject in the modules below; this file holds
//! the helpers they share and the `worker` entry point of the second
//! processes (which `--exact worker` must find at the crate root).

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/raw_calls.rs"]
mod raw_calls;
#[path = "../common/raw_message.rs"]
mod raw_message;

mod aead;
mod generated_ivs;
mod multipart;
mod multipart_errors;
mod sign;
mod single_part;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;
use raw_message::*;
use std::collections::HashSet;
use std::ptr::null_mut;

/// The 3.0 function list of the loaded module.
fn list30() -> &'static CK_FUNCTION_LIST_3_0 {
    raw30()
}

fn aes_key(s: &Session, value: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Value(value.to_vec()),
        Attribute::Encrypt(true),
        Attribute::Decrypt(true),
        Attribute::Sensitive(true),
    ])
    .unwrap()
}

fn init(l: &CK_FUNCTION_LIST_3_0, s: &Session, key: ObjectHandle, encrypt: bool) -> CK_RV {
    message_init(l, s, CKM_AES_GCM, key, encrypt)
}

fn params(
    iv: &mut [u8],
    fixed: CK_ULONG,
    generator: CK_ULONG,
    tag: &mut [u8],
) -> CK_GCM_MESSAGE_PARAMS {
    CK_GCM_MESSAGE_PARAMS {
        pIv: iv.as_mut_ptr(),
        ulIvLen: iv.len() as CK_ULONG,
        ulIvFixedBits: fixed,
        ivGenerator: generator,
        pTag: tag.as_mut_ptr(),
        ulTagBits: tag.len() as CK_ULONG * 8,
    }
}

const KEY: &str = "feffe9928665731c6d6a8f9467308308";
const IV: &str = "cafebabefacedbaddecaf888";
const P3: &str = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
const C3: &str = "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985";
const T3: &str = "4d5c2af327cd64a62cf35abd2ba6fab4";
const A4: &str = "feedfacedeadbeeffeedfacedeadbeefabaddad2";
const T4: &str = "5bc94fbc3221a5db94fae95ae7121a47";

/// The fixed field of the IVs below (SP 800-38D §8.2.1): constant for the key.
const PREFIX: [u8; 4] = [0xa5, 0x5a, 0x0f, 0xf0];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One message-encryption operation on `key` (its own init and final)
/// encrypting `n` messages with generated counter IVs — single-part and
/// multi-part, `CKG_GENERATE_COUNTER` and `CKG_GENERATE_COUNTER_XOR` over
/// a constant base — each decrypted again by a message-decryption
/// operation. Returns the IVs.
fn counter_messages(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    key: ObjectHandle,
    n: u32,
) -> Vec<Vec<u8>> {
    assert_eq!(init(l, s, key, true), CKR_OK);
    assert_eq!(init(l, s, key, false), CKR_OK);
    let mut ivs = Vec::new();
    for i in 0..n {
        let plain = [i.to_be_bytes(), (!i).to_be_bytes()].concat();
        let xor = i % 2 == 1;
        let (generator, fill) = if xor {
            // The base the counter is XORed into: the same for every message.
            (CKG_GENERATE_COUNTER_XOR, 0u8)
        } else {
            (CKG_GENERATE_COUNTER, 0xff)
        };
        let mut iv = [fill; 12];
        iv[..4].copy_from_slice(&PREFIX);
        let mut tag = [0u8; 16];
        let mut ct = [0u8; 8];
        if i % 3 == 0 {
            let mut p = params(&mut iv, 32, generator, &mut tag);
            assert_eq!(begin(l, s, true, &mut p, b"ad"), CKR_OK);
            assert_eq!(
                next(l, s, true, Some(&mut p), &plain, Some(&mut ct), true),
                (CKR_OK, 8)
            );
        } else {
            let mut p = params(&mut iv, 32, generator, &mut tag);
            assert_eq!(
                message(l, s, true, &mut p, b"ad", &plain, Some(&mut ct)).0,
                CKR_OK
            );
        }
        assert_eq!(&iv[..4], &PREFIX, "fixed field kept");
        let mut back = [0u8; 8];
        let mut p = params(&mut iv, 32, generator, &mut tag);
        assert_eq!(
            message(l, s, false, &mut p, b"ad", &ct, Some(&mut back)).0,
            CKR_OK
        );
        assert_eq!(back.to_vec(), plain, "the message decrypts with its IV");
        ivs.push(iv.to_vec());
    }
    // SAFETY: no pointers.
    unsafe {
        assert_eq!(l.C_MessageEncryptFinal.unwrap()(s.handle()), CKR_OK);
        assert_eq!(l.C_MessageDecryptFinal.unwrap()(s.handle()), CKR_OK);
    }
    ivs
}

/// In the read-only worker: as `nobody` when run as root (root writes anyway).
fn read_only_worker(label: &str) {
    // SAFETY: plain system calls on this process, before any thread uses
    // the module.
    unsafe {
        if libc::geteuid() == 0 {
            assert_eq!(libc::setgid(65534), 0);
            assert_eq!(libc::setuid(65534), 0);
        }
    }
    let (p, slot) = worker_module(label);
    assert!(p.get_token_info(slot).unwrap().write_protected());
    let s = p.open_ro_session(slot).unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    let key = s
        .find_objects(&[Attribute::Label(b"iv-key".to_vec())])
        .unwrap()[0];
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    for generator in [CKG_GENERATE_COUNTER, CKG_GENERATE_COUNTER_XOR] {
        let mut iv = [0u8; 12];
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 32, generator, &mut tag);
        let mut ct = [0u8; 1];
        assert_eq!(
            message(l, &s, true, &mut p, &[], &[1], Some(&mut ct)).0,
            CKR_TOKEN_WRITE_PROTECTED
        );
        assert_eq!(iv, [0u8; 12], "no IV written");
    }
    let mut iv = [0u8; 12];
    let mut tag = [0u8; 16];
    let mut p = params(&mut iv, 32, CKG_GENERATE_RANDOM, &mut tag);
    let mut ct = [0u8; 1];
    assert_eq!(
        message(l, &s, true, &mut p, &[], &[1], Some(&mut ct)).0,
        CKR_OK
    );
}

/// Entry point of the worker processes (skipped in a normal run): with
/// `IV_WORKER="<label> <count>"`, encrypts `count` messages with counter
/// IVs under the key `iv-key` of the token `<label>` and prints each IV;
/// with `"<label> read-only"`, the read-only checks.
#[test]
#[ignore = "runs only as the second process of the tests above"]
fn worker() {
    let Ok(spec) = std::env::var("IV_WORKER") else {
        return;
    };
    let args: Vec<&str> = spec.split(' ').collect();
    if args[1] == "read-only" {
        read_only_worker(args[0]);
        println!("done");
        return;
    }
    let count: u32 = args[1].parse().unwrap();
    let (p, slot) = worker_module(args[0]);
    let s = p.open_ro_session(slot).unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    let key = s
        .find_objects(&[Attribute::Label(b"iv-key".to_vec())])
        .unwrap()[0];
    let l = list30();
    // Several operations, so the process comes back to the counter.
    let mut ivs = Vec::new();
    while (ivs.len() as u32) < count {
        ivs.extend(counter_messages(
            l,
            &s,
            key,
            (count - ivs.len() as u32).min(70),
        ));
    }
    for iv in ivs {
        println!("iv {}", hex(&iv));
    }
    println!("done");
}
