//! OATH HOTP (`CKM_HOTP_KEY_GEN`, `CKM_HOTP`; RFC 4226) through the C API:
//! the published vectors of `vectors/hotp-rfc4226.txt` (RFC 4226 Appendix
//! D, RFC 6238 Appendix B as HOTP at counter T), the signature layout
//! (`CK_OTP_SIGNATURE_INFO` in the caller's buffer) and its size query, the
//! stored counter (moved before the OTP is returned, persisted for token
//! objects), verification's look-ahead window and replay refusal, the
//! attribute rules of OTP key objects, and a cross-check against python
//! `cryptography`'s HOTP for random keys, counters and lengths.

mod common;
#[path = "common/otp_calls.rs"]
mod otp_calls;
#[path = "common/raw_calls.rs"]
mod raw_calls;

use common::*;
use cryptoki::session::Session;
use cryptoki_sys::*;
use otp_calls::*;
use raw_calls::*;

fn session(f: &Fixture, label: &str) -> Session {
    let slot = f.token(label);
    f.user(slot)
}

/// Every vector through the module: the key created with the vector's
/// length as `CKA_OTP_LENGTH`, the counter given as `CK_OTP_COUNTER`
/// (the key allows it); the OTP signed, and verified at that counter.
#[test]
fn published_vectors_through_the_module() {
    let f = Fixture::new();
    let s = session(&f, "hotp-kat");
    let text = vectors("hotp-rfc4226.txt");
    let mut n = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let v: Vec<&str> = line.split(':').collect();
        let (key, counter, digits, want) = (
            unhex(v[1]),
            v[2].parse::<u64>().unwrap(),
            v[3].parse::<CK_ULONG>().unwrap(),
            v[4],
        );
        let h = hotp_key(
            &s,
            &key,
            CK_OTP_PARAM_OPTIONAL,
            vec![ul(CKA_OTP_LENGTH, digits)],
        )
        .unwrap();
        let at = Some(Otp {
            counter: Some(counter),
            ..Default::default()
        });
        assert_eq!(hotp_sign(&s, h, at).unwrap(), want, "{line}");
        assert_eq!(hotp_verify(&s, h, at, want), CKR_OK, "{line}");
        assert_eq!(counter_of(&s, h), 0, "a given counter is not stored");
        n += 1;
    }
    assert_eq!(n, 48);
}

/// RFC 4226 Appendix D with the stored counter: ten signatures in a row
/// give the ten values, the counter moving one step each.
#[test]
fn the_stored_counter_walks_appendix_d() {
    let f = Fixture::new();
    let s = session(&f, "hotp-walk");
    let h = hotp_key(&s, RFC4226_KEY, CK_OTP_PARAM_IGNORED, vec![]).unwrap();
    assert_eq!(counter_of(&s, h), 0);
    for (c, want) in RFC4226_OTPS.iter().enumerate() {
        assert_eq!(hotp_sign(&s, h, None).unwrap(), *want);
        assert_eq!(counter_of(&s, h), c as u64 + 1);
    }
}

