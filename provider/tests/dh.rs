//! PKCS #3 Diffie-Hellman through the C API (mechanisms spec 3.0 §2.5):
//! known answers on the ten named groups computed with OpenSSL, agreement
//! between token key pairs, the truncation rule of §2.5.7, peer values and
//! parameters outside the order-q subgroup, imports, parameter generation
//! checked by the `openssl` CLI, and the mechanism sizes.
//!
//! cryptoki has no Diffie-Hellman mechanisms, so calls go through the raw
//! function list.

mod common;
#[path = "common/raw_calls.rs"]
mod raw_calls;

use common::*;
use cryptoki::session::Session;
use cryptoki_sys::*;
use raw_calls::*;

/// One known answer of `vectors/dh-named-groups-openssl.txt`.
struct Answer {
    group: String,
    p: Vec<u8>,
    x_a: Vec<u8>,
    y_b: Vec<u8>,
    z: Vec<u8>,
}

fn answers() -> Vec<Answer> {
    let text = include_str!("vectors/dh-named-groups-openssl.txt");
    let mut out = Vec::new();
    let mut fields = std::collections::HashMap::new();
    let even = |s: &str| {
        if s.len() % 2 == 1 {
            unhex(&format!("0{s}"))
        } else {
            unhex(s)
        }
    };
    for line in text.lines().chain(std::iter::once("")) {
        if line.starts_with('#') {
            continue;
        }
        if let Some((k, v)) = line.split_once(" = ") {
            fields.insert(k.to_string(), v.to_string());
        } else if !fields.is_empty() {
            out.push(Answer {
                group: fields["group"].clone(),
                p: even(&fields["p"]),
                x_a: even(&fields["xA"]),
                y_b: even(&fields["yB"]),
                z: unhex(&fields["Z"]),
            });
            fields.clear();
        }
    }
    out
}

fn ffdhe2048() -> Vec<u8> {
    answers().swap_remove(0).p
}

fn group(p: &[u8], g: &[u8]) -> Vec<A> {
    vec![(CKA_PRIME, p.to_vec()), (CKA_BASE, g.to_vec())]
}

fn private_key(s: &Session, p: &[u8], x: &[u8]) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut t = vec![
        ul(CKA_CLASS, CKO_PRIVATE_KEY),
        ul(CKA_KEY_TYPE, CKK_DH),
        (CKA_VALUE, x.to_vec()),
        flag(CKA_DERIVE, true),
    ];
    t.extend(group(p, &[2]));
    create(s, t)
}

fn pair(s: &Session, p: &[u8], g: &[u8], private: Vec<A>) -> (CK_OBJECT_HANDLE, CK_OBJECT_HANDLE) {
    let mut pt = group(p, g);
    pt.push(flag(CKA_DERIVE, true));
    let mut st = private;
    st.push(flag(CKA_DERIVE, true));
    generate_pair(s, CKM_DH_PKCS_KEY_PAIR_GEN, pt, st).expect("DH key pair")
}

/// A readable derived secret of `len` bytes (`None`: no `CKA_VALUE_LEN`)
/// and `key_type`.
fn readable(key_type: CK_KEY_TYPE, len: Option<usize>) -> Vec<A> {
    let mut t = vec![
        ul(CKA_CLASS, CKO_SECRET_KEY),
        ul(CKA_KEY_TYPE, key_type),
        flag(CKA_SENSITIVE, false),
        flag(CKA_EXTRACTABLE, true),
    ];
    if let Some(l) = len {
        t.push(ul(CKA_VALUE_LEN, l as CK_ULONG));
    }
    t
}

fn shared(
    s: &Session,
    private: CK_OBJECT_HANDLE,
    peer: &[u8],
    key_type: CK_KEY_TYPE,
    len: Option<usize>,
) -> Result<Vec<u8>, CK_RV> {
    let k = derive_with(
        s,
        CKM_DH_PKCS_DERIVE,
        Some(peer),
        private,
        readable(key_type, len),
    )?;
    attr(s, k, CKA_VALUE)
}

/// Runs `test` under each level of `key_policy`.
fn under_both_policies(test: fn(&str)) {
    for policy in ["default", "strict"] {
        test(policy);
    }
}

fn session(f: &Fixture) -> Session {
    f.user(f.token("dh"))
}

