//! Ed25519, Ed25519ctx and Ed25519ph known answers (RFC 8032 §7.1–7.3)
//! through keys imported by value (mechanisms spec §2.3.5–2.3.6, 2.3.14).

use super::*;

#[test]
fn rfc8032_known_answers_through_imported_keys() {
    let f = Fixture::new();
    let slot = f.token("kat");
    let s = f.user(slot);
    let vectors = rfc8032();
    assert_eq!(vectors.len(), 4);
    for (i, v) in vectors.iter().enumerate() {
        let params = [OID, PRINTABLE, GNUPG_OID][i % 3];
        let private = import_private(&s, &v.secret, params);
        assert_eq!(
            s.sign(&eddsa(), private, &v.message).unwrap(),
            v.signature,
            "vector {i}"
        );
        // The public point computed from the secret matches the vector.
        let point = s
            .get_attributes(private, &[AttributeType::EcPoint])
            .unwrap();
        assert_eq!(
            point,
            vec![Attribute::EcPoint([&[0x04, 0x20][..], &v.public].concat())]
        );
        // Public key import: raw on odd vectors, DER on even ones.
        let encoded = if i % 2 == 0 {
            [&[0x04, 0x20][..], &v.public].concat()
        } else {
            v.public.clone()
        };
        let public = import_public(&s, &encoded, params);
        s.verify(&eddsa(), public, &v.message, &v.signature)
            .unwrap();
        let mut bad = v.signature.clone();
        bad[10] ^= 0x40;
        assert_rv!(
            s.verify(&eddsa(), public, &v.message, &bad),
            SignatureInvalid
        );
        assert_rv!(
            s.verify(&eddsa(), public, &v.message, &v.signature[..63]),
            SignatureLenRange
        );
        // Returned as DER whatever the import form.
        let stored = s.get_attributes(public, &[AttributeType::EcPoint]).unwrap();
        assert_eq!(
            stored,
            vec![Attribute::EcPoint([&[0x04, 0x20][..], &v.public].concat())]
        );
    }
}

/// RFC 8032 §7.2 (Ed25519ctx) through the C API: each vector's key is
/// imported, its signature reproduced byte for byte and verified; another
/// context, pure Ed25519 and a tampered signature are refused.
#[test]
fn rfc8032_ed25519ctx_through_imported_keys() {
    let f = Fixture::new();
    let slot = f.token("ctx");
    let s = f.user(slot);
    let k1 = "0305334e381af78f141cb666f6199f57bc3495335a256a95bd2a55bf546663f6";
    let p1 = "dfc9425e4f968f7f0c29f0259cf5f9aed6851c2bb4ad8bfb860cfee0ab248292";
    let m1 = "f726936d19c800494e3fdaff20b276a8";
    let vectors = [
        (
            k1,
            p1,
            m1,
            "foo",
            "55a4cc2f70a54e04288c5f4cd1e45a7bb520b36292911876cada7323198dd87a8b36950b95130022907a7fb7c4e9b2d5f6cca685a587b4b21f4b888e4e7edb0d",
        ),
        (
            k1,
            p1,
            m1,
            "bar",
            "fc60d5872fc46b3aa69f8b5b4351d5808f92bcc044606db097abab6dbcb1aee3216c48e8b3b66431b5b186d1d28f8ee15a5ca2df6668346291c2043d4eb3e90d",
        ),
        (
            k1,
            p1,
            "508e9e6882b979fea900f62adceaca35",
            "foo",
            "8b70c1cc8310e1de20ac53ce28ae6e7207f33c3295e03bb5c0732a1d20dc64908922a8b052cf99b7c4fe107a5abb5b2c4085ae75890d02df26269d8945f84b0b",
        ),
        (
            "ab9c2853ce297ddab85c993b3ae14bcad39b2c682beabc27d6d4eb20711d6560",
            "0f1d1274943b91415889152e893d80e93275a1fc0b65fd71b4b0dda10ad7d772",
            m1,
            "foo",
            "21655b5f1aa965996b3f97b3c849eafba922a0a62992f73b3d1b73106a84ad85e9b86a7b6005ea868337ff2d20a7f5fbd4cd10b0be49a68da2b2e0dc0ad8960f",
        ),
    ];
    for (sk, pk, msg, ctx, sig) in vectors {
        let (sk, pk, msg, sig) = (unhex(sk), unhex(pk), unhex(msg), unhex(sig));
        let private = import_private(&s, &sk, OID);
        let public = import_public(&s, &pk, PRINTABLE);
        let mech = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ctx(
            ctx.as_bytes(),
        )));
        assert_eq!(s.sign(&mech, private, &msg).unwrap(), sig, "context {ctx}");
        s.verify(&mech, public, &msg, &sig).unwrap();
        // Multi-part gives the same signature.
        s.sign_init(&mech, private).unwrap();
        s.sign_update(&msg[..5]).unwrap();
        s.sign_update(&msg[5..]).unwrap();
        assert_eq!(s.sign_final().unwrap(), sig);
        let other = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ctx(b"baz")));
        assert_rv!(s.verify(&other, public, &msg, &sig), SignatureInvalid);
        assert_rv!(s.verify(&eddsa(), public, &msg, &sig), SignatureInvalid);
        let mut bad = sig.clone();
        bad[10] ^= 0x20;
        assert_rv!(s.verify(&mech, public, &msg, &bad), SignatureInvalid);
    }
}

