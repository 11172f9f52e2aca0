//! The simple derivations (PKCS #11 3.0 mechanisms spec §2.42:
//! concatenation, XOR, extraction; §2.16.12: AES encryption of data) and
//! the protection a key derived by them keeps.

use super::*;

/// A secret key of `key_type` holding `value`, with the given protection.
fn key_with(
    s: &Session,
    key_type: KeyType,
    value: &[u8],
    sensitive: bool,
    extractable: bool,
) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(key_type),
        Attribute::Value(value.to_vec()),
        Attribute::Derive(true),
        Attribute::Sensitive(sensitive),
        Attribute::Extractable(extractable),
        Attribute::Token(false),
    ])
    .unwrap()
}

/// Template of an extractable generic secret, of `len` bytes or (`None`)
/// whatever the derivation gives.
fn open_of(len: Option<u64>) -> Vec<Attribute> {
    let mut t = open_secret(len.unwrap_or(0));
    if len.is_none() {
        t.retain(|a| a.attribute_type() != AttributeType::ValueLen);
    }
    t
}

/// §2.42: concatenation with a key or data, XOR, extraction (the spec's own
/// example), lengths taken from the leading bytes.
#[test]
fn simple_derivations_compute_what_the_spec_says() {
    let f = Fixture::new();
    let slot = f.token("simple");
    let s = f.user(slot);
    let a = key_with(&s, KeyType::GENERIC_SECRET, b"abc", false, true);
    let b = key_with(&s, KeyType::GENERIC_SECRET, b"defg", false, true);
    let derive = |m: &Mechanism, base, len| s.derive_key(m, base, &open_of(len));
    let k = derive(&Mechanism::ConcatenateBaseAndKey(b), a, None).unwrap();
    assert_eq!(value(&s, k), b"abcdefg");
    let k = derive(&Mechanism::ConcatenateBaseAndKey(b), a, Some(4)).unwrap();
    assert_eq!(value(&s, k), b"abcd");
    assert_rv!(
        derive(&Mechanism::ConcatenateBaseAndKey(b), a, Some(8)),
        TemplateInconsistent
    );
    let data = KeyDerivationStringData::new(b"XYZ");
    let k = derive(&Mechanism::ConcatenateBaseAndData(data), a, None).unwrap();
    assert_eq!(value(&s, k), b"abcXYZ");
    let k = derive(&Mechanism::ConcatenateDataAndBase(data), a, None).unwrap();
    assert_eq!(value(&s, k), b"XYZabc");
    let mask = KeyDerivationStringData::new(&[0x20, 0x20]);
    let k = derive(&Mechanism::XorBaseAndData(mask), a, None).unwrap();
    assert_eq!(value(&s, k), b"AB");
    let spec = key_with(
        &s,
        KeyType::GENERIC_SECRET,
        &[0x32, 0x9F, 0x84, 0xA9],
        false,
        true,
    );
    let k = derive(
        &Mechanism::ExtractKeyFromKey(ExtractParams::new(21)),
        spec,
        Some(2),
    )
    .unwrap();
    assert_eq!(value(&s, k), [0x95, 0x26]);
    assert_rv!(
        derive(
            &Mechanism::ExtractKeyFromKey(ExtractParams::new(21)),
            spec,
            None
        ),
        TemplateIncomplete
    );
    assert_rv!(
        derive(
            &Mechanism::ExtractKeyFromKey(ExtractParams::new(32)),
            spec,
            Some(2)
        ),
        MechanismParamInvalid
    );
    // The second key must allow derivation; data is bounded.
    let no_derive = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"zz".to_vec()),
            Attribute::Token(false),
        ])
        .unwrap();
    assert_rv!(
        derive(&Mechanism::ConcatenateBaseAndKey(no_derive), a, None),
        KeyFunctionNotPermitted
    );
    let long = vec![1u8; 513];
    assert_rv!(
        derive(
            &Mechanism::XorBaseAndData(KeyDerivationStringData::new(&long)),
            a,
            None
        ),
        MechanismParamInvalid
    );
}

/// `C_DeriveKey` with a raw mechanism and parameter (cryptoki has no
/// `CKM_AES_ECB_ENCRYPT_DATA`).
fn raw_derive(
    s: &Session,
    mech: cryptoki_sys::CK_MECHANISM_TYPE,
    param: &mut [u8],
    base: ObjectHandle,
    len: u64,
) -> Result<ObjectHandle, cryptoki_sys::CK_RV> {
    use cryptoki_sys::*;
    raw_derive_with(
        s,
        mech,
        param,
        base,
        &mut [
            (CKA_CLASS, ulong_bytes(CKO_SECRET_KEY)),
            (CKA_KEY_TYPE, ulong_bytes(CKK_GENERIC_SECRET)),
            (CKA_VALUE_LEN, ulong_bytes(len as CK_ULONG)),
            (CKA_EXTRACTABLE, vec![1]),
            (CKA_SENSITIVE, vec![0]),
            (CKA_TOKEN, vec![0]),
        ],
    )
}