/// The size query and a short buffer keep the operation and move no
/// counter; the output is the structure and the digits; non-empty data
/// and the multi-part calls are refused.
#[test]
fn size_query_and_short_buffer() {
    let f = Fixture::new();
    let s = session(&f, "hotp-size");
    let h = hotp_key(&s, RFC4226_KEY, CK_OTP_PARAM_IGNORED, vec![]).unwrap();
    assert_eq!(hotp_sign_init(&s, h, None), CKR_OK);
    let need = size_of::<CK_OTP_SIGNATURE_INFO>() + size_of::<CK_OTP_PARAM>() + 6;
    assert_eq!(raw_sign(&s, None), (CKR_OK, need as CK_ULONG));
    let mut short = vec![0u8; need - 1];
    assert_eq!(
        raw_sign(&s, Some(&mut short)),
        (CKR_BUFFER_TOO_SMALL, need as CK_ULONG)
    );
    assert_eq!(counter_of(&s, h), 0);
    let mut buf = vec![0u8; need];
    let (rv, n) = raw_sign(&s, Some(&mut buf));
    assert_eq!(rv, CKR_OK);
    assert_eq!(otp_value(&buf, n as usize), "755224");
    assert_eq!(counter_of(&s, h), 1);
    assert_eq!(raw_sign(&s, None).0, CKR_OPERATION_NOT_INITIALIZED);

    // Data must be empty (nothing moves); no multi-part signing.
    assert_eq!(hotp_sign_init(&s, h, None), CKR_OK);
    let mut data = *b"x";
    let mut len = buf.len() as CK_ULONG;
    // SAFETY: valid session and buffers.
    let rv = unsafe {
        raw().C_Sign.unwrap()(s.handle(), data.as_mut_ptr(), 1, buf.as_mut_ptr(), &mut len)
    };
    assert_eq!(rv, CKR_DATA_LEN_RANGE);
    assert_eq!(counter_of(&s, h), 1);
    assert_eq!(hotp_sign_init(&s, h, None), CKR_OK);
    // SAFETY: valid session; empty input.
    let rv = unsafe { raw().C_SignUpdate.unwrap()(s.handle(), std::ptr::null_mut(), 0) };
    assert_eq!(rv, CKR_FUNCTION_NOT_SUPPORTED);
    assert_eq!(hotp_sign(&s, h, None).unwrap(), "287082");
}

/// Verification: bare digits; a match within the look-ahead window (5)
/// stores the matched counter + 1, so neither that OTP nor an earlier one
/// verifies again; a mismatch moves nothing; wrong lengths are
/// `CKR_SIGNATURE_LEN_RANGE`.
#[test]
fn verify_window_and_replay() {
    let f = Fixture::new();
    let s = session(&f, "hotp-verify");
    let h = hotp_key(&s, RFC4226_KEY, CK_OTP_PARAM_IGNORED, vec![]).unwrap();
    assert_eq!(
        hotp_verify(&s, h, None, RFC4226_OTPS[5]),
        CKR_SIGNATURE_INVALID
    );
    assert_eq!(counter_of(&s, h), 0, "a mismatch moves nothing");
    assert_eq!(hotp_verify(&s, h, None, RFC4226_OTPS[4]), CKR_OK);
    assert_eq!(counter_of(&s, h), 5);
    assert_eq!(
        hotp_verify(&s, h, None, RFC4226_OTPS[4]),
        CKR_SIGNATURE_INVALID,
        "replay"
    );
    assert_eq!(
        hotp_verify(&s, h, None, RFC4226_OTPS[2]),
        CKR_SIGNATURE_INVALID
    );
    assert_eq!(hotp_verify(&s, h, None, RFC4226_OTPS[9]), CKR_OK);
    assert_eq!(counter_of(&s, h), 10);
    assert_eq!(hotp_verify(&s, h, None, "75522"), CKR_SIGNATURE_LEN_RANGE);
    assert_eq!(hotp_verify(&s, h, None, "0755224"), CKR_SIGNATURE_LEN_RANGE);
    // The signature after verification continues from the stored counter.
    let next = hotp_sign(&s, h, None).unwrap();
    let at = Some(Otp {
        counter: Some(10),
        ..Default::default()
    });
    let h2 = hotp_key(&s, RFC4226_KEY, CK_OTP_PARAM_OPTIONAL, vec![]).unwrap();
    assert_eq!(hotp_sign(&s, h2, at).unwrap(), next);
}

