//! NIST ACVP ML-KEM encapsulation vectors (FIPS 203 encapDecap, vsId 42,
//! the AFT cases: tests/data/acvp/README.md). ML-KEM.Encaps takes fresh
//! randomness m, which the C API cannot fix, so the cases' m runs here
//! through `PublicKey::encapsulate_with` (ML-KEM.Encaps_internal) on the
//! key as the token decodes it (with the §7.2 modulus check). The
//! decapsulation side of the same file runs through the module
//! (tests/mlkem/acvp.rs).

use super::key::PublicKey;
use super::params::ParamSet;
use crate::mechanisms::test_util::{acvp, acvp_bytes as hex};

const ENCAP_DECAP: &[u8] =
    include_bytes!("../../../tests/data/acvp/ML-KEM-encapDecap-FIPS203-subset.json.gz");

#[test]
fn acvp_encapsulation_with_the_given_m_gives_the_ciphertext_and_secret() {
    let file = acvp(ENCAP_DECAP);
    let mut checked = 0;
    for group in file["testGroups"].as_array().unwrap() {
        if group["function"] != "encapsulation" {
            continue;
        }
        let set = match group["parameterSet"].as_str().unwrap() {
            "ML-KEM-512" => ParamSet::P512,
            "ML-KEM-768" => ParamSet::P768,
            "ML-KEM-1024" => ParamSet::P1024,
            other => panic!("{other}"),
        };
        for t in group["tests"].as_array().unwrap() {
            let key = PublicKey::decode(set, &hex(&t["ek"])).unwrap();
            let m: [u8; 32] = hex(&t["m"]).try_into().unwrap();
            let (ct, k) = key.encapsulate_with(&m);
            assert_eq!(ct, hex(&t["c"]), "tc {}", t["tcId"]);
            assert_eq!(k[..], hex(&t["k"]), "tc {}", t["tcId"]);
            checked += 1;
        }
    }
    assert_eq!(checked, 24);
}