/// The secret of every named group equals OpenSSL's, whole (no
/// `CKA_VALUE_LEN`) and as its last 512 bytes at most (`CKA_VALUE_LEN`
/// caps a generic secret at 512); `CKA_VALUE_BITS` of the imported key is
/// the length of x.
#[test]
fn openssl_known_answers_on_every_named_group() {
    let f = Fixture::new();
    let s = session(&f);
    let all = answers();
    assert_eq!(all.len(), 10);
    for a in all {
        let k = private_key(&s, &a.p, &a.x_a).unwrap_or_else(|rv| panic!("{}: {rv:#x}", a.group));
        let bits = a.x_a.len() * 8 - a.x_a[0].leading_zeros() as usize;
        assert_eq!(
            attr(&s, k, CKA_VALUE_BITS).unwrap(),
            ul_bytes(bits as CK_ULONG)
        );
        assert_eq!(a.z.len(), a.p.len(), "{}", a.group);
        let len = a.z.len().min(512);
        let z = shared(&s, k, &a.y_b, CKK_GENERIC_SECRET, Some(len)).unwrap();
        assert_eq!(z, a.z[a.z.len() - len..], "{}", a.group);
        // Without a length the key is the whole secret, 768 and 1024
        // bytes on the largest groups too.
        let whole = shared(&s, k, &a.y_b, CKK_GENERIC_SECRET, None).unwrap();
        assert_eq!(whole, a.z, "{}", a.group);
    }
}

