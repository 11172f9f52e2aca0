//! Multi-part message encryption and decryption (base spec 3.0 §5.19 /
//! §5.20, `C_EncryptMessageBegin` / `Next`): known answers however the
//! message is split, tamper, size queries, generated IVs, and the calls
//! the `cryptoki` crate makes.

use super::*;

/// McGrew–Viega test case 6: test case 4's key, plaintext and AAD under a
/// 60-byte IV (the GHASH-derived `J0` path).
const IV6: &str = "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b";
const C6: &str = "8ce24998625615b603a033aca13fb894be9112a5c3a211a8ba262a3cca7e2ca701e4a9a4fba43c90ccdcb281d48c7c6fd62875d2aca417034c34aee5";
const T6: &str = "619cc5aefffe0bfa462af43c1699d050";

/// One whole multi-part message: Begin, a Next per part of the lengths
/// `parts` (the last with `CKF_END_OF_MESSAGE`), each intermediate one
/// checked to output nothing (into a buffer that must stay untouched), the
/// last after a size query. Returns the output, or the failing rv.
#[allow(clippy::too_many_arguments)]
fn multipart(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    encrypt: bool,
    iv: &mut [u8],
    generator: CK_ULONG,
    tag: &mut [u8],
    aad: &[u8],
    input: &[u8],
    parts: &[usize],
) -> Result<Vec<u8>, CK_RV> {
    assert_eq!(parts.iter().sum::<usize>(), input.len());
    let fixed = if generator == CKG_NO_GENERATE { 0 } else { 32 };
    let mut p = params(iv, fixed, generator, tag);
    let rv = begin(l, s, encrypt, &mut p, aad);
    if rv != CKR_OK {
        return Err(rv);
    }
    let mut at = 0;
    for (i, &n) in parts.iter().enumerate() {
        let part = &input[at..at + n];
        at += n;
        if i + 1 < parts.len() {
            let mut untouched = vec![0xeeu8; 80];
            // Alternately with and without the parameters.
            let pp = if i % 2 == 0 { Some(&mut p) } else { None };
            let (rv, len) = next(l, s, encrypt, pp, part, Some(&mut untouched), false);
            if rv != CKR_OK {
                return Err(rv);
            }
            assert_eq!(len, 0, "an intermediate part outputs nothing");
            assert!(untouched.iter().all(|&b| b == 0xee));
        } else {
            let (rv, need) = next(l, s, encrypt, Some(&mut p), part, None, true);
            if rv != CKR_OK {
                return Err(rv);
            }
            let mut out = vec![0xeeu8; need as usize];
            let (rv, len) = next(l, s, encrypt, Some(&mut p), part, Some(&mut out), true);
            if rv != CKR_OK {
                assert!(out.iter().all(|&b| b == 0xee), "nothing released");
                return Err(rv);
            }
            out.truncate(len as usize);
            return Ok(out);
        }
    }
    unreachable!("parts is never empty")
}

const SPLITS: &[&[usize]] = &[
    &[60],
    &[0, 60],
    &[60, 0],
    &[1, 59],
    &[13, 0, 17, 30],
    &[16, 16, 16, 12],
    &[0, 0, 7, 0, 53, 0],
];

/// Multi-part encryption, however the message is split (empty parts
/// included), gives GCM test cases 4 (96-bit IV) and 6 (60-byte IV) and
/// the same ciphertext and tag as `C_EncryptMessage`, also with a 96-bit
/// tag; multi-part decryption of those ciphertexts gives the plaintext.
#[test]
fn multipart_matches_single_part_and_known_answers() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let plain = &unhex(P3)[..60];
    let aad = unhex(A4);
    for (iv_hex, ct_hex, tag_hex) in [(IV, &C3[..120], T4), (IV6, C6, T6)] {
        for tag_len in [16usize, 12] {
            let expected_tag = &unhex(tag_hex)[..tag_len];
            // Single-part reference.
            let mut iv = unhex(iv_hex);
            let mut tag = vec![0u8; tag_len];
            let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
            let mut single = vec![0u8; 60];
            assert_eq!(
                message(l, &s, true, &mut p, &aad, plain, Some(&mut single)).0,
                CKR_OK
            );
            assert_eq!(single, unhex(ct_hex));
            assert_eq!(tag, expected_tag);
            for parts in SPLITS {
                let mut iv = unhex(iv_hex);
                let mut tag = vec![0u8; tag_len];
                let ct = multipart(
                    l,
                    &s,
                    true,
                    &mut iv,
                    CKG_NO_GENERATE,
                    &mut tag,
                    &aad,
                    plain,
                    parts,
                )
                .unwrap();
                assert_eq!(ct, single, "parts {parts:?}");
                assert_eq!(tag, expected_tag, "parts {parts:?}");
                assert_eq!(iv, unhex(iv_hex), "CKG_NO_GENERATE keeps the IV");
                let back = multipart(
                    l,
                    &s,
                    false,
                    &mut iv,
                    CKG_NO_GENERATE,
                    &mut tag,
                    &aad,
                    &single,
                    parts,
                )
                .unwrap();
                assert_eq!(back, plain, "parts {parts:?}");
            }
        }
    }
    // An empty message, without AAD, in one or several empty parts.
    let mut tag = [0u8; 16];
    let mut iv = unhex(IV);
    let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
    assert_eq!(
        message(l, &s, true, &mut p, &[], &[], Some(&mut [])).0,
        CKR_OK
    );
    let single_tag = tag;
    for parts in [&[0usize][..], &[0, 0, 0]] {
        let mut tag = [0u8; 16];
        let out = multipart(
            l,
            &s,
            true,
            &mut iv,
            CKG_NO_GENERATE,
            &mut tag,
            &[],
            &[],
            parts,
        )
        .unwrap();
        assert!(out.is_empty());
        assert_eq!(tag, single_tag);
    }
}

