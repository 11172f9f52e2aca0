//! The IKE key derivations through the C API (PKCS #11 3.0 mechanisms
//! spec, "IKE"): `CKM_IKE_PRF_DERIVE`, `CKM_IKE1_PRF_DERIVE`,
//! `CKM_IKE1_EXTENDED_DERIVE` and `CKM_IKE2_PRF_PLUS_DERIVE` against the
//! NIST CAVP SP 800-135 IKEv1/IKEv2 vectors (tests/vectors/
//! ike-cavp-sp800-135.txt, and every group of the CAVP IKEv2, IKEv1 DSA
//! and IKEv1 PSK files in ike-cavp-sp800-135-groups.txt) and vectors computed with Python's hmac
//! (tests/vectors/ike-python-hmac.txt, made by gen_ike_python.py in the same
//! folder: the only source for `CKM_IKE1_EXTENDED_DERIVE`); the IKEv1 and
//! IKEv2 key schedules chained through key handles; a live cross-check
//! with python3's hmac for nonces longer than the HMAC block; and the
//! parameter, key-type and length checks. cryptoki 0.12 names none of these
//! mechanisms, so the calls go through the raw function list.

mod common;
#[path = "common/ike_params.rs"]
mod ike_params;
#[path = "common/raw_calls.rs"]
mod raw_calls;

use common::*;
use cryptoki::session::Session;
use cryptoki_sys::*;
use ike_params::*;
use raw_calls::{attr, create, flag, ul};
use std::collections::HashMap;

fn prf_mech(name: &str) -> CK_MECHANISM_TYPE {
    match name {
        "SHA1" => CKM_SHA_1_HMAC,
        "SHA224" => CKM_SHA224_HMAC,
        "SHA256" => CKM_SHA256_HMAC,
        "SHA384" => CKM_SHA384_HMAC,
        "SHA512" => CKM_SHA512_HMAC,
        "SHA512_224" => CKM_SHA512_224_HMAC,
        "SHA512_256" => CKM_SHA512_256_HMAC,
        "SHA3_224" => CKM_SHA3_224_HMAC,
        "SHA3_256" => CKM_SHA3_256_HMAC,
        "SHA3_384" => CKM_SHA3_384_HMAC,
        "SHA3_512" => CKM_SHA3_512_HMAC,
        other => panic!("unknown PRF {other}"),
    }
}

/// The records of a vector file: `key = value` lines, blank-line separated.
fn records(name: &str) -> Vec<HashMap<String, String>> {
    let text = raw_calls::vectors(name);
    let mut out = Vec::new();
    let mut cur = HashMap::new();
    for line in text.lines().chain([""]) {
        if line.starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let (k, v) = line.split_once(" = ").expect("key = value");
        cur.insert(k.to_string(), v.to_string());
    }
    out
}

/// A readable session key of `key_type` holding `value`, allowed to derive.
fn key(s: &Session, key_type: CK_KEY_TYPE, value: &[u8]) -> CK_OBJECT_HANDLE {
    create(
        s,
        vec![
            ul(CKA_CLASS, CKO_SECRET_KEY),
            ul(CKA_KEY_TYPE, key_type),
            (CKA_VALUE, value.to_vec()),
            flag(CKA_TOKEN, false),
            flag(CKA_DERIVE, true),
            flag(CKA_SENSITIVE, false),
            flag(CKA_EXTRACTABLE, true),
        ],
    )
    .unwrap()
}

/// A readable derived generic secret of `len` bytes.
fn open(len: Option<usize>) -> Vec<(CK_ATTRIBUTE_TYPE, Vec<u8>)> {
    secret_template(
        len,
        &[
            (CKA_SENSITIVE, false),
            (CKA_EXTRACTABLE, true),
            (CKA_DERIVE, true),
        ],
    )
}