/// Two generated key pairs agree in both directions; truncation keeps the
/// last bytes (§2.5.7), an AES key is the last 32 bytes by default, and a
/// length above p's is `CKR_TEMPLATE_INCONSISTENT`. The default x is
/// twice the group's strength (224 bits on a 2048-bit group).
#[test]
fn generated_pairs_agree_and_truncate_from_the_leading_end() {
    let f = Fixture::new();
    let s = session(&f);
    let p = ffdhe2048();
    let (pa, sa) = pair(&s, &p, &[2], vec![]);
    let (pb, sb) = pair(&s, &p, &[2], vec![ul(CKA_VALUE_BITS, 1024)]);
    assert_eq!(attr(&s, sa, CKA_VALUE_BITS).unwrap(), ul_bytes(224));
    assert_eq!(attr(&s, sb, CKA_VALUE_BITS).unwrap(), ul_bytes(1024));
    assert_eq!(
        attr(&s, sa, CKA_VALUE).unwrap_err(),
        CKR_ATTRIBUTE_SENSITIVE
    );
    let (ya, yb) = (
        attr(&s, pa, CKA_VALUE).unwrap(),
        attr(&s, pb, CKA_VALUE).unwrap(),
    );
    let ab = shared(&s, sa, &yb, CKK_GENERIC_SECRET, None).unwrap();
    let ba = shared(&s, sb, &ya, CKK_GENERIC_SECRET, None).unwrap();
    assert_eq!(ab.len(), 256);
    assert_eq!(ab, ba);
    assert_eq!(
        shared(&s, sa, &yb, CKK_GENERIC_SECRET, Some(40)).unwrap(),
        ab[216..]
    );
    assert_eq!(shared(&s, sa, &yb, CKK_AES, None).unwrap(), ab[224..]);
    // The peer value with leading zeros is the same integer.
    let mut padded = vec![0u8; 3];
    padded.extend_from_slice(&yb);
    assert_eq!(
        shared(&s, sa, &padded, CKK_GENERIC_SECRET, None).unwrap(),
        ab
    );
    assert_eq!(
        shared(&s, sa, &yb, CKK_GENERIC_SECRET, Some(257)).unwrap_err(),
        CKR_TEMPLATE_INCONSISTENT
    );
    // x lengths outside 2s..len(q) are refused.
    for bits in [223, 2048] {
        let mut pt = group(&p, &[2]);
        pt.push(flag(CKA_DERIVE, true));
        let st = vec![ul(CKA_VALUE_BITS, bits)];
        assert_eq!(
            generate_pair(&s, CKM_DH_PKCS_KEY_PAIR_GEN, pt, st).unwrap_err(),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }
}

/// Peer values outside the order-q subgroup (0, 1, p − 1, p, p + 1, a
/// non-residue, a value longer than p), an empty value and a missing
/// parameter are `CKR_MECHANISM_PARAM_INVALID`; nothing is made.
#[test]
fn peer_values_outside_the_subgroup_are_refused() {
    under_both_policies(peer_values_outside_the_subgroup_are_refused_under);
}

fn peer_values_outside_the_subgroup_are_refused_under(policy: &str) {
    let f = Fixture::with_policy(policy);
    let s = session(&f);
    let p = ffdhe2048();
    let (_, sa) = pair(&s, &p, &[2], vec![]);
    let with_last = |delta: i16| {
        let mut v = p.clone();
        let last = v.last_mut().unwrap();
        *last = (*last as i16 + delta) as u8;
        v
    };
    let mut longer = vec![1u8];
    longer.extend_from_slice(&p);
    for (what, peer) in [
        ("0", vec![0u8]),
        ("1", vec![1u8]),
        ("p - 1", with_last(-1)),
        ("p - 2 (non-residue)", with_last(-2)),
        ("p", p.clone()),
        ("p + 1 (wraps to 1 mod 2^8 only)", {
            let mut v = p.clone();
            v.insert(0, 1);
            v
        }),
        ("longer than p", longer.clone()),
        ("empty", vec![]),
    ] {
        assert_eq!(
            derive_with(
                &s,
                CKM_DH_PKCS_DERIVE,
                Some(&peer),
                sa,
                readable(CKK_GENERIC_SECRET, None)
            )
            .unwrap_err(),
            CKR_MECHANISM_PARAM_INVALID,
            "{what} ({policy})"
        );
    }
    assert_eq!(
        derive_with(
            &s,
            CKM_DH_PKCS_DERIVE,
            None,
            sa,
            readable(CKK_GENERIC_SECRET, None)
        )
        .unwrap_err(),
        CKR_MECHANISM_PARAM_INVALID
    );
}

/// Imports: p must be a named group or a safe prime of 2048–4096 bits, g
/// in the order-q subgroup, x in [1, q), y in the subgroup;
/// `CKA_VALUE_BITS` is computed, never given; domain parameters get
/// `CKA_PRIME_BITS`. Every refusal is `CKR_ATTRIBUTE_VALUE_INVALID`
/// (`CKR_ATTRIBUTE_READ_ONLY` for the computed attribute).
#[test]
fn imports_are_checked() {
    let f = Fixture::new();
    let s = session(&f);
    let p = ffdhe2048();
    let key = |class, g: &[u8], value: &[u8], extra: Vec<A>| {
        let mut t = vec![
            ul(CKA_CLASS, class),
            ul(CKA_KEY_TYPE, CKK_DH),
            (CKA_VALUE, value.to_vec()),
        ];
        t.extend(group(&p, g));
        t.extend(extra);
        create(&s, t)
    };
    let mut not_prime = p.clone();
    *not_prime.last_mut().unwrap() = 0xfd;
    let mut p_minus_1 = p.clone();
    *p_minus_1.last_mut().unwrap() -= 1;
    for (what, class, g, value) in [
        ("x = 0", CKO_PRIVATE_KEY, vec![2u8], vec![0u8]),
        ("x = p", CKO_PRIVATE_KEY, vec![2], p.clone()),
        ("y = 1", CKO_PUBLIC_KEY, vec![2], vec![1]),
        ("y = p - 1", CKO_PUBLIC_KEY, vec![2], p_minus_1.clone()),
        ("g = p - 1", CKO_PUBLIC_KEY, p_minus_1.clone(), vec![4]),
    ] {
        assert_eq!(
            key(class, &g, &value, vec![]).unwrap_err(),
            CKR_ATTRIBUTE_VALUE_INVALID,
            "{what}"
        );
    }
    let mut t = group(&not_prime, &[2]);
    t.extend([
        ul(CKA_CLASS, CKO_DOMAIN_PARAMETERS),
        ul(CKA_KEY_TYPE, CKK_DH),
    ]);
    assert_eq!(create(&s, t).unwrap_err(), CKR_ATTRIBUTE_VALUE_INVALID);
    let mut t = group(&[0xff; 128], &[2]);
    t.extend([
        ul(CKA_CLASS, CKO_DOMAIN_PARAMETERS),
        ul(CKA_KEY_TYPE, CKK_DH),
    ]);
    assert_eq!(create(&s, t).unwrap_err(), CKR_ATTRIBUTE_VALUE_INVALID);
    assert_ne!(
        key(CKO_PRIVATE_KEY, &[2], &[5], vec![ul(CKA_VALUE_BITS, 3)]).unwrap_err(),
        CKR_OK
    );
    let y = key(CKO_PUBLIC_KEY, &[2], &[0, 0, 4], vec![]).unwrap();
    assert_eq!(attr(&s, y, CKA_VALUE).unwrap(), vec![4]);
    let mut t = group(&p, &[0, 2]);
    t.extend([
        ul(CKA_CLASS, CKO_DOMAIN_PARAMETERS),
        ul(CKA_KEY_TYPE, CKK_DH),
    ]);
    let d = create(&s, t).unwrap();
    assert_eq!(attr(&s, d, CKA_PRIME_BITS).unwrap(), ul_bytes(2048));
    assert_eq!(attr(&s, d, CKA_BASE).unwrap(), vec![2]);
}

/// `CKM_DH_PKCS_PARAMETER_GEN` makes a 2048-bit safe prime that the
/// `openssl` CLI also finds prime (p and (p − 1)/2), with g = 2 or 4; key
/// pairs on it agree. Sizes outside 2048–4096 are `CKR_KEY_SIZE_RANGE`.
#[test]
fn parameter_generation_makes_a_safe_prime_group() {
    let f = Fixture::new();
    let s = session(&f);
    for bits in [1024, 2047, 4097, 8192] {
        assert_eq!(
            generate(
                &s,
                CKM_DH_PKCS_PARAMETER_GEN,
                vec![ul(CKA_PRIME_BITS, bits)]
            )
            .unwrap_err(),
            CKR_KEY_SIZE_RANGE
        );
    }
    let d = generate(
        &s,
        CKM_DH_PKCS_PARAMETER_GEN,
        vec![ul(CKA_PRIME_BITS, 2048)],
    )
    .unwrap();
    assert_eq!(
        attr(&s, d, CKA_CLASS).unwrap(),
        ul_bytes(CKO_DOMAIN_PARAMETERS)
    );
    assert_eq!(attr(&s, d, CKA_KEY_TYPE).unwrap(), ul_bytes(CKK_DH));
    assert_eq!(attr(&s, d, CKA_PRIME_BITS).unwrap(), ul_bytes(2048));
    let p = attr(&s, d, CKA_PRIME).unwrap();
    let g = attr(&s, d, CKA_BASE).unwrap();
    assert_eq!(p.len(), 256);
    assert_eq!(g, vec![if p[255] & 7 == 7 { 2 } else { 4 }]);
    let hex: String = p.iter().map(|b| format!("{b:02X}")).collect();
    let q = {
        // (p − 1) / 2 in hex: shift right by one bit.
        let mut q = vec![0u8; p.len()];
        let mut carry = 0u8;
        for (i, b) in p.iter().enumerate() {
            q[i] = (b >> 1) | carry;
            carry = b << 7;
        }
        q.iter().map(|b| format!("{b:02X}")).collect::<String>()
    };
    for n in [&hex, &q] {
        let out = std::process::Command::new("openssl")
            .args(["prime", "-hex", n])
            .output()
            .expect("the openssl CLI (Debian package openssl)");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.trim_end().ends_with("is prime"),
            "openssl prime: {text}"
        );
    }
    let (pa, sa) = pair(&s, &p, &g, vec![]);
    let (pb, sb) = pair(&s, &p, &g, vec![]);
    let (ya, yb) = (
        attr(&s, pa, CKA_VALUE).unwrap(),
        attr(&s, pb, CKA_VALUE).unwrap(),
    );
    assert_eq!(
        shared(&s, sa, &yb, CKK_GENERIC_SECRET, None).unwrap(),
        shared(&s, sb, &ya, CKK_GENERIC_SECRET, None).unwrap()
    );
}