/// A changed tag, AAD or ciphertext byte (in any part) fails the last
/// `C_DecryptMessageNext` with `CKR_ENCRYPTED_DATA_INVALID`, releasing no
/// plaintext at any step; the message ends, the operation stays.
#[test]
fn multipart_decrypt_tamper_releases_nothing() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let ct = unhex(C6);
    let aad = unhex(A4);
    let tag = unhex(T6);
    for case in 0..4 {
        let (mut c, mut a, mut t) = (ct.clone(), aad.clone(), tag.clone());
        match case {
            0 => t[15] ^= 1,
            1 => a[0] ^= 0x40,
            2 => c[5] ^= 1,
            _ => c[59] ^= 0x80,
        }
        let mut iv = unhex(IV6);
        assert_eq!(
            multipart(
                l,
                &s,
                false,
                &mut iv,
                CKG_NO_GENERATE,
                &mut t,
                &a,
                &c,
                &[13, 0, 17, 30]
            ),
            Err(CKR_ENCRYPTED_DATA_INVALID),
            "case {case}"
        );
        let mut out = [0u8; 60];
        assert_eq!(
            next(
                l,
                &s,
                false,
                None::<&mut CK_GCM_MESSAGE_PARAMS>,
                &[],
                Some(&mut out),
                false
            )
            .0,
            CKR_OPERATION_NOT_INITIALIZED,
            "the failed message ended"
        );
    }
    // The operation is still there.
    let mut iv = unhex(IV6);
    let mut t = tag.clone();
    assert_eq!(
        multipart(
            l,
            &s,
            false,
            &mut iv,
            CKG_NO_GENERATE,
            &mut t,
            &aad,
            &ct,
            &[30, 30]
        )
        .unwrap(),
        unhex(P3)[..60].to_vec()
    );
}

/// Size queries (intermediate and last part) and `CKR_BUFFER_TOO_SMALL`
/// commit nothing: repeating the same call gives the right output, not one
/// with a part counted twice; both directions.
#[test]
fn multipart_size_query_and_short_buffer() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let plain = unhex(P3)[..60].to_vec();
    let ct = unhex(C6);
    for encrypt in [true, false] {
        let (input, expected) = if encrypt {
            (&plain, &ct)
        } else {
            (&ct, &plain)
        };
        let mut iv = unhex(IV6);
        let mut tag = if encrypt {
            [0u8; 16].to_vec()
        } else {
            unhex(T6)
        };
        let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
        assert_eq!(begin(l, &s, encrypt, &mut p, &unhex(A4)), CKR_OK);
        // Intermediate part: queried twice, then passed once.
        for _ in 0..2 {
            assert_eq!(
                next(l, &s, encrypt, Some(&mut p), &input[..25], None, false),
                (CKR_OK, 0)
            );
        }
        assert_eq!(
            next(
                l,
                &s,
                encrypt,
                Some(&mut p),
                &input[..25],
                Some(&mut []),
                false
            ),
            (CKR_OK, 0)
        );
        // Last part: queried, too small twice, then right.
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), &input[25..], None, true),
            (CKR_OK, 60)
        );
        let mut out = [0xeeu8; 60];
        for short in [0usize, 59] {
            assert_eq!(
                next(
                    l,
                    &s,
                    encrypt,
                    Some(&mut p),
                    &input[25..],
                    Some(&mut out[..short]),
                    true
                ),
                (CKR_BUFFER_TOO_SMALL, 60)
            );
            assert!(out.iter().all(|&b| b == 0xee));
        }
        let mut big = vec![0u8; 100];
        assert_eq!(
            next(
                l,
                &s,
                encrypt,
                Some(&mut p),
                &input[25..],
                Some(&mut big),
                true
            ),
            (CKR_OK, 60)
        );
        assert_eq!(&big[..60], &expected[..]);
        if encrypt {
            assert_eq!(tag, unhex(T6));
        }
        // The message ended with its last part.
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), &[], Some(&mut big), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
    }
}

