//! NIST ACVP ML-DSA keyGen vectors (FIPS 204, `tests/data/acvp`) through
//! the module: each seed ξ imported with `C_CreateObject` must give the
//! vector's public key (in `CKA_PUBLIC_KEY_INFO`) and expanded private key
//! (`CKA_VALUE`).

use super::*;
use std::io::Read;

#[test]
fn acvp_key_generation_from_the_seed() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/acvp/ML-DSA-keyGen-FIPS204.json.gz"
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let f = Fixture::new();
    let s = f.user(f.token("acvp"));
    let mut checked = 0;
    for group in doc["testGroups"].as_array().unwrap() {
        let set = match group["parameterSet"].as_str().unwrap() {
            "ML-DSA-44" => MlDsaParameterSetType::ML_DSA_44,
            "ML-DSA-65" => MlDsaParameterSetType::ML_DSA_65,
            "ML-DSA-87" => MlDsaParameterSetType::ML_DSA_87,
            other => panic!("{other}"),
        };
        for t in group["tests"].as_array().unwrap() {
            let hex = |k: &str| unhex(t[k].as_str().unwrap());
            let k = s
                .create_object(&[
                    Attribute::Class(ObjectClass::PRIVATE_KEY),
                    Attribute::KeyType(KeyType::ML_DSA),
                    Attribute::ParameterSet(set.into()),
                    Attribute::Seed(hex("seed")),
                    Attribute::Sensitive(false),
                    Attribute::Extractable(true),
                ])
                .unwrap();
            let pk = hex("pk");
            assert_eq!(
                bytes_of(&s, k, AttributeType::Value),
                hex("sk"),
                "tcId {}",
                t["tcId"]
            );
            assert!(
                bytes_of(&s, k, AttributeType::PublicKeyInfo).ends_with(&pk),
                "tcId {}",
                t["tcId"]
            );
            s.destroy_object(k).unwrap();
            checked += 1;
        }
    }
    assert_eq!(checked, 75);
}