/// `C_GenerateKey` makes an OTP key (20 bytes unless asked; 32 and 64
/// too; other lengths refused); a token key's counter survives a restart
/// of the module (it was stored before each OTP was returned).
#[test]
fn generated_token_keys_keep_their_counter() {
    let mut f = Fixture::new();
    let slot = f.token("hotp-gen");
    let s = f.user(slot);
    for (len, ok) in [(None, 20), (Some(32), 32), (Some(64), 64)] {
        let mut t = vec![flag(CKA_TOKEN, false), flag(CKA_SIGN, true)];
        if let Some(l) = len {
            t.push(ul(CKA_VALUE_LEN, l));
        }
        let h = generate(&s, CKM_HOTP_KEY_GEN, t).unwrap();
        assert_eq!(
            attr(&s, h, CKA_CLASS).unwrap(),
            (CKO_OTP_KEY as CK_ULONG).to_ne_bytes()
        );
        assert_eq!(
            attr(&s, h, CKA_VALUE_LEN).unwrap(),
            (ok as CK_ULONG).to_ne_bytes()
        );
        assert_eq!(attr(&s, h, CKA_LOCAL).unwrap(), [1]);
        assert_eq!(counter_of(&s, h), 0);
    }
    for bad in [16, 24, 48, 128] {
        assert_eq!(
            generate(
                &s,
                CKM_HOTP_KEY_GEN,
                vec![flag(CKA_TOKEN, false), ul(CKA_VALUE_LEN, bad)]
            ),
            Err(CKR_ATTRIBUTE_VALUE_INVALID),
            "{bad}"
        );
    }
    let label = b"hotp-token-key".to_vec();
    let h = generate(
        &s,
        CKM_HOTP_KEY_GEN,
        vec![
            flag(CKA_TOKEN, true),
            flag(CKA_SIGN, true),
            flag(CKA_VERIFY, true),
            (CKA_LABEL, label.clone()),
        ],
    )
    .unwrap();
    let first = hotp_sign(&s, h, None).unwrap();
    let second = hotp_sign(&s, h, None).unwrap();
    assert_eq!(counter_of(&s, h), 2);
    drop(s);
    f.restart();
    let s = f.user(slot);
    let found = s
        .find_objects(&[cryptoki::object::Attribute::Label(label)])
        .unwrap();
    assert_eq!(found.len(), 1);
    let h = found[0].handle();
    assert_eq!(counter_of(&s, h), 2, "the counter was stored");
    assert_eq!(hotp_verify(&s, h, None, &first), CKR_SIGNATURE_INVALID);
    assert_eq!(hotp_verify(&s, h, None, &second), CKR_SIGNATURE_INVALID);
    let third = hotp_sign(&s, h, None).unwrap();
    assert_ne!(third, second);
    assert_eq!(counter_of(&s, h), 3);
}

/// `C_GetMechanismInfo`: key sizes in bytes (20 to 64), sign/verify and
/// generate, no message-based or multi-purpose flags.
#[test]
fn mechanism_info() {
    let f = Fixture::new();
    let slot = f.token("hotp-info");
    for (ty, flags) in [
        (CKM_HOTP, CKF_SIGN | CKF_VERIFY),
        (CKM_HOTP_KEY_GEN, CKF_GENERATE),
    ] {
        let mut info = CK_MECHANISM_INFO::default();
        // SAFETY: valid slot and output structure.
        let rv = unsafe { raw().C_GetMechanismInfo.unwrap()(slot.id(), ty, &mut info) };
        assert_eq!(rv, CKR_OK);
        assert_eq!((info.ulMinKeySize, info.ulMaxKeySize), (20, 64));
        assert_eq!(info.flags, flags);
    }
}