/// RFC 8032 §7.3 (Ed25519ph, "abc") through the C API: single-part,
/// multi-part (streamed into SHA-512) and verification; another context,
/// pure Ed25519 and a tampered signature are refused; a context over 255
/// bytes is a parameter error.
#[test]
fn rfc8032_ed25519ph_through_imported_keys() {
    let f = Fixture::new();
    let slot = f.token("ph");
    let s = f.user(slot);
    let sk = unhex("833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42");
    let pk = unhex("ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf");
    let sig = unhex(
        "98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae4131f85042463c2a355a2003d062adf5aaa10b8c61e636062aaad11c2a26083406",
    );
    let private = import_private(&s, &sk, PRINTABLE);
    let public = import_public(&s, &pk, OID);
    let ph = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ph(&[])));
    assert_eq!(s.sign(&ph, private, b"abc").unwrap(), sig);
    s.sign_init(&ph, private).unwrap();
    for part in [&b"a"[..], b"b", b"", b"c"] {
        s.sign_update(part).unwrap();
    }
    assert_eq!(s.sign_final().unwrap(), sig);
    s.verify(&ph, public, b"abc", &sig).unwrap();
    s.verify_init(&ph, public).unwrap();
    s.verify_update(b"ab").unwrap();
    s.verify_update(b"c").unwrap();
    s.verify_final(&sig).unwrap();
    // A long message streams: multi-part equals single-part.
    let long: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    let one = s.sign(&ph, private, &long).unwrap();
    s.sign_init(&ph, private).unwrap();
    for chunk in long.chunks(4096) {
        s.sign_update(chunk).unwrap();
    }
    assert_eq!(s.sign_final().unwrap(), one);
    s.verify(&ph, public, &long, &one).unwrap();
    let ctx = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ph(b"ctx")));
    assert_rv!(s.verify(&ctx, public, b"abc", &sig), SignatureInvalid);
    assert_rv!(s.verify(&eddsa(), public, b"abc", &sig), SignatureInvalid);
    let mut bad = sig.clone();
    bad[63] ^= 1;
    assert_rv!(s.verify(&ph, public, b"abc", &bad), SignatureInvalid);
    let with_ctx = s.sign(&ctx, private, b"abc").unwrap();
    s.verify(&ctx, public, b"abc", &with_ctx).unwrap();
    assert_rv!(s.verify(&ph, public, b"abc", &with_ctx), SignatureInvalid);
    let too_long = [7u8; 256];
    let bad_param = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ph(&too_long)));
    assert_rv!(s.sign(&bad_param, private, b"abc"), MechanismParamInvalid);
    let bad_ctx = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ctx(
        &too_long,
    )));
    assert_rv!(s.sign(&bad_ctx, private, b"abc"), MechanismParamInvalid);
    // phFlag false with an empty context is pure Ed25519.
    let empty_ctx = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ctx(&[])));
    assert_eq!(
        s.sign(&empty_ctx, private, b"abc").unwrap(),
        s.sign(&eddsa(), private, b"abc").unwrap()
    );
}
