//! NIST ACVP ML-KEM encapDecap vectors (FIPS 203, vsId 42,
//! tests/data/acvp/README.md) through the module. Every case's dk is
//! imported with `C_CreateObject` (`CKA_VALUE`, with the §7.3 checks), its
//! ek with another, and the case's ciphertext is decapsulated with
//! `C_DecapsulateKey` into a readable generic secret, which must be the
//! case's K: the encapsulation cases' ciphertexts, and the decapsulation
//! cases', half of them modified (implicit rejection: K̄ = J(z ‖ c)). The
//! encapsulation cases' randomness m cannot be passed through the C API:
//! the unit tests encapsulate with it (src/mechanisms/mlkem/tests_acvp.rs).

use super::known_answers::ek_of;
use super::*;

#[test]
fn acvp_encap_decap_ciphertexts_decapsulate_through_the_module() {
    let doc = acvp("ML-KEM-encapDecap-FIPS203-subset.json.gz");
    let f = Fixture::new();
    let s = f.user(f.token("acvp-encap-decap"));
    let mut outcomes = std::collections::BTreeMap::<(String, String), u32>::new();
    for group in doc["testGroups"].as_array().unwrap() {
        let (set, ek_len, ..) = match group["parameterSet"].as_str().unwrap() {
            "ML-KEM-512" => SETS[0],
            "ML-KEM-768" => SETS[1],
            "ML-KEM-1024" => SETS[2],
            other => panic!("{other}"),
        };
        for t in group["tests"].as_array().unwrap() {
            let id = &t["tcId"];
            // The decapsulation groups hold one key for all their cases.
            let field = |k: &str| unhex(t[k].as_str().or(group[k].as_str()).unwrap());
            let (ek, dk) = (field("ek"), field("dk"));
            let private = import_private(&s, set, &[Attribute::Value(dk)]).unwrap();
            assert_eq!(ek_of(&s, private, ek_len), ek, "tc {id}");
            let public = import_public(&s, set, &ek).unwrap();
            assert_eq!(bytes_of(&s, public, AttributeType::Value), ek, "tc {id}");
            let k = decapsulated_value(&s, private, &field("c"));
            assert_eq!(k, field("k"), "tc {id}");
            s.destroy_object(private).unwrap();
            s.destroy_object(public).unwrap();
            let kind = (
                group["function"].as_str().unwrap().to_owned(),
                t["reason"].as_str().unwrap().to_owned(),
            );
            *outcomes.entry(kind).or_default() += 1;
        }
    }
    let outcomes: Vec<_> = outcomes
        .iter()
        .map(|((f, r), n)| (f.as_str(), r.as_str(), *n))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("decapsulation", "modify ciphertext", 15),
            ("decapsulation", "no modification", 15),
            ("encapsulation", "no modification", 24),
        ]
    );
}