/// The attribute rules of OTP key objects (base spec 3.0 §4.12): decimal
/// only, 6 to 8 digits, no user-friendly mode, time/challenge/PIN ignored,
/// an 8-byte counter, keys of 20, 32 or 64 bytes; the counter readable and
/// not settable; identifiers kept; searches by class find the key;
/// copying refused; destroying works.
#[test]
fn attribute_rules() {
    let f = Fixture::new();
    let s = session(&f, "hotp-attrs");
    let k = RFC4226_KEY;
    let bad: Vec<(Vec<A>, CK_RV)> = vec![
        (
            vec![ul(CKA_OTP_FORMAT, CK_OTP_FORMAT_HEXADECIMAL)],
            CKR_ATTRIBUTE_VALUE_INVALID,
        ),
        (vec![ul(CKA_OTP_LENGTH, 5)], CKR_ATTRIBUTE_VALUE_INVALID),
        (vec![ul(CKA_OTP_LENGTH, 9)], CKR_ATTRIBUTE_VALUE_INVALID),
        (
            vec![flag(CKA_OTP_USER_FRIENDLY_MODE, true)],
            CKR_ATTRIBUTE_VALUE_INVALID,
        ),
        (
            vec![ul(CKA_OTP_TIME_REQUIREMENT, CK_OTP_PARAM_OPTIONAL)],
            CKR_ATTRIBUTE_VALUE_INVALID,
        ),
        (
            vec![ul(CKA_OTP_PIN_REQUIREMENT, CK_OTP_PARAM_MANDATORY)],
            CKR_ATTRIBUTE_VALUE_INVALID,
        ),
        (
            vec![ul(CKA_OTP_CHALLENGE_REQUIREMENT, 1)],
            CKR_ATTRIBUTE_VALUE_INVALID,
        ),
        (
            vec![(CKA_OTP_COUNTER, vec![0; 7])],
            CKR_ATTRIBUTE_VALUE_INVALID,
        ),
        (
            vec![(CKA_OTP_TIME, b"20260101000000".to_vec())],
            CKR_ATTRIBUTE_VALUE_INVALID,
        ),
        (vec![flag(CKA_COPYABLE, true)], CKR_TEMPLATE_INCONSISTENT),
        (vec![ul(CKA_VALUE_LEN, 32)], CKR_TEMPLATE_INCONSISTENT),
    ];
    for (more, rv) in bad {
        assert_eq!(
            hotp_key(&s, k, CK_OTP_PARAM_IGNORED, more.clone()),
            Err(rv),
            "{more:?}"
        );
    }
    assert_eq!(hotp_key(&s, k, 3, vec![]), Err(CKR_ATTRIBUTE_VALUE_INVALID));
    for len in [16, 19, 21, 48, 65] {
        assert_eq!(
            hotp_key(&s, &vec![1; len], CK_OTP_PARAM_IGNORED, vec![]),
            Err(CKR_ATTRIBUTE_VALUE_INVALID),
            "{len}"
        );
    }
    let h = hotp_key(
        &s,
        k,
        CK_OTP_PARAM_IGNORED,
        vec![
            (CKA_OTP_COUNTER, 7u64.to_be_bytes().to_vec()),
            (CKA_OTP_USER_IDENTIFIER, b"alice".to_vec()),
            (CKA_OTP_SERVICE_IDENTIFIER, b"vpn".to_vec()),
            flag(CKA_SENSITIVE, true),
        ],
    )
    .unwrap();
    assert_eq!(counter_of(&s, h), 7, "readable on a sensitive key");
    assert_eq!(attr(&s, h, CKA_VALUE), Err(CKR_ATTRIBUTE_SENSITIVE));
    assert_eq!(attr(&s, h, CKA_OTP_USER_IDENTIFIER).unwrap(), b"alice");
    assert_eq!(
        attr(&s, h, CKA_OTP_FORMAT).unwrap(),
        CK_OTP_FORMAT_DECIMAL.to_ne_bytes()
    );
    assert_eq!(attr(&s, h, CKA_OTP_LENGTH).unwrap(), 6u64.to_ne_bytes());
    assert_eq!(attr(&s, h, CKA_ENCRYPT).unwrap(), [0]);
    assert_eq!(hotp_sign(&s, h, None).unwrap(), RFC4226_OTPS[7]);
    // Mechanisms spec "OTP key objects": no CKA_OTP_* attribute carries
    // footnote 8 (modifiable after creation), so C_SetAttributeValue
    // refuses every one, the counter included.
    for a in [
        (CKA_OTP_COUNTER, 0u64.to_be_bytes().to_vec()),
        ul(CKA_OTP_LENGTH, 8),
        ul(CKA_OTP_FORMAT, CK_OTP_FORMAT_DECIMAL),
        flag(CKA_OTP_USER_FRIENDLY_MODE, false),
        ul(CKA_OTP_CHALLENGE_REQUIREMENT, CK_OTP_PARAM_IGNORED),
        ul(CKA_OTP_TIME_REQUIREMENT, CK_OTP_PARAM_IGNORED),
        ul(CKA_OTP_COUNTER_REQUIREMENT, CK_OTP_PARAM_IGNORED),
        ul(CKA_OTP_PIN_REQUIREMENT, CK_OTP_PARAM_IGNORED),
        (CKA_OTP_TIME, vec![]),
        (CKA_OTP_USER_IDENTIFIER, b"mallory".to_vec()),
        (CKA_OTP_SERVICE_IDENTIFIER, b"other".to_vec()),
        (CKA_OTP_SERVICE_LOGO, vec![1, 2, 3]),
        (CKA_OTP_SERVICE_LOGO_TYPE, b"image/png".to_vec()),
    ] {
        let ty = a.0;
        assert_eq!(set_attr(&s, h, a), CKR_ATTRIBUTE_READ_ONLY, "{ty:#x}");
    }
    assert_eq!(set_attr(&s, h, (CKA_LABEL, b"renamed".to_vec())), CKR_OK);
    assert_eq!(counter_of(&s, h), 8);
    // Found by class; not copyable; destroyable.
    let found = s
        .find_objects(&[cryptoki::object::Attribute::Class(
            cryptoki::object::ObjectClass::OTP_KEY,
        )])
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].handle(), h);
    let mut none: Vec<CK_ATTRIBUTE> = Vec::new();
    let mut copy = 0;
    // SAFETY: valid session, empty template.
    let rv = unsafe { raw().C_CopyObject.unwrap()(s.handle(), h, none.as_mut_ptr(), 0, &mut copy) };
    assert_eq!(rv, CKR_ACTION_PROHIBITED);
    // SAFETY: valid session and handle.
    assert_eq!(
        unsafe { raw().C_DestroyObject.unwrap()(s.handle(), h) },
        CKR_OK
    );
    assert_eq!(hotp_sign_init(&s, h, None), CKR_KEY_HANDLE_INVALID);
}