/// Derives with `p` from `base` into a readable key of `len` bytes; its value.
fn derive_value(
    s: &Session,
    p: &mut IkeParam,
    base: CK_OBJECT_HANDLE,
    len: Option<usize>,
) -> Result<Vec<u8>, CK_RV> {
    let h = derive_ike(s.handle(), &mut p.mechanism(), base, &mut open(len))?;
    Ok(attr(s, h, CKA_VALUE).unwrap())
}

/// Runs one vector record with the base of `base_type`; the derived value.
fn run(s: &Session, r: &HashMap<String, String>, base_type: CK_KEY_TYPE) -> Vec<u8> {
    let hex = |k: &str| r.get(k).map(|v| unhex(v)).unwrap_or_default();
    let handle = |k: &str| r.get(k).map(|v| key(s, CKK_GENERIC_SECRET, &unhex(v)));
    let prf = prf_mech(&r["prf"]);
    let base = key(s, base_type, &hex("base"));
    let (ni, nr, cky_i, cky_r, extra, seed) = (
        hex("ni"),
        hex("nr"),
        hex("ckyi"),
        hex("ckyr"),
        hex("extra"),
        hex("seed"),
    );
    let mut p = match r["mech"].as_str() {
        "IKE_PRF" => {
            let mode = r["mode"].as_str();
            let new_key = handle("key").unwrap_or(CK_INVALID_HANDLE);
            IkeParam::prf(prf, mode == "datakey", mode == "rekey", &ni, &nr, new_key)
        }
        "IKE1_PRF" => IkeParam::ike1_prf(
            prf,
            handle("gxy").unwrap(),
            handle("prev"),
            &cky_i,
            &cky_r,
            r["n"].parse().unwrap(),
        ),
        "IKE1_EXTENDED" => IkeParam::extended(prf, handle("gxy"), &extra),
        "IKE2_PRF_PLUS" => IkeParam::prf_plus(prf, handle("seedkey"), &seed),
        other => panic!("unknown mechanism {other}"),
    };
    let len = r["out"].len() / 2;
    derive_value(s, &mut p, base, Some(len)).unwrap_or_else(|rv| panic!("{}: {rv:#x}", r["name"]))
}

/// The HMAC key type of a PRF named in a vector file.
fn hmac_type(prf: &str) -> CK_KEY_TYPE {
    match prf {
        "SHA1" => CKK_SHA_1_HMAC,
        "SHA224" => CKK_SHA224_HMAC,
        "SHA256" => CKK_SHA256_HMAC,
        "SHA384" => CKK_SHA384_HMAC,
        "SHA512" => CKK_SHA512_HMAC,
        "SHA512_224" => CKK_SHA512_224_HMAC,
        "SHA512_256" => CKK_SHA512_256_HMAC,
        "SHA3_224" => CKK_SHA3_224_HMAC,
        "SHA3_256" => CKK_SHA3_256_HMAC,
        "SHA3_384" => CKK_SHA3_384_HMAC,
        "SHA3_512" => CKK_SHA3_512_HMAC,
        other => panic!("unknown PRF {other}"),
    }
}

/// Every record of `file`, with a generic-secret base and with the PRF's
/// HMAC key type as the base; returns how many ran.
fn run_file(file: &str) -> usize {
    let f = Fixture::new();
    let s = f.user(f.token("ike"));
    let recs = records(file);
    for r in &recs {
        let want = unhex(&r["out"]);
        assert_eq!(
            hex_of(&run(&s, r, CKK_GENERIC_SECRET)),
            hex_of(&want),
            "{}",
            r["name"]
        );
        assert_eq!(
            hex_of(&run(&s, r, hmac_type(&r["prf"]))),
            hex_of(&want),
            "{} (HMAC key type base)",
            r["name"]
        );
    }
    recs.len()
}

fn hex_of(b: &[u8]) -> String {
    to_hex(b)
}