/// Generated IVs: written to `pIv` at `C_EncryptMessageBegin`, distinct
/// across multi-part and single-part messages of the operation (one
/// counter), the fixed prefix kept; each message decrypts.
#[test]
fn multipart_generated_ivs_differ() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let prefix = [0xa5, 0x5a, 0x0f, 0xf0];
    for generator in [CKG_GENERATE_COUNTER, CKG_GENERATE_RANDOM, CKG_GENERATE] {
        let mut seen = HashSet::new();
        for i in 0..100u32 {
            let plain = [i.to_be_bytes(), (!i).to_be_bytes()].concat();
            // Non-fixed bytes the generator must overwrite (a counter's
            // first value is all zeros).
            let mut iv = [0xffu8; 12];
            iv[..4].copy_from_slice(&prefix);
            let mut tag = [0u8; 16];
            let ct = if i % 3 == 2 {
                let mut p = params(&mut iv, 32, generator, &mut tag);
                let mut ct = [0u8; 8];
                assert_eq!(
                    message(l, &s, true, &mut p, b"ad", &plain, Some(&mut ct)).0,
                    CKR_OK
                );
                ct.to_vec()
            } else {
                let mut p = params(&mut iv, 32, generator, &mut tag);
                assert_eq!(begin(l, &s, true, &mut p, b"ad"), CKR_OK);
                let at_begin = iv;
                assert_ne!(&at_begin[4..], &[0xffu8; 8], "IV generated at Begin");
                let (rv, _) = next(
                    l,
                    &s,
                    true,
                    None::<&mut CK_GCM_MESSAGE_PARAMS>,
                    &plain[..3],
                    Some(&mut []),
                    false,
                );
                assert_eq!(rv, CKR_OK);
                let mut ct = [0u8; 8];
                assert_eq!(
                    next(l, &s, true, Some(&mut p), &plain[3..], Some(&mut ct), true),
                    (CKR_OK, 8)
                );
                assert_eq!(at_begin, iv, "the IV is not changed after Begin");
                ct.to_vec()
            };
            assert_eq!(&iv[..4], &prefix, "fixed part kept");
            assert!(seen.insert(iv), "IV repeated");
            let mut back = [0u8; 8];
            let mut p = params(&mut iv, 32, generator, &mut tag);
            assert_eq!(
                message(l, &s, false, &mut p, b"ad", &ct, Some(&mut back)).0,
                CKR_OK
            );
            assert_eq!(back.to_vec(), plain);
        }
    }
}

/// Multi-part messages as the `cryptoki` crate (0.12) drives them: its
/// `encrypt_message_next` / `decrypt_message_next` pass the same
/// `CK_GCM_MESSAGE_PARAMS` to every part, query the output size first, and
/// read the tag from the parameter after the last part. GCM test case 4
/// (McGrew–Viega), split in three parts.
#[test]
fn cryptoki_crates_multipart_message_calls() {
    use cryptoki::mechanism::MessageParam;
    use cryptoki::mechanism::aead::{GcmMessageParams, GeneratorFunction};
    let f = Fixture::new();
    let s = f.user(f.token("msg-cryptoki"));
    let key = aes_key(&s, &unhex(KEY));
    let plain = &unhex(P3)[..60];
    let aad = unhex(A4);
    let expected_ct = unhex(&C3[..120]);
    let mut iv = unhex(IV);
    let mut tag = [0u8; 16];
    let param =
        GcmMessageParams::new(&mut iv, 0.into(), GeneratorFunction::NoGenerate, &mut tag).unwrap();
    // As cryptoki's own tests do: the init carries a parameter too.
    s.message_encrypt_init(&Mechanism::AesGcmMessage(param), key)
        .unwrap();
    s.encrypt_message_begin(MessageParam::AesGcmMessage(param), &aad)
        .unwrap();
    let mut ct = Vec::new();
    for (i, part) in plain.chunks(25).enumerate() {
        let last = i == plain.len().div_ceil(25) - 1;
        ct.extend(
            s.encrypt_message_next(MessageParam::AesGcmMessage(param), part, last)
                .unwrap(),
        );
    }
    s.message_encrypt_final().unwrap();
    assert_eq!(ct, expected_ct);
    assert_eq!(tag.to_vec(), unhex(T4));

    let mut iv = unhex(IV);
    let mut tag = unhex(T4);
    let param =
        GcmMessageParams::new(&mut iv, 0.into(), GeneratorFunction::NoGenerate, &mut tag).unwrap();
    s.message_decrypt_init(&Mechanism::AesGcmMessage(param), key)
        .unwrap();
    s.decrypt_message_begin(MessageParam::AesGcmMessage(param), &aad)
        .unwrap();
    let mut back = Vec::new();
    for (i, part) in expected_ct.chunks(25).enumerate() {
        let last = i == expected_ct.len().div_ceil(25) - 1;
        let out = s
            .decrypt_message_next(MessageParam::AesGcmMessage(param), part, last)
            .unwrap();
        // Nothing before the tag has been checked.
        assert!(last || out.is_empty(), "plaintext released before the tag");
        back.extend(out);
    }
    s.message_decrypt_final().unwrap();
    assert_eq!(back, plain);
}