/// `CK_OTP_PARAMS`: a counter only where the key's requirement allows
/// it, required where it is mandatory; output length 6 to 8 overrides
/// `CKA_OTP_LENGTH`; unsupported flags refused.
#[test]
fn mechanism_parameters() {
    let f = Fixture::new();
    let s = session(&f, "hotp-params");
    let ignored = hotp_key(&s, RFC4226_KEY, CK_OTP_PARAM_IGNORED, vec![]).unwrap();
    let mandatory = hotp_key(&s, RFC4226_KEY, CK_OTP_PARAM_MANDATORY, vec![]).unwrap();
    let given = Some(Otp {
        counter: Some(3),
        ..Default::default()
    });
    assert_eq!(
        hotp_sign_init(&s, ignored, given),
        CKR_MECHANISM_PARAM_INVALID
    );
    assert_eq!(
        hotp_sign_init(&s, mandatory, None),
        CKR_MECHANISM_PARAM_INVALID
    );
    assert_eq!(hotp_sign(&s, mandatory, given).unwrap(), RFC4226_OTPS[3]);
    let eight = Some(Otp {
        length: Some(8),
        ..Default::default()
    });
    assert_eq!(hotp_sign(&s, ignored, eight).unwrap(), "84755224");
    assert_eq!(
        hotp_verify(&s, ignored, eight, "41094287082"),
        CKR_SIGNATURE_LEN_RANGE
    );
    for flags in [CKF_NEXT_OTP, CKF_EXCLUDE_COUNTER, CKF_USER_FRIENDLY_OTP] {
        let p = Some(Otp {
            flags: Some(flags),
            ..Default::default()
        });
        assert_eq!(hotp_sign_init(&s, ignored, p), CKR_MECHANISM_PARAM_INVALID);
    }
    let p = Some(Otp {
        flags: Some(CKF_EXCLUDE_TIME | CKF_EXCLUDE_PIN | CKF_EXCLUDE_CHALLENGE),
        ..Default::default()
    });
    assert_eq!(hotp_sign(&s, ignored, p).unwrap(), RFC4226_OTPS[1]);
    // A counter of the wrong size, and a malformed parameter block.
    let mut short = [0u8; 4];
    let mut list = [CK_OTP_PARAM {
        type_: CK_OTP_COUNTER,
        pValue: short.as_mut_ptr().cast(),
        ulValueLen: 4,
    }];
    let mut params = CK_OTP_PARAMS {
        pParams: list.as_mut_ptr(),
        ulCount: 1,
    };
    for (len, count) in [
        (size_of::<CK_OTP_PARAMS>(), 1),
        (8, 1),
        (size_of::<CK_OTP_PARAMS>(), 9),
    ] {
        params.ulCount = count;
        let mut m = CK_MECHANISM {
            mechanism: CKM_HOTP,
            pParameter: (&mut params as *mut CK_OTP_PARAMS).cast(),
            ulParameterLen: len as CK_ULONG,
        };
        // SAFETY: valid session; the parameter is what its length says or
        // shorter than the token may read (it must refuse before reading).
        let rv = unsafe { raw().C_SignInit.unwrap()(s.handle(), &mut m, mandatory) };
        assert_eq!(rv, CKR_MECHANISM_PARAM_INVALID, "{len} {count}");
    }
}