/// NIST CAVP SP 800-135: the IKEv2 vector (SKEYSEED, DKM, child SA DKM
/// without and with a new D-H secret as seed key, rekeyed SKEYSEED) and
/// the IKEv1 vector (SKEYID, SKEYID_d, _a, _e): every mode of
/// `CKM_IKE_PRF_DERIVE` but the plain one, `CKM_IKE1_PRF_DERIVE` with and
/// without a previous key, prf+ with seed data alone and with a seed key.
#[test]
fn cavp_sp800_135_vectors() {
    assert_eq!(run_file("ike-cavp-sp800-135.txt"), 9);
}

/// The CAVP SP 800-135 IKE files group by group (the first ten tests of
/// every IKEv2, IKEv1 DSA and IKEv1 PSK group: SHA-1, SHA-256, SHA-384,
/// SHA-512; g^x of 256, 2048 and 8192 bits; nonces of 8 and 256 bytes):
/// SKEYSEED, DKM, both child SA DKMs and the rekeyed SKEYSEED; SKEYID
/// from g^xy and from a pre-shared key (`CKM_IKE_PRF_DERIVE` without
/// `bDataAsKey`), SKEYID_d, _a and _e.
#[test]
fn cavp_sp800_135_every_group() {
    assert_eq!(run_file("ike-cavp-sp800-135-groups.txt"), 1220);
}

/// Python hmac/hashlib vectors: every mechanism and mode for every PRF
/// (SHA-1, SHA-224/256/384/512, SHA-512/224, SHA-512/256, SHA3-224/256/
/// 384/512), `CKM_IKE1_EXTENDED_DERIVE` with
/// g^xy and extra data, either, or neither (K1 = prf(K, 0)), nonces of
/// 200 bytes as the HMAC key (hashed first, RFC 2104), prf+ with a seed
/// key alone.
#[test]
fn python_hmac_vectors() {
    assert_eq!(run_file("ike-python-hmac.txt"), 11 * 13);
}

const GXY: &str = "2a2e0bbe8da3657a83f3d35826e49e2d38e557e912a1b9e6c30c63577b3eab715466202862027f2c26f3090743555579611771db0b92bef93834432a3a7762fc8a0f4889fd281d6082770d10a40d7bad61e832f041e620d6787e7f62ab2861ddfbe272e0d9d3cdec5f1bbf750e24b8b32d6d714968ad69ce5086c32ad2742ebc";

/// The IKEv1 key schedule of the CAVP vector as a consumer runs it: every
/// derived key stays a handle (SKEYID the base of the next three, each
/// SKEYID_x the previous key of the next).
#[test]
fn ikev1_schedule_through_handles() {
    let f = Fixture::new();
    let s = f.user(f.token("ike"));
    let gxy = key(&s, CKK_GENERIC_SECRET, &unhex(GXY));
    let (ni, nr) = (unhex("ced5635da6796075"), unhex("6244b427712fb776"));
    let (ci, cr) = (unhex("382e5c8b0a3fa307"), unhex("ba4b7616700a2413"));
    let mut p = IkeParam::prf(CKM_SHA_1_HMAC, true, false, &ni, &nr, 0);
    let skeyid = derive_ike(s.handle(), &mut p.mechanism(), gxy, &mut open(None)).unwrap();
    assert_eq!(
        to_hex(&attr(&s, skeyid, CKA_VALUE).unwrap()),
        "dc37ac99de6dcfbd1ee74af7fb36f9b4b0a7829d"
    );
    let mut prev = None;
    for (n, want) in [
        "486293ed547adb562cefdaf43d3d8457b196f2b6",
        "f4053b5ca07e59bb41b8f401037ca90b72b3917e",
        "49a1d53a80fb77e663552964fbbcb45092021473",
    ]
    .into_iter()
    .enumerate()
    {
        let mut p = IkeParam::ike1_prf(CKM_SHA_1_HMAC, gxy, prev, &ci, &cr, n as u8);
        let k = derive_ike(s.handle(), &mut p.mechanism(), skeyid, &mut open(None)).unwrap();
        assert_eq!(to_hex(&attr(&s, k, CKA_VALUE).unwrap()), want, "SKEYID_{n}");
        prev = Some(k);
    }
}

