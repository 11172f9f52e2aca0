//! `CKM_PKCS5_PBKD2` through the C API: RFC 6070 (PBKDF2-HMAC-SHA1) and
//! Wycheproof PBKDF2-HMAC-SHA224/256/384/512 known answers
//! (tests/vectors/pbkdf2.txt), a cross-check of other lengths and PRFs
//! with python's hashlib (OpenSSL), the parameter checks, and the
//! attributes of the key made (derived from a known password: never
//! `CKA_LOCAL`, `CKA_ALWAYS_SENSITIVE` or `CKA_NEVER_EXTRACTABLE`).

mod common;
#[path = "common/raw_calls.rs"]
mod raw_calls;

use common::*;
use cryptoki::session::Session;
use cryptoki_sys::*;
use raw_calls::*;

/// PBKDF2 through `C_GenerateKey` with `CK_PKCS5_PBKD2_PARAMS2`; the
/// key's value (an extractable generic secret, or `key_type`).
#[allow(clippy::too_many_arguments)]
fn pbkdf2(
    s: &Session,
    prf: CK_ULONG,
    iterations: CK_ULONG,
    password: &[u8],
    salt: &[u8],
    len: Option<usize>,
    key_type: CK_KEY_TYPE,
    salt_source: CK_ULONG,
) -> Result<Vec<u8>, CK_RV> {
    let (mut pw, mut sa) = (password.to_vec(), salt.to_vec());
    let mut p = CK_PKCS5_PBKD2_PARAMS2 {
        saltSource: salt_source,
        pSaltSourceData: sa.as_mut_ptr().cast(),
        ulSaltSourceDataLen: sa.len() as CK_ULONG,
        iterations,
        prf,
        pPrfData: std::ptr::null_mut(),
        ulPrfDataLen: 0,
        pPassword: pw.as_mut_ptr(),
        ulPasswordLen: pw.len() as CK_ULONG,
    };
    let m = CK_MECHANISM {
        mechanism: CKM_PKCS5_PBKD2,
        pParameter: (&mut p as *mut CK_PKCS5_PBKD2_PARAMS2).cast(),
        ulParameterLen: size_of::<CK_PKCS5_PBKD2_PARAMS2>() as CK_ULONG,
    };
    let mut t = vec![
        ul(CKA_CLASS, CKO_SECRET_KEY),
        ul(CKA_KEY_TYPE, key_type),
        flag(CKA_TOKEN, false),
        flag(CKA_SENSITIVE, false),
        flag(CKA_EXTRACTABLE, true),
    ];
    if let Some(l) = len {
        t.push(ul(CKA_VALUE_LEN, l as CK_ULONG));
    }
    let h = generate_with(s, m, t)?;
    attr(s, h, CKA_VALUE)
}

fn prf_of(name: &str) -> CK_ULONG {
    match name {
        "SHA1" => CKP_PKCS5_PBKD2_HMAC_SHA1,
        "SHA224" => CKP_PKCS5_PBKD2_HMAC_SHA224,
        "SHA256" => CKP_PKCS5_PBKD2_HMAC_SHA256,
        "SHA384" => CKP_PKCS5_PBKD2_HMAC_SHA384,
        "SHA512" => CKP_PKCS5_PBKD2_HMAC_SHA512,
        _ => panic!("{name}"),
    }
}

#[test]
fn pbkdf2_known_answers() {
    let f = Fixture::new();
    let s = f.user(f.token("pbkdf2"));
    let mut n = 0;
    for line in vectors("pbkdf2.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let w: Vec<&str> = line.split(' ').collect();
        let dk = unhex(w[4]);
        let got = pbkdf2(
            &s,
            prf_of(w[0]),
            w[1].parse().unwrap(),
            &opt_hex(w[2]),
            &opt_hex(w[3]),
            Some(dk.len()),
            CKK_GENERIC_SECRET,
            CKZ_SALT_SPECIFIED,
        )
        .unwrap();
        assert_eq!(got, dk, "{line}");
        n += 1;
    }
    assert_eq!(n, 238);
}

/// Other PRFs and lengths against python's hashlib (OpenSSL's PBKDF2).
#[test]
fn pbkdf2_matches_python_hashlib() {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import hashlib"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("python3 missing: cross-check not run");
        return;
    }
    let f = Fixture::new();
    let s = f.user(f.token("pbkdf2py"));
    let cases = [
        (CKP_PKCS5_PBKD2_HMAC_SHA512_224, "sha512_224", 100, 40),
        (CKP_PKCS5_PBKD2_HMAC_SHA512_256, "sha512_256", 3, 77),
        (CKP_PKCS5_PBKD2_HMAC_SHA384, "sha384", 1000, 512),
        (CKP_PKCS5_PBKD2_HMAC_SHA1, "sha1", 7, 1),
    ];
    for (prf, name, c, len) in cases {
        let got = pbkdf2(
            &s,
            prf,
            c,
            b"correct horse",
            b"battery staple",
            Some(len),
            CKK_GENERIC_SECRET,
            CKZ_SALT_SPECIFIED,
        )
        .unwrap();
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(format!(
                "import hashlib; print(hashlib.pbkdf2_hmac('{name}', b'correct horse', b'battery staple', {c}, {len}).hex())"
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            hex(&got),
            String::from_utf8_lossy(&out.stdout).trim(),
            "{name}"
        );
    }
}