/// §2.16.12: the derived value is AES-ECB / AES-CBC of the data under the
/// base key (NIST SP 800-38A F.1.1 and F.2.1 as the known answers).
#[test]
fn aes_encrypt_data_derivations_match_sp800_38a() {
    let f = Fixture::new();
    let slot = f.token("encdata");
    let s = f.user(slot);
    let base = key_with(
        &s,
        KeyType::AES,
        &unhex("2b7e151628aed2a6abf7158809cf4f3c"),
        false,
        true,
    );
    let mut plain = unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51");
    let iv: [u8; 16] = unhex("000102030405060708090a0b0c0d0e0f")
        .try_into()
        .unwrap();
    let k = s
        .derive_key(
            &Mechanism::AesCbcEncryptData(AesCbcDeriveParams::new(iv, &plain)),
            base,
            &open_of(Some(32)),
        )
        .unwrap();
    assert_eq!(
        value(&s, k),
        unhex("7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2")
    );
    // CK_KEY_DERIVATION_STRING_DATA over the plaintext.
    let mut string = cryptoki_sys::CK_KEY_DERIVATION_STRING_DATA {
        pData: plain.as_mut_ptr(),
        ulLen: plain.len() as cryptoki_sys::CK_ULONG,
    };
    // SAFETY: viewing a plain C struct as bytes for the raw call.
    let param = unsafe {
        std::slice::from_raw_parts_mut(
            (&mut string as *mut cryptoki_sys::CK_KEY_DERIVATION_STRING_DATA).cast::<u8>(),
            std::mem::size_of::<cryptoki_sys::CK_KEY_DERIVATION_STRING_DATA>(),
        )
    };
    let k = raw_derive(&s, cryptoki_sys::CKM_AES_ECB_ENCRYPT_DATA, param, base, 32).unwrap();
    assert_eq!(
        value(&s, k),
        unhex("3ad77bb40d7a3660a89ecaf32466ef97f5d3d58503b9699de785895a96fdbaaf")
    );
    // Leading bytes for a shorter key; whole blocks only; AES bases only.
    let k = raw_derive(&s, cryptoki_sys::CKM_AES_ECB_ENCRYPT_DATA, param, base, 16).unwrap();
    assert_eq!(value(&s, k), unhex("3ad77bb40d7a3660a89ecaf32466ef97"));
    // A key longer than the encrypted data: the data is too short.
    assert_eq!(
        raw_derive(
            &s,
            cryptoki_sys::CKM_AES_ECB_ENCRYPT_DATA,
            &mut param[..],
            base,
            48
        )
        .unwrap_err(),
        cryptoki_sys::CKR_MECHANISM_PARAM_INVALID
    );
    let generic = key_with(&s, KeyType::GENERIC_SECRET, &[1; 16], false, true);
    assert_eq!(
        raw_derive(
            &s,
            cryptoki_sys::CKM_AES_ECB_ENCRYPT_DATA,
            param,
            generic,
            16
        )
        .unwrap_err(),
        cryptoki_sys::CKR_KEY_TYPE_INCONSISTENT
    );
    assert_rv!(
        s.derive_key(
            &Mechanism::AesCbcEncryptData(AesCbcDeriveParams::new(iv, &plain[..20])),
            base,
            &open_of(Some(16)),
        ),
        MechanismParamInvalid
    );
}

/// §2.42: a key derived by a simple function of its bases is at least as
/// protected as each of them, whatever the template asks; its
/// `CKA_ALWAYS_SENSITIVE` / `CKA_NEVER_EXTRACTABLE` need both bases'.
#[test]
fn simple_derivations_never_loosen_the_bases_protection() {
    let f = Fixture::new();
    let slot = f.token("loosen");
    let s = f.user(slot);
    let open = key_with(&s, KeyType::GENERIC_SECRET, b"open", false, true);
    let sensitive = key_with(&s, KeyType::GENERIC_SECRET, b"secret", true, true);
    let locked = key_with(&s, KeyType::GENERIC_SECRET, b"locked", false, false);
    let read = |k| {
        s.get_attributes(k, &[AttributeType::Sensitive, AttributeType::Extractable])
            .unwrap()
    };
    let data = KeyDerivationStringData::new(b"d");
    for (base, second, sens, extr) in [
        (sensitive, None, true, true),
        (locked, None, false, false),
        (open, Some(sensitive), true, true),
        (open, Some(locked), false, false),
        (open, Some(open), false, true),
    ] {
        let mech = match second {
            Some(k) => Mechanism::ConcatenateBaseAndKey(k),
            None => Mechanism::ConcatenateBaseAndData(data),
        };
        let k = s.derive_key(&mech, base, &open_of(None)).unwrap();
        assert_eq!(
            read(k),
            vec![Attribute::Sensitive(sens), Attribute::Extractable(extr)]
        );
        // cryptoki leaves out what the module calls sensitive.
        let revealed = s.get_attributes(k, &[AttributeType::Value]).unwrap();
        assert_eq!(revealed.is_empty(), sens || !extr);
    }
    // History: both bases generated sensitive and unextractable.
    let generate = || {
        s.generate_key(
            &Mechanism::GenericSecretKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::Derive(true),
                Attribute::Sensitive(true),
                Attribute::Extractable(false),
                Attribute::Token(false),
            ],
        )
        .unwrap()
    };
    let (g1, g2) = (generate(), generate());
    let k = s
        .derive_key(&Mechanism::ConcatenateBaseAndKey(g2), g1, &open_of(None))
        .unwrap();
    assert_eq!(flags(&s, k), (true, true));
    let k = s
        .derive_key(&Mechanism::ConcatenateBaseAndKey(open), g1, &open_of(None))
        .unwrap();
    assert_eq!(flags(&s, k), (false, false));
}