/// The IKEv2 key schedule of the CAVP vector through handles: SKEYSEED,
/// the IKE SA's keying material, SK_d cut from it with
/// `CKM_EXTRACT_KEY_FROM_KEY`, then the child SA's keying material and the
/// rekeyed SKEYSEED from that SK_d.
#[test]
fn ikev2_schedule_through_handles() {
    let f = Fixture::new();
    let s = f.user(f.token("ike"));
    let r = records("ike-cavp-sp800-135.txt");
    let gir = key(&s, CKK_GENERIC_SECRET, &unhex(&r[0]["base"]));
    let gir_new = key(&s, CKK_GENERIC_SECRET, &unhex(&r[3]["seedkey"]));
    let (ni, nr) = (unhex("3651fef5c9c35e93"), unhex("c09a8b90a3f04d59"));
    let mut p = IkeParam::prf(CKM_SHA_1_HMAC, true, false, &ni, &nr, 0);
    let skeyseed = derive_ike(s.handle(), &mut p.mechanism(), gir, &mut open(None)).unwrap();
    let seed = unhex(&r[1]["seed"]);
    let mut p = IkeParam::prf_plus(CKM_SHA_1_HMAC, None, &seed);
    let dkm = derive_ike(
        s.handle(),
        &mut p.mechanism(),
        skeyseed,
        &mut open(Some(132)),
    )
    .unwrap();
    assert_eq!(to_hex(&attr(&s, dkm, CKA_VALUE).unwrap()), r[1]["out"]);
    // SK_d: the first 20 bytes (bits 0..160).
    let mut first_bit: CK_ULONG = 0;
    let mut m = CK_MECHANISM {
        mechanism: CKM_EXTRACT_KEY_FROM_KEY,
        pParameter: (&mut first_bit as *mut CK_ULONG).cast(),
        ulParameterLen: size_of::<CK_ULONG>() as CK_ULONG,
    };
    let sk_d = derive_ike(s.handle(), &mut m, dkm, &mut open(Some(20))).unwrap();
    let nonces = [ni.clone(), nr.clone()].concat();
    let mut p = IkeParam::prf_plus(CKM_SHA_1_HMAC, None, &nonces);
    let child = derive_ike(s.handle(), &mut p.mechanism(), sk_d, &mut open(Some(132))).unwrap();
    assert_eq!(to_hex(&attr(&s, child, CKA_VALUE).unwrap()), r[2]["out"]);
    let mut p = IkeParam::prf_plus(CKM_SHA_1_HMAC, Some(gir_new), &nonces);
    let child_dh = derive_ike(s.handle(), &mut p.mechanism(), sk_d, &mut open(Some(132))).unwrap();
    assert_eq!(to_hex(&attr(&s, child_dh, CKA_VALUE).unwrap()), r[3]["out"]);
    let mut p = IkeParam::prf(CKM_SHA_1_HMAC, false, true, &ni, &nr, gir_new);
    let rekeyed = derive_ike(s.handle(), &mut p.mechanism(), sk_d, &mut open(None)).unwrap();
    assert_eq!(to_hex(&attr(&s, rekeyed, CKA_VALUE).unwrap()), r[4]["out"]);
}