/// Cross-check against python `cryptography`'s HOTP
/// (`cryptography.hazmat.primitives.twofactor.hotp`, OpenSSL's HMAC) for
/// random keys of each length, random counters (set through
/// `CKA_OTP_COUNTER`, the stored-counter path) and 6 to 8 digits.
#[test]
fn cross_check_with_python_cryptography() {
    const SCRIPT: &str = r#"
import sys
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.twofactor.hotp import HOTP
algs = {20: hashes.SHA1(), 32: hashes.SHA256(), 64: hashes.SHA512()}
for item in sys.argv[1:]:
    key, counter, digits = item.split(":")
    key = bytes.fromhex(key)
    print(HOTP(key, int(digits), algs[len(key)]).generate(int(counter)).decode())
"#;
    let f = Fixture::new();
    let s = session(&f, "hotp-py");
    let mut rng = Rng(0x4f54_5020_4b45_5953);
    let mut args = Vec::new();
    let mut ours = Vec::new();
    for i in 0..30 {
        let len = [20usize, 32, 64][i % 3];
        let key: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let counter = match i % 4 {
            0 => rng.below(1000),
            1 => rng.next() >> 1,
            2 => u64::MAX - 1 - rng.below(3),
            _ => rng.next() & 0xffff_ffff,
        };
        let digits = 6 + rng.below(3);
        let h = hotp_key(
            &s,
            &key,
            CK_OTP_PARAM_IGNORED,
            vec![
                ul(CKA_OTP_LENGTH, digits),
                (CKA_OTP_COUNTER, counter.to_be_bytes().to_vec()),
            ],
        )
        .unwrap();
        ours.push(hotp_sign(&s, h, None).unwrap());
        assert_eq!(counter_of(&s, h), counter + 1);
        args.push(format!("{}:{counter}:{digits}", to_hex(&key)));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(python_cryptography(SCRIPT, &args), ours);
}

/// PKCS#11 3.2 `C_VerifySignatureInit` / `C_VerifySignature` take the
/// same path as `C_Verify` (the match stored, a replay refused); the
/// message-based API does not offer `CKM_HOTP`.
#[test]
fn verify_signature_and_the_message_api() {
    let f = Fixture::new();
    let s = session(&f, "hotp-3-2");
    let h = hotp_key(&s, RFC4226_KEY, CK_OTP_PARAM_IGNORED, vec![]).unwrap();
    let l = list_3_2();
    let check = |otp: &str| {
        let mut m = mech(CKM_HOTP, None);
        // SAFETY: valid session, mechanism, key and signature buffer.
        unsafe {
            let rv = l.C_VerifySignatureInit.unwrap()(
                s.handle(),
                &mut m,
                h,
                otp.as_ptr() as *mut u8,
                otp.len() as CK_ULONG,
            );
            assert_eq!(rv, CKR_OK);
            l.C_VerifySignature.unwrap()(s.handle(), std::ptr::null_mut(), 0)
        }
    };
    assert_eq!(check(RFC4226_OTPS[1]), CKR_OK);
    assert_eq!(counter_of(&s, h), 2);
    assert_eq!(check(RFC4226_OTPS[1]), CKR_SIGNATURE_INVALID);
    assert_eq!(check(RFC4226_OTPS[2]), CKR_OK);
    assert_eq!(counter_of(&s, h), 3);
    let mut m = mech(CKM_HOTP, None);
    // SAFETY: valid session, mechanism and key.
    let rv = unsafe { l.C_MessageSignInit.unwrap()(s.handle(), &mut m, h) };
    assert_ne!(rv, CKR_OK);
}

/// Signatures per signer in [`processes_and_threads_never_share_a_counter`].
const SHARED_ROUNDS: usize = 12;

/// Entry point of the worker process (skipped in a normal run): signs
/// [`SHARED_ROUNDS`] OTPs with the token key labelled `hotp-shared` and
/// prints them.
#[test]
#[ignore = "runs only as the second process of the test below"]
fn worker() {
    let Ok(label) = std::env::var("HOTP_WORKER") else {
        return;
    };
    let (p, slot) = worker_module(&label);
    let s = p.open_rw_session(slot).unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    let found = s
        .find_objects(&[cryptoki::object::Attribute::Label(b"hotp-shared".to_vec())])
        .unwrap();
    for _ in 0..SHARED_ROUNDS {
        println!("otp {}", hotp_sign(&s, found[0].handle(), None).unwrap());
    }
}

/// Two other processes and two threads of this one sign with one token
/// HOTP key at once: every counter value is handed out exactly once (the
/// OTPs are those of counters 0 to 4 × rounds − 1, no repeat), and the
/// next signature here, through a view the others made stale, continues
/// after them.
#[test]
fn processes_and_threads_never_share_a_counter() {
    let f = Fixture::new();
    let slot = f.token("hotp-shared");
    let s = f.user(slot);
    let h = hotp_key(
        &s,
        RFC4226_KEY,
        CK_OTP_PARAM_IGNORED,
        vec![flag(CKA_TOKEN, true), (CKA_LABEL, b"hotp-shared".to_vec())],
    )
    .unwrap();
    let workers: Vec<_> = (0..2)
        .map(|_| f.spawn_worker("HOTP_WORKER", "hotp-shared"))
        .collect();
    let mut all: Vec<String> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let s = f.p().open_rw_session(slot).unwrap();
                    (0..SHARED_ROUNDS)
                        .map(|_| hotp_sign(&s, h, None).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    for w in workers {
        let out = finish_worker(w);
        let otps: Vec<String> = out
            .lines()
            .filter_map(|l| l.strip_prefix("otp "))
            .map(str::to_string)
            .collect();
        assert_eq!(otps.len(), SHARED_ROUNDS, "{out}");
        all.extend(otps);
    }
    let total = 4 * SHARED_ROUNDS;
    let calculator = hotp_key(&s, RFC4226_KEY, CK_OTP_PARAM_OPTIONAL, vec![]).unwrap();
    let at = |c: usize| {
        hotp_sign(
            &s,
            calculator,
            Some(Otp {
                counter: Some(c as u64),
                ..Default::default()
            }),
        )
        .unwrap()
    };
    let mut expected: Vec<String> = (0..total).map(at).collect();
    all.sort();
    expected.sort();
    assert_eq!(all, expected, "each counter value exactly once");
    assert_eq!(hotp_sign(&s, h, None).unwrap(), at(total));
    assert_eq!(counter_of(&s, h), total as u64 + 1);
}