/// Bad parameters, key types and lengths; the attributes of the key made.
#[test]
fn pbkdf2_parameters_and_attributes() {
    let f = Fixture::new();
    let s = f.user(f.token("pbkdf2p"));
    let run = |prf, c, len, kt, src| pbkdf2(&s, prf, c, b"pw", b"salt", len, kt, src);
    let sha256 = CKP_PKCS5_PBKD2_HMAC_SHA256;
    // RFC 6070 case 4 (16,777,216 iterations) is over the bound.
    assert_eq!(
        run(
            CKP_PKCS5_PBKD2_HMAC_SHA1,
            16_777_216,
            Some(20),
            CKK_GENERIC_SECRET,
            CKZ_SALT_SPECIFIED
        ),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    assert_eq!(
        run(
            sha256,
            10_000_001,
            Some(20),
            CKK_GENERIC_SECRET,
            CKZ_SALT_SPECIFIED
        ),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    assert_eq!(
        run(sha256, 0, Some(20), CKK_GENERIC_SECRET, CKZ_SALT_SPECIFIED),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    assert_eq!(
        run(
            CKP_PKCS5_PBKD2_HMAC_GOSTR3411,
            1,
            Some(20),
            CKK_GENERIC_SECRET,
            CKZ_SALT_SPECIFIED
        ),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    assert_eq!(
        run(sha256, 1, Some(20), CKK_GENERIC_SECRET, 2),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    // Lengths: required for generic secrets and AES, at most 512, AES 16/24/32.
    assert_eq!(
        run(sha256, 1, None, CKK_GENERIC_SECRET, CKZ_SALT_SPECIFIED),
        Err(CKR_TEMPLATE_INCOMPLETE)
    );
    assert_eq!(
        run(sha256, 1, Some(513), CKK_GENERIC_SECRET, CKZ_SALT_SPECIFIED),
        Err(CKR_ATTRIBUTE_VALUE_INVALID)
    );
    assert_eq!(
        run(sha256, 1, Some(20), CKK_AES, CKZ_SALT_SPECIFIED),
        Err(CKR_ATTRIBUTE_VALUE_INVALID)
    );
    let aes = run(sha256, 1, Some(32), CKK_AES, CKZ_SALT_SPECIFIED).unwrap();
    assert_eq!(
        aes,
        run(sha256, 1, Some(32), CKK_GENERIC_SECRET, CKZ_SALT_SPECIFIED).unwrap()
    );
    // DES3: its one length, parity set.
    let des = run(sha256, 1, None, CKK_DES3, CKZ_SALT_SPECIFIED).unwrap();
    assert_eq!(des.len(), 24);
    assert!(des.iter().all(|b| b.count_ones() % 2 == 1));
    // A wrong parameter size is refused.
    let mut short = [0u8; 8];
    let m = CK_MECHANISM {
        mechanism: CKM_PKCS5_PBKD2,
        pParameter: short.as_mut_ptr().cast(),
        ulParameterLen: 8,
    };
    assert_eq!(
        generate_with(&s, m, vec![ul(CKA_VALUE_LEN, 16), flag(CKA_TOKEN, false)]),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    // No parameter at all.
    assert_eq!(
        generate(
            &s,
            CKM_PKCS5_PBKD2,
            vec![ul(CKA_VALUE_LEN, 16), flag(CKA_TOKEN, false)]
        ),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    // The key made is sensitive if asked, but never "local", "always
    // sensitive" or "never extractable": its password is known outside.
    let mut pw = b"pw".to_vec();
    let mut sa = b"salt".to_vec();
    let mut p = CK_PKCS5_PBKD2_PARAMS2 {
        saltSource: CKZ_SALT_SPECIFIED,
        pSaltSourceData: sa.as_mut_ptr().cast(),
        ulSaltSourceDataLen: 4,
        iterations: 1000,
        prf: sha256,
        pPrfData: std::ptr::null_mut(),
        ulPrfDataLen: 0,
        pPassword: pw.as_mut_ptr(),
        ulPasswordLen: 2,
    };
    let m = CK_MECHANISM {
        mechanism: CKM_PKCS5_PBKD2,
        pParameter: (&mut p as *mut CK_PKCS5_PBKD2_PARAMS2).cast(),
        ulParameterLen: size_of::<CK_PKCS5_PBKD2_PARAMS2>() as CK_ULONG,
    };
    let h = generate_with(
        &s,
        m,
        vec![
            ul(CKA_KEY_TYPE, CKK_AES),
            ul(CKA_VALUE_LEN, 32),
            flag(CKA_TOKEN, false),
            flag(CKA_SENSITIVE, true),
            flag(CKA_EXTRACTABLE, false),
        ],
    )
    .unwrap();
    assert_eq!(attr(&s, h, CKA_VALUE), Err(CKR_ATTRIBUTE_SENSITIVE));
    for a in [CKA_LOCAL, CKA_ALWAYS_SENSITIVE, CKA_NEVER_EXTRACTABLE] {
        assert_eq!(attr(&s, h, a).unwrap(), vec![0], "{a:#x}");
    }
    assert_eq!(
        attr(&s, h, CKA_KEY_GEN_MECHANISM).unwrap(),
        CK_UNAVAILABLE_INFORMATION.to_ne_bytes()
    );
}