/// `bDataAsKey` with nonces longer than the HMAC block (the key is hashed
/// first, RFC 2104 §3), and prf+ over a long seed, checked live against
/// python3's hmac (an implementation nobody here wrote), for every PRF
/// family and several nonce lengths around the block sizes.
#[test]
fn long_nonces_cross_checked_with_python_hmac() {
    let f = Fixture::new();
    let s = f.user(f.token("ike"));
    let mut rng = Rng(0x1ce);
    let mut bytes = |n: usize| (0..n).map(|_| rng.next() as u8).collect::<Vec<u8>>();
    let script = "import hmac,hashlib,sys\n\
        h=getattr(hashlib,sys.argv[1]); k=bytes.fromhex(sys.argv[2]); d=bytes.fromhex(sys.argv[3]); n=int(sys.argv[4])\n\
        t=b''; out=b''; i=1\n\
        print(hmac.new(k,d,h).hexdigest())\n\
        while len(out)<n:\n    t=hmac.new(d,t+k+bytes([i]),h).digest(); out+=t; i+=1\n\
        print(out[:n].hex())";
    for (prf, py) in [
        (CKM_SHA_1_HMAC, "sha1"),
        (CKM_SHA256_HMAC, "sha256"),
        (CKM_SHA512_HMAC, "sha512"),
        (CKM_SHA3_256_HMAC, "sha3_256"),
    ] {
        for nonce_len in [31, 32, 33, 64, 65, 100, 253] {
            let (ni, nr) = (bytes(nonce_len), bytes(nonce_len + 3));
            let base_value = bytes(48);
            let base = key(&s, CKK_GENERIC_SECRET, &base_value);
            let mut p = IkeParam::prf(prf, true, false, &ni, &nr, 0);
            let got = derive_value(&s, &mut p, base, None).unwrap();
            // prf+ keyed by the same base over Ni | Nr as seed data.
            let seed = [ni.clone(), nr.clone()].concat();
            let mut plus = IkeParam::prf_plus(prf, None, &seed);
            let got_plus = derive_value(&s, &mut plus, base, Some(150)).unwrap();
            let want =
                python_cryptography(script, &[py, &to_hex(&seed), &to_hex(&base_value), "150"]);
            assert_eq!(to_hex(&got), want[0], "{py} nonces {nonce_len}");
            assert_eq!(to_hex(&got_plus), want[1], "{py} prf+ {nonce_len}");
        }
    }
}

/// `C_GetMechanismInfo`: derivation only, base keys of 1 to 512 bytes.
#[test]
fn mechanism_info() {
    let f = Fixture::new();
    let slot = f.token("ike");
    for ty in [
        CKM_IKE_PRF_DERIVE,
        CKM_IKE1_PRF_DERIVE,
        CKM_IKE1_EXTENDED_DERIVE,
        CKM_IKE2_PRF_PLUS_DERIVE,
    ] {
        let mut info = CK_MECHANISM_INFO::default();
        // SAFETY: a valid output structure.
        let rv = unsafe { raw().C_GetMechanismInfo.unwrap()(slot.id(), ty, &mut info) };
        assert_eq!(rv, CKR_OK);
        assert_eq!(
            (info.ulMinKeySize, info.ulMaxKeySize, info.flags),
            (1, 512, CKF_DERIVE),
            "{ty:#x}"
        );
    }
}