/// `C_GetMechanismInfo`: bits of p, and the functions.
#[test]
fn mechanism_info_in_bits() {
    let f = Fixture::new();
    let slot = f.token("dh-info");
    for (ty, min, max, flags) in [
        (CKM_DH_PKCS_KEY_PAIR_GEN, 2048, 8192, CKF_GENERATE_KEY_PAIR),
        (CKM_DH_PKCS_DERIVE, 2048, 8192, CKF_DERIVE),
        (CKM_DH_PKCS_PARAMETER_GEN, 2048, 4096, CKF_GENERATE),
    ] {
        let mut info = CK_MECHANISM_INFO::default();
        // SAFETY: a live output struct.
        let rv = unsafe { raw().C_GetMechanismInfo.unwrap()(slot.id(), ty, &mut info) };
        assert_eq!(rv, CKR_OK);
        assert_eq!(
            (info.ulMinKeySize, info.ulMaxKeySize, info.flags),
            (min, max, flags)
        );
    }
}

/// A derived key is never weaker than the strength floor when its base is
/// protected: 8 bytes (64 bits) from a sensitive DH key are
/// `CKR_KEY_SIZE_RANGE`-class refusals, as for ECDH (Clulow 2003, key
/// length reduction); 14 bytes (112 bits) are allowed.
#[test]
fn short_secrets_from_a_protected_base_are_refused() {
    under_both_policies(short_secrets_from_a_protected_base_are_refused_under);
}