/// The DES encryption-of-data derivations: FIPS 81 appendix B (ECB and CBC,
/// "Now is the time for all " under 0123456789abcdef) for single DES, the
/// SP 800-67 Rev. 2 example block for three-key Triple DES, Triple-DES CBC
/// against `C_Encrypt` with `CKM_DES3_CBC`; whole blocks, matching key types.
#[test]
fn des_encrypt_data_derivations_match_fips81() {
    use cryptoki_sys::*;
    let f = Fixture::new();
    let slot = f.token("desdata");
    let s = f.user(slot);
    let des = key_with(&s, KeyType::DES, &unhex("0123456789abcdef"), false, true);
    let mut plain = b"Now is the time for all ".to_vec();
    let iv: [u8; 8] = unhex("1234567890abcdef").try_into().unwrap();
    let mut ecb = des_encrypt_data_param(None, &mut plain);
    let k = raw_derive(&s, CKM_DES_ECB_ENCRYPT_DATA, &mut ecb, des, 24).unwrap();
    assert_eq!(
        value(&s, k),
        unhex("3fa40e8a984d48156a271787ab8883f9893d51ec4b563b53")
    );
    let mut cbc = des_encrypt_data_param(Some(iv), &mut plain);
    let k = raw_derive(&s, CKM_DES_CBC_ENCRYPT_DATA, &mut cbc, des, 24).unwrap();
    assert_eq!(
        value(&s, k),
        unhex("e5c7cdde872bf27c43e934008c389c0f683788499a7c05f6")
    );
    let k = raw_derive(&s, CKM_DES_CBC_ENCRYPT_DATA, &mut cbc, des, 8).unwrap();
    assert_eq!(value(&s, k), unhex("e5c7cdde872bf27c"));
    // Whole blocks only; longer than the data is the data's fault.
    let mut short = des_encrypt_data_param(Some(iv), &mut plain[..12]);
    assert_eq!(
        raw_derive(&s, CKM_DES_CBC_ENCRYPT_DATA, &mut short, des, 8).unwrap_err(),
        CKR_MECHANISM_PARAM_INVALID
    );
    assert_eq!(
        raw_derive(&s, CKM_DES_ECB_ENCRYPT_DATA, &mut ecb, des, 32).unwrap_err(),
        CKR_MECHANISM_PARAM_INVALID
    );
    // A DES3 mechanism takes no single-DES key, and the reverse.
    assert_eq!(
        raw_derive(&s, CKM_DES3_ECB_ENCRYPT_DATA, &mut ecb, des, 8).unwrap_err(),
        CKR_KEY_TYPE_INCONSISTENT
    );
    let des3_value = unhex("0123456789abcdef23456789abcdef01456789abcdef0123");
    let des3 = key_with(&s, KeyType::DES3, &des3_value, false, true);
    assert_eq!(
        raw_derive(&s, CKM_DES_ECB_ENCRYPT_DATA, &mut ecb, des3, 8).unwrap_err(),
        CKR_KEY_TYPE_INCONSISTENT
    );
    let mut quick = b"The qufc".to_vec();
    let mut ecb3 = des_encrypt_data_param(None, &mut quick);
    let k = raw_derive(&s, CKM_DES3_ECB_ENCRYPT_DATA, &mut ecb3, des3, 8).unwrap();
    assert_eq!(value(&s, k), unhex("a826fd8ce53b855f"));
    let mut cbc3 = des_encrypt_data_param(Some(iv), &mut plain);
    let k = raw_derive(&s, CKM_DES3_CBC_ENCRYPT_DATA, &mut cbc3, des3, 24).unwrap();
    let encrypter = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::DES3),
            Attribute::Value(des3_value.clone()),
            Attribute::Encrypt(true),
        ])
        .unwrap();
    assert_eq!(
        value(&s, k),
        s.encrypt(&Mechanism::Des3Cbc(iv), encrypter, &plain)
            .unwrap()
    );
}
