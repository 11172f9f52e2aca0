//! The symmetric mechanisms checked against python `cryptography`.

use super::chacha::{Aead, ChaCha, chacha_key};
use super::*;

/// A JSON string of hex.
fn jhex(b: &[u8]) -> String {
    format!(
        "\"{}\"",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    )
}

/// Random inputs through OFB, CFB128/8/1, CTS, CBC-MAC, CCM, KWP,
/// KW-PKCS7, ChaCha20 and ChaCha20-Poly1305 in the module, each output checked by python `cryptography`
/// (provider/tests/interop/python/crosscheck_sym.py; OpenSSL underneath).
/// Skipped, saying so, when python3 or the package is missing.
#[test]
fn cross_checked_with_python_cryptography() {
    if !have_python_cryptography() {
        eprintln!("SKIP: python3 with the cryptography package is not installed");
        return;
    }
    let f = Fixture::new();
    let slot = f.token("sym-x");
    let s = f.user(slot);
    let mut rng = Rng(0x5eed_5eed);
    let mut bytes = |n: usize| -> Vec<u8> { (0..n).map(|_| rng.next() as u8).collect() };
    let mut cases = Vec::new();
    for round in 0..24usize {
        let key_len = [16, 24, 32][round % 3];
        let key = bytes(key_len);
        let k = aes_key(&s, &key, false);
        let mut iv = bytes(16);
        let len = [0, 1, 15, 16, 17, 31, 32, 33, 47, 64, 100, 257][round % 12];
        let data = bytes(len);
        for (name, ty) in [
            ("ofb", CKM_AES_OFB),
            ("cfb128", CKM_AES_CFB128),
            ("cfb8", CKM_AES_CFB8),
            ("cfb1", CKM_AES_CFB1),
            ("cts", CKM_AES_CTS),
        ] {
            if name == "cts" && len < 16 {
                continue;
            }
            let mut mech = bytes_mechanism(ty, &mut iv);
            assert_eq!(raw_init(&s, true, &mut mech, k), CKR_OK);
            let out = raw_once(&s, true, &data).unwrap();
            cases.push(format!(
                "{{\"mech\":\"{name}\",\"key\":{},\"iv\":{},\"data\":{},\"out\":{}}}",
                jhex(&key),
                jhex(&iv),
                jhex(&data),
                jhex(&out)
            ));
        }
        let mac_key = s
            .create_object(&[
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::AES),
                Attribute::Value(key.clone()),
                Attribute::Sign(true),
            ])
            .unwrap();
        let mut mac = CK_MECHANISM {
            mechanism: CKM_AES_MAC,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        };
        let out = raw_sign(&s, &mut mac, mac_key, &data).unwrap();
        cases.push(format!(
            "{{\"mech\":\"mac\",\"maclen\":8,\"key\":{},\"data\":{},\"out\":{}}}",
            jhex(&key),
            jhex(&data),
            jhex(&out)
        ));
        let nonce = bytes(7 + round % 7);
        let aad = bytes(round * 3 % 40);
        let tag_len = 4 + 2 * (round % 7);
        let mut ccm = Ccm::new(len, &nonce, &aad, tag_len);
        assert_eq!(raw_init(&s, true, &mut ccm.mechanism(), k), CKR_OK);
        let out = raw_once(&s, true, &data).unwrap();
        cases.push(format!(
            "{{\"mech\":\"ccm\",\"taglen\":{tag_len},\"key\":{},\"nonce\":{},\"aad\":{},\"data\":{},\"out\":{}}}",
            jhex(&key),
            jhex(&nonce),
            jhex(&aad),
            jhex(&data),
            jhex(&out)
        ));
        // ChaCha20 (32-bit counter, 96-bit nonce) and ChaCha20-Poly1305.
        let ck = bytes(32);
        let kc = chacha_key(&s, &ck).unwrap();
        let counter = bytes(4);
        let cn = bytes(12);
        let mut c = ChaCha::new(&counter, &cn);
        assert_eq!(raw_init(&s, true, &mut c.mechanism(), kc), CKR_OK);
        let out = raw_once(&s, true, &data).unwrap();
        cases.push(format!(
            "{{\"mech\":\"chacha20\",\"key\":{},\"counter\":{},\"nonce\":{},\"data\":{},\"out\":{}}}",
            jhex(&ck),
            jhex(&counter),
            jhex(&cn),
            jhex(&data),
            jhex(&out)
        ));
        let mut a = Aead::new(&cn, &aad);
        assert_eq!(raw_init(&s, true, &mut a.mechanism(), kc), CKR_OK);
        let out = raw_once(&s, true, &data).unwrap();
        cases.push(format!(
            "{{\"mech\":\"chacha20-poly1305\",\"key\":{},\"nonce\":{},\"aad\":{},\"data\":{},\"out\":{}}}",
            jhex(&ck),
            jhex(&cn),
            jhex(&aad),
            jhex(&data),
            jhex(&out)
        ));
        for (name, ty, min) in [
            ("kwp", CKM_AES_KEY_WRAP_KWP, 1),
            ("kw-pkcs7", CKM_AES_KEY_WRAP_PKCS7, 8),
        ] {
            if len < min {
                continue;
            }
            let mut mech = CK_MECHANISM {
                mechanism: ty,
                pParameter: std::ptr::null_mut(),
                ulParameterLen: 0,
            };
            assert_eq!(raw_init(&s, true, &mut mech, k), CKR_OK);
            let out = raw_once(&s, true, &data).unwrap();
            assert_eq!(raw_init(&s, false, &mut mech, k), CKR_OK);
            assert_eq!(raw_once(&s, false, &out).unwrap(), data, "{name} {len}");
            cases.push(format!(
                "{{\"mech\":\"{name}\",\"key\":{},\"data\":{},\"out\":{}}}",
                jhex(&key),
                jhex(&data),
                jhex(&out)
            ));
        }
    }
    let out = crosscheck_sym(&[], &cases);
    let ok = out.iter().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(ok, cases.len(), "{out:?}");
}