fn short_secrets_from_a_protected_base_are_refused_under(policy: &str) {
    let f = Fixture::with_policy(policy);
    let s = session(&f);
    let p = ffdhe2048();
    let (pa, _) = pair(&s, &p, &[2], vec![]);
    let (_, sb) = pair(&s, &p, &[2], vec![]);
    let ya = attr(&s, pa, CKA_VALUE).unwrap();
    let short = derive_with(
        &s,
        CKM_DH_PKCS_DERIVE,
        Some(&ya),
        sb,
        readable(CKK_GENERIC_SECRET, Some(8)),
    );
    assert!(
        short.is_err(),
        "an 8-byte secret from a protected DH key ({policy})"
    );
    let allowed = vec![
        ul(CKA_CLASS, CKO_SECRET_KEY),
        ul(CKA_KEY_TYPE, CKK_GENERIC_SECRET),
        ul(CKA_VALUE_LEN, 14),
    ];
    derive_with(&s, CKM_DH_PKCS_DERIVE, Some(&ya), sb, allowed).unwrap();
}

/// `C_WrapKey` / `C_UnwrapKey` with `CKM_AES_CBC_PAD` under an AES key
/// whose value the test knows: (wrapped bytes or the new handle).
fn wrap_call(
    s: &Session,
    iv: &mut [u8; 16],
    wrapping: CK_OBJECT_HANDLE,
    key: CK_OBJECT_HANDLE,
) -> Result<Vec<u8>, CK_RV> {
    let mut m = CK_MECHANISM {
        mechanism: CKM_AES_CBC_PAD,
        pParameter: iv.as_mut_ptr().cast(),
        ulParameterLen: 16,
    };
    let mut out = vec![0u8; 4096];
    let mut len = out.len() as CK_ULONG;
    // SAFETY: live mechanism, IV and output buffer of `len` bytes.
    check(unsafe {
        raw().C_WrapKey.unwrap()(
            s.handle(),
            &mut m,
            wrapping,
            key,
            out.as_mut_ptr(),
            &mut len,
        )
    })?;
    out.truncate(len as usize);
    Ok(out)
}

fn unwrap_call(
    s: &Session,
    iv: &mut [u8; 16],
    unwrapping: CK_OBJECT_HANDLE,
    wrapped: &[u8],
    mut t: Vec<A>,
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut m = CK_MECHANISM {
        mechanism: CKM_AES_CBC_PAD,
        pParameter: iv.as_mut_ptr().cast(),
        ulParameterLen: 16,
    };
    let mut a = raw_template(&mut t);
    let mut wrapped = wrapped.to_vec();
    let mut h = 0;
    // SAFETY: live mechanism, IV, wrapped bytes and template.
    check(unsafe {
        raw().C_UnwrapKey.unwrap()(
            s.handle(),
            &mut m,
            unwrapping,
            wrapped.as_mut_ptr(),
            wrapped.len() as CK_ULONG,
            a.as_mut_ptr(),
            a.len() as CK_ULONG,
            &mut h,
        )
    })?;
    Ok(h)
}