/// Malformed parameters are `CKR_MECHANISM_PARAM_INVALID`: both
/// `bDataAsKey` and `bRekey`, empty or over-long nonces and cookies, NULL
/// with a length, a PRF that is not a supported HMAC (AES-CMAC, MD5, a
/// `_GENERAL` HMAC, a digest), prf+ without any seed, over-long data, a
/// structure of the wrong size.
#[test]
fn malformed_parameters() {
    let f = Fixture::new();
    let s = f.user(f.token("ike"));
    let base = key(&s, CKK_GENERIC_SECRET, &[7; 32]);
    let gxy = key(&s, CKK_GENERIC_SECRET, &[8; 64]);
    let n8 = [1u8; 8];
    let long = vec![2u8; 257];
    let big = vec![3u8; 1025];
    let mut cases = vec![
        IkeParam::prf(CKM_SHA256_HMAC, true, true, &n8, &n8, gxy),
        IkeParam::prf(CKM_SHA256_HMAC, false, false, &[], &n8, 0),
        IkeParam::prf(CKM_SHA256_HMAC, false, false, &n8, &[], 0),
        IkeParam::prf(CKM_SHA256_HMAC, true, false, &long, &n8, 0),
        IkeParam::prf(CKM_AES_CMAC, false, false, &n8, &n8, 0),
        IkeParam::prf(CKM_MD5_HMAC, false, false, &n8, &n8, 0),
        IkeParam::prf(CKM_SHA256_HMAC_GENERAL, false, false, &n8, &n8, 0),
        IkeParam::prf(CKM_SHA256, false, false, &n8, &n8, 0),
        IkeParam::ike1_prf(CKM_SHA256_HMAC, gxy, None, &[], &n8, 0),
        IkeParam::ike1_prf(CKM_SHA256_HMAC, gxy, None, &n8, &long, 0),
        IkeParam::extended(CKM_SHA256_HMAC, None, &big),
        IkeParam::prf_plus(CKM_SHA256_HMAC, None, &[]),
        IkeParam::prf_plus(CKM_SHA256_HMAC, None, &big),
        IkeParam::prf_plus(CKM_AES_CMAC, None, &n8),
    ];
    // NULL with a length.
    if let IkeParam::Prf(p) = &mut cases[0] {
        p.bRekey = 0;
        p.pNi = std::ptr::null_mut();
    }
    for (i, p) in cases.iter_mut().enumerate() {
        assert_eq!(
            derive_ike(s.handle(), &mut p.mechanism(), base, &mut open(Some(16))),
            Err(CKR_MECHANISM_PARAM_INVALID),
            "case {i}"
        );
    }
    let mut both = IkeParam::prf(CKM_SHA256_HMAC, true, true, &n8, &n8, gxy);
    assert_eq!(
        derive_ike(s.handle(), &mut both.mechanism(), base, &mut open(Some(16))),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    // The wrong structure size, and no parameter at all.
    let mut p = IkeParam::prf_plus(CKM_SHA256_HMAC, None, &n8);
    let mut m = p.mechanism();
    m.ulParameterLen -= 8;
    assert_eq!(
        derive_ike(s.handle(), &mut m, base, &mut open(Some(16))),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    m.pParameter = std::ptr::null_mut();
    m.ulParameterLen = 0;
    assert_eq!(
        derive_ike(s.handle(), &mut m, base, &mut open(Some(16))),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
    // Nonces of 1 and 256 bytes are accepted (kryoptic wants at least 16).
    let max = vec![4u8; 256];
    let mut ok = IkeParam::prf(CKM_SHA256_HMAC, false, false, &[9], &max, 0);
    assert!(derive_value(&s, &mut ok, base, None).is_ok());
}

/// Output lengths: one PRF output at most (and by default) for the two
/// single-block mechanisms, a required length of at most 255 outputs (and
/// the 512-byte key limit) for prf+ and the IKEv1 expansion.
#[test]
fn output_lengths() {
    let f = Fixture::new();
    let s = f.user(f.token("ike"));
    let base = key(&s, CKK_GENERIC_SECRET, &[7; 32]);
    let gxy = key(&s, CKK_GENERIC_SECRET, &[8; 64]);
    let n8 = [1u8; 8];
    let mut p = IkeParam::prf(CKM_SHA256_HMAC, false, false, &n8, &n8, 0);
    assert_eq!(derive_value(&s, &mut p, base, None).unwrap().len(), 32);
    assert_eq!(
        derive_value(&s, &mut p, base, Some(33)),
        Err(CKR_KEY_SIZE_RANGE)
    );
    let mut p = IkeParam::ike1_prf(CKM_SHA_1_HMAC, gxy, None, &n8, &n8, 0);
    assert_eq!(derive_value(&s, &mut p, base, None).unwrap().len(), 20);
    assert_eq!(
        derive_value(&s, &mut p, base, Some(21)),
        Err(CKR_KEY_SIZE_RANGE)
    );
    for mut p in [
        IkeParam::prf_plus(CKM_SHA_1_HMAC, None, &n8),
        IkeParam::extended(CKM_SHA_1_HMAC, Some(gxy), &[]),
    ] {
        assert_eq!(
            derive_value(&s, &mut p, base, None),
            Err(CKR_TEMPLATE_INCOMPLETE)
        );
        assert_eq!(
            derive_value(&s, &mut p, base, Some(512)).unwrap().len(),
            512
        );
        assert_eq!(
            derive_value(&s, &mut p, base, Some(513)),
            Err(CKR_ATTRIBUTE_VALUE_INVALID)
        );
        assert_eq!(
            derive_value(&s, &mut p, base, Some(0)),
            Err(CKR_ATTRIBUTE_VALUE_INVALID)
        );
    }
    // An AES key of 32 bytes needs two SHA-1 blocks: fine by prf+, too long
    // for one PRF output.
    let aes = |len: Option<usize>| {
        let mut t = secret_template(len, &[(CKA_SENSITIVE, false)]);
        t[1].1 = CKK_AES.to_ne_bytes().to_vec();
        t
    };
    let mut plus = IkeParam::prf_plus(CKM_SHA_1_HMAC, None, &n8);
    assert!(derive_ike(s.handle(), &mut plus.mechanism(), base, &mut aes(None)).is_ok());
    let mut one = IkeParam::prf(CKM_SHA_1_HMAC, false, false, &n8, &n8, 0);
    assert_eq!(
        derive_ike(s.handle(), &mut one.mechanism(), base, &mut aes(None)),
        Err(CKR_KEY_SIZE_RANGE)
    );
}

/// Base keys: a generic secret or the PRF's HMAC key type; another HMAC
/// type or an AES key is `CKR_KEY_TYPE_INCONSISTENT`. Second keys: secret
/// keys that allow derivation; a missing handle is refused.
#[test]
fn key_types_and_second_keys() {
    let f = Fixture::new();
    let s = f.user(f.token("ike"));
    let n8 = [1u8; 8];
    let mut p = IkeParam::prf(CKM_SHA256_HMAC, false, false, &n8, &n8, 0);
    for (ty, want) in [
        (CKK_GENERIC_SECRET, CKR_OK),
        (CKK_SHA256_HMAC, CKR_OK),
        (CKK_SHA_1_HMAC, CKR_KEY_TYPE_INCONSISTENT),
        (CKK_AES, CKR_KEY_TYPE_INCONSISTENT),
    ] {
        let base = key(&s, ty, &[5; 32]);
        let got = derive_value(&s, &mut p, base, None).err().unwrap_or(CKR_OK);
        assert_eq!(got, want, "base type {ty:#x}");
    }
    let base = key(&s, CKK_GENERIC_SECRET, &[5; 32]);
    let mut p = IkeParam::ike1_prf(CKM_SHA256_HMAC, 0xdead, None, &n8, &n8, 0);
    assert_eq!(
        derive_value(&s, &mut p, base, None),
        Err(CKR_KEY_HANDLE_INVALID)
    );
    // A second key restricted to other mechanisms is refused as a base
    // would be; allowed this one, it serves.
    for (allowed, want) in [
        (CKM_HKDF_DERIVE, Err(CKR_MECHANISM_INVALID)),
        (CKM_IKE2_PRF_PLUS_DERIVE, Ok(())),
    ] {
        let seed_key = create(
            &s,
            vec![
                ul(CKA_CLASS, CKO_SECRET_KEY),
                ul(CKA_KEY_TYPE, CKK_GENERIC_SECRET),
                (CKA_VALUE, vec![6; 32]),
                flag(CKA_TOKEN, false),
                flag(CKA_DERIVE, true),
                flag(CKA_SENSITIVE, false),
                flag(CKA_EXTRACTABLE, true),
                (CKA_ALLOWED_MECHANISMS, allowed.to_ne_bytes().to_vec()),
            ],
        )
        .unwrap();
        let mut p = IkeParam::prf_plus(CKM_SHA256_HMAC, Some(seed_key), &n8);
        assert_eq!(
            derive_value(&s, &mut p, base, Some(32)).map(|_| ()),
            want,
            "allowed {allowed:#x}"
        );
    }
    // The base is not readable through bRekey with the base as its own new
    // key: the same rules, and a valid derivation.
    let mut p = IkeParam::prf(CKM_SHA256_HMAC, false, true, &n8, &n8, base);
    assert!(derive_value(&s, &mut p, base, None).is_ok());
}