/// Runs `openssl` with `args` in `dir`, feeding `input`: its output.
fn openssl(dir: &std::path::Path, args: &[&str], input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("openssl runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "openssl {args:?}");
    out.stdout
}

/// The integer under `label` (`private-key:`, `public-key:`) of
/// `openssl pkey -text` output, big-endian, minimal.
fn openssl_value(text: &[u8], label: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(text);
    let hex: String = text
        .lines()
        .skip_while(|l| !l.starts_with(label))
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .flat_map(|l| l.trim().split(':'))
        .collect();
    let bytes = unhex(&hex);
    let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    bytes[first..].to_vec()
}

/// Private keys wrap as PKCS #8 with PKCS #3 `dhKeyAgreement` parameters,
/// the form OpenSSL (and SoftHSM2) use: a key the token wraps is read by
/// `openssl pkey` with the same x, a key OpenSSL generated unwraps into the
/// token with its x, and both agree with a token key pair.
#[test]
fn pkcs8_wrapping_is_the_form_openssl_reads_and_writes() {
    if std::process::Command::new("openssl")
        .arg("version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no openssl CLI to cross-check PKCS #8 DH keys");
        return;
    }
    let f = Fixture::new();
    let s = session(&f);
    let dir = tempfile::tempdir().unwrap();
    let kek = [0x6bu8; 32];
    let wrapping = create(
        &s,
        vec![
            ul(CKA_CLASS, CKO_SECRET_KEY),
            ul(CKA_KEY_TYPE, CKK_AES),
            (CKA_VALUE, kek.to_vec()),
            flag(CKA_WRAP, true),
            flag(CKA_UNWRAP, true),
        ],
    )
    .unwrap();
    let p = ffdhe2048();
    let enc = |iv: &[u8; 16]| {
        vec![
            "-aes-256-cbc".to_string(),
            "-K".into(),
            to_hex(&kek),
            "-iv".into(),
            to_hex(iv),
        ]
    };
    // The token's key, read by OpenSSL.
    let (peer_public, peer_private) = pair(&s, &p, &[2], vec![]);
    let (_, private) = pair(
        &s,
        &p,
        &[2],
        vec![flag(CKA_SENSITIVE, false), flag(CKA_EXTRACTABLE, true)],
    );
    let mut iv = [0x11u8; 16];
    let wrapped = wrap_call(&s, &mut iv, wrapping, private).unwrap();
    let mut args: Vec<String> = vec!["enc".into(), "-d".into()];
    args.extend(enc(&iv));
    let der = openssl(
        dir.path(),
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &wrapped,
    );
    let text = openssl(
        dir.path(),
        &["pkey", "-inform", "DER", "-text", "-noout"],
        &der,
    );
    assert_eq!(
        openssl_value(&text, "private-key:"),
        attr(&s, private, CKA_VALUE).unwrap()
    );
    // OpenSSL's key, unwrapped into the token.
    let theirs = openssl(
        dir.path(),
        &[
            "genpkey",
            "-algorithm",
            "DH",
            "-pkeyopt",
            "group:ffdhe2048",
            "-outform",
            "DER",
        ],
        b"",
    );
    let mut iv = [0x22u8; 16];
    let mut args: Vec<String> = vec!["enc".into()];
    args.extend(enc(&iv));
    let blob = openssl(
        dir.path(),
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &theirs,
    );
    let unwrapped = unwrap_call(
        &s,
        &mut iv,
        wrapping,
        &blob,
        vec![
            ul(CKA_CLASS, CKO_PRIVATE_KEY),
            ul(CKA_KEY_TYPE, CKK_DH),
            flag(CKA_DERIVE, true),
            flag(CKA_SENSITIVE, false),
            flag(CKA_EXTRACTABLE, true),
        ],
    )
    .unwrap();
    let text = openssl(
        dir.path(),
        &["pkey", "-inform", "DER", "-text", "-noout"],
        &theirs,
    );
    assert_eq!(
        openssl_value(&text, "private-key:"),
        attr(&s, unwrapped, CKA_VALUE).unwrap()
    );
    assert_eq!(attr(&s, unwrapped, CKA_PRIME).unwrap(), p);
    // The unwrapped key agrees with a token key pair.
    let y = attr(&s, peer_public, CKA_VALUE).unwrap();
    let ours = shared(&s, unwrapped, &y, CKK_GENERIC_SECRET, None).unwrap();
    let y_unwrapped = openssl_value(&text, "public-key:");
    let theirs_z = shared(&s, peer_private, &y_unwrapped, CKK_GENERIC_SECRET, None).unwrap();
    assert_eq!(ours, theirs_z);
    // A damaged blob is no key.
    let mut iv = [0x22u8; 16];
    let mut bad = theirs.clone();
    bad[11] ^= 1; // inside the algorithm OID
    let mut args: Vec<String> = vec!["enc".into()];
    args.extend(enc(&iv));
    let blob = openssl(
        dir.path(),
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &bad,
    );
    assert_eq!(
        unwrap_call(
            &s,
            &mut iv,
            wrapping,
            &blob,
            vec![ul(CKA_CLASS, CKO_PRIVATE_KEY), ul(CKA_KEY_TYPE, CKK_DH)],
        ),
        Err(CKR_WRAPPED_KEY_INVALID)
    );
}
