//! NIST SP 800-108 KDFs (PKCS #11 3.0 mechanisms spec §2.42) against the
//! NIST CAVP KBKDF vectors: counter, feedback and double-pipeline modes.

use super::*;

/// Counter mode against NIST CAVP KBKDF vectors (SP 800-108 CAVS,
/// KDFCTR_gen.rsp, COUNT=0 of each group): HMAC-SHA256 with 8/16/24/32-bit
/// counters before the fixed data; AES-CMAC (AES-128) with 8/16/32-bit
/// counters before the fixed data (multi-block outputs), and AES-192 with a
/// 32-bit counter after the fixed data.
#[test]
fn sp800_108_counter_mode_cavp_vectors() {
    let f = Fixture::new();
    let slot = f.token("kbkdf-ctr");
    let s = f.user(slot);
    // (PRF, counter bits, counter after fixed data, KI, fixed input, KO)
    let vectors = [
        (
            CKM_SHA256_HMAC,
            8,
            false,
            "3edc6b5b8f7aadbd713732b482b8f979286e1ea3b8f8f99c30c884cfe3349b83",
            "98e9988bb4cc8b34d7922e1c68ad692ba2a1d9ae15149571675f17a77ad49e80c8d2a85e831a26445b1f0ff44d7084a17206b4896c8112daad18605a",
            "6c037652990674a07844732d0ad985f9",
        ),
        (
            CKM_SHA256_HMAC,
            16,
            false,
            "743434c930fe923c350ec202bef28b768cd6062cf233324e21a86c31f9406583",
            "9bdb8a454bd55ab30ced3fd420fde6d946252c875bfe986ed34927c7f7f0b106dab9cc85b4c702804965eb24c37ad883a8f695587a7b6094d3335bbc",
            "19c8a56db1d2a9afb793dc96fbde4c31",
        ),
        (
            CKM_SHA256_HMAC,
            24,
            false,
            "388e93e0273e62f086f52f6f5369d9e4626d143dce3b6afc7caf2c6e7344276b",
            "697bb34b3fbe6853864cac3e1bc6c8c44a4335565479403d949fcbb5e2c1795f9a3849df743389d1a99fe75ef566e6227c591104122a6477dd8e8c8e",
            "d697442b3dd51f96cae949586357b9a6",
        ),
        (
            CKM_SHA256_HMAC,
            32,
            false,
            "dd1d91b7d90b2bd3138533ce92b272fbf8a369316aefe242e659cc0ae238afe0",
            "01322b96b30acd197979444e468e1c5c6859bf1b1cf951b7e725303e237e46b864a145fab25e517b08f8683d0315bb2911d80a0e8aba17f3b413faac",
            "10621342bfb0fd40046c0e29f2cfdbf0",
        ),
        (
            CKM_AES_CMAC,
            8,
            false,
            "bb31eef5a2ca3bfb342c5800fee67313",
            "f85ae18f15ce1a5e036d6e3fd227243a9863f88ef532ce1da810b6639c0928f9b99fe909487d3748cff857cdb790f89e09d8c634dccb616cf7a2663a",
            "8923d38effde99e24f67dec9330c4f1b874fc382ad644140e73a8e406f405d3fe4b4730b7291275a",
        ),
        (
            CKM_AES_CMAC,
            16,
            false,
            "e688c545e5ea41547f7817e484434980",
            "321fbaf2f7f56e43b289e9f57c7d80c14335e612041d84cce9eb4f35ec7aaf9204b5b985709c079f8193124f6bb70f9f2d3d6957b3d2f5a280db6125",
            "f92d496653c757d046ada7535baee4b8b3054cc40fbef4f98776a40c37dc86bafe62d5c74ad33a35",
        ),
        (
            CKM_AES_CMAC,
            32,
            false,
            "009300d265d1f1b28b505dccc162f4f8",
            "5ac373d42ed92427d8ff6cfff7eae13d66d3c7e536cc749859e2a49e3eea2ad846c9fbb7ddd99a1e6a54a89a87db98db6b8229f577b552e09aeed5e6",
            "c666d91f931606882bf214ebe79cd25a02810c7ab6ced75cd3fabd027f0de54e",
        ),
        (
            CKM_AES_CMAC,
            32,
            true,
            "5a1ea452525f99f61bf2f2e680a5856b3263bdcfe4c3f8ba",
            "f93a88be1591168a677030e5d2b61f220d959722b7292d65a25c43f0c99db4bdc76248be329ee31052d216295961d0fae59ebf46939129324639dac6",
            "32df46ca9aae3c0c71681d667c8bf7b454f758e2797391a959c43ff5695399ab6f2e7ce44663db53",
        ),
    ];
    for (i, (prf, bits, after, ki, fixed, ko)) in vectors.into_iter().enumerate() {
        let (ki, fixed, ko) = (unhex(ki), unhex(fixed), unhex(ko));
        let base = if prf == CKM_AES_CMAC {
            sp800_108::aes(&s, &ki)
        } else {
            secret(&s, &ki, true)
        };
        let fmt = ctr(bits, false);
        let data = if after {
            vec![bytes(&fixed), iter_ctr(&fmt)]
        } else {
            vec![iter_ctr(&fmt), bytes(&fixed)]
        };
        let k = Kdf {
            ty: CKM_SP800_108_COUNTER_KDF,
            prf,
            data,
            iv: None,
        };
        let got = sp800_108::derive(&s, &k, base, &[ko.len() as u64]).unwrap();
        assert_eq!(got[0], ko, "vector {i}");
        // The counter's place matters: the other place gives another key.
        let other = if after {
            vec![iter_ctr(&fmt), bytes(&fixed)]
        } else {
            vec![bytes(&fixed), iter_ctr(&fmt)]
        };
        let k = Kdf { data: other, ..k };
        assert_ne!(
            sp800_108::derive(&s, &k, base, &[ko.len() as u64]).unwrap()[0],
            ko
        );
    }
}

/// Feedback mode against NIST CAVP KBKDF vectors (FeedbackModenocounter /
/// FeedbackModeNOzeroiv style, AES-128 CMAC, L=512): no counter with and
/// without an IV, and a 32-bit optional counter before the iteration
/// variable, after it, and after the fixed data.
#[test]
fn sp800_108_feedback_mode_cavp_vectors() {
    let f = Fixture::new();
    let slot = f.token("kbkdf-fb");
    let s = f.user(slot);
    // (KI, IV, fixed input, counter place: 0 none, 1 before iteration
    // variable, 2 after it, 3 after fixed data, KO)
    let vectors = [
        (
            "5c996c922f65de97d4408373229814c6",
            "28dc945cb8337ab5336c3e9b5bad21c7",
            "62afe5fed91e797221a854336b0aadd8a05ad0e3c8345729897b2efcec5a1178a2fa4c063007b67a7015e0d6b7271ea8d86b44",
            0,
            "88a9aae193abdd3fe8143bab66014ae41dc2d12ea9d08f5871588fc5d827924eb9942989d7a36d4b3b107997566472cad5942bd13cb5cff32b9dae30f1bb6300",
        ),
        (
            "3a139e1aa922d3373b2674e303a6cc59",
            "",
            "4d91720a2cff429fc1c0b79e845c5029b3c9535935cbeee5808dea82b8453ffcbed8f54e44500fd82ded679f843c569297ed82",
            0,
            "2c9b849dc36efc1aff45030cf2288eba71faf176172a2688576605bc5f4f66a95850b096c2f9a4416eb743f8d14f8ba4cffbdc3174f63ca861765dc8f5dab59a",
        ),
        (
            "fc126023dfc9fb6cd56fc5602c05657c",
            "a736f838049448e04845b6b0ec2d6f63",
            "8068d7b98b8c4528ae8555ab5ae67c71a92b664245ec7d333b22479c5072421e7239761494e45eff09297737a1bb2c39fe9f1f",
            1,
            "b9824ad55e6913151a3f736f5fd6bf0807e1acb8c7ed0082df138ba1cc0e6db3c667c8abae707cdf920f48bf77765437407b564333796c037b0378f8f431114c",
        ),
        (
            "607a069650470c92021850add7506fed",
            "bcc557c72df7ed5163e39bf201d2354f",
            "d465d19beb40b57d51eb30f9b8170f33a07ffbf03e41b6ade6338cb85d75b910bc0af62e3a228bacaf68eb099d1d315ce09395",
            2,
            "d5741964649e1a4f825493f933cdc02a8edb6001a3986050cf7511184e4794cdec967e631d5b323f39315bf4bd2c45b692d632dfb6bdb86d509845fe63df550d",
        ),
        (
            "1edbd1bb1ff8abda4cb51d656ac83405",
            "0b847773cd50a9984653a8d7bffe41e1",
            "a74a8c3b5b6c504f1b72b0f22ed380de8eff38f541d0991dd2f54c2259a2ea9e6907a3528e6fd5591aff710685308adc97d423",
            3,
            "f6f3c5a17ef294e1818e5a4a7b3194f728fb65befba2083ca8ba0a2585db4c08f8f5a5e0b4f94fb3cf640255277cddf628542693debf34ec1f7d2d1612c233be",
        ),
    ];
    let fmt = ctr(32, false);
    for (i, (ki, iv, fixed, place, ko)) in vectors.into_iter().enumerate() {
        let (ki, iv, fixed, ko) = (unhex(ki), unhex(iv), unhex(fixed), unhex(ko));
        let base = sp800_108::aes(&s, &ki);
        let data = match place {
            0 => vec![iter(), bytes(&fixed)],
            1 => vec![counter(&fmt), iter(), bytes(&fixed)],
            2 => vec![iter(), counter(&fmt), bytes(&fixed)],
            _ => vec![iter(), bytes(&fixed), counter(&fmt)],
        };
        let k = Kdf {
            ty: CKM_SP800_108_FEEDBACK_KDF,
            prf: CKM_AES_CMAC,
            data,
            iv: if iv.is_empty() { None } else { Some(&iv) },
        };
        let got = sp800_108::derive(&s, &k, base, &[ko.len() as u64]).unwrap();
        assert_eq!(got[0], ko, "vector {i}");
    }
}

/// Double-pipeline mode against NIST CAVP KBKDF vectors
/// (PipelineModeWOCounter / PipelineModewithCounter style, AES-128 CMAC,
/// L=512): A(0) is the fixed input data; no counter, and a 32-bit counter
/// before the iteration variable, after it, and after the fixed data.
#[test]
fn sp800_108_double_pipeline_cavp_vectors() {
    let f = Fixture::new();
    let slot = f.token("kbkdf-dp");
    let s = f.user(slot);
    let vectors = [
        (
            "ada2452f1f141a82c7a1b7d3e09ffed1",
            "335660eb265d2044efa06eacd848d3f9f57d219011343318f3a964df4a6fb1bf6cbdee711c7fcbe73b8f257f992e47e8b065af",
            0,
            "a73bd29176e38e761222ae07d639181f4b2c555a3b261815cde5d88a67c8b95c58b6b66ea4f10608c6d799b051519fc8e89de00cdc556350a7d966475086f9af",
        ),
        (
            "f862c0f1fbec48df982d9c4013807912",
            "7d2bba9a4b121a33bc54b5515df6014407710d698d9d768a9a096a0faeb3ad2cb15ed63d9b6490e7647c814b8bac2a842662e7",
            1,
            "19f69a9024217d0beba61f4b8aba60267e9e850a96e7ce5dafebfa6add0df2691f53043223d6300f295d44cb31ea57b0869f5c3840ae003c293a5cdd44af46be",
        ),
        (
            "34f0c2542bfe13c7149b68c8a1ef636b",
            "daefcc52d6e32e1614109268933087fce3d64a5a6f111ba1a8d343a1e388a1752aaea93853be52864997a81c84b04c4f3ff3bd",
            2,
            "fc0eae673e7db3c4660668e187bcd81d5ca9b89213d8d741e71c9bab89bb4fb3c4df541d89a8117f0f56b0f15111ae28abf81fb7d7349fbbcaf01137e4d73527",
        ),
        (
            "b65ea7c14d21cbad94575d668929b8ed",
            "13d47f74b114e79a80a04d281389731d7dfca2b5753036782b8790a97003fa50a5653dda69fc4cc7a79ba59497c17025dbc3fb",
            3,
            "32de17b47de8fc08f756734a2e51488b41105e20f0f811f9b05e583e476691f1d77e6685abdc9f919a38e2cfe3ca5c91c3c7d4a52f229b5f25eb9b70750ebc10",
        ),
    ];
    let fmt = ctr(32, false);
    for (i, (ki, fixed, place, ko)) in vectors.into_iter().enumerate() {
        let (ki, fixed, ko) = (unhex(ki), unhex(fixed), unhex(ko));
        let base = sp800_108::aes(&s, &ki);
        let data = match place {
            0 => vec![iter(), bytes(&fixed)],
            1 => vec![counter(&fmt), iter(), bytes(&fixed)],
            2 => vec![iter(), counter(&fmt), bytes(&fixed)],
            _ => vec![iter(), bytes(&fixed), counter(&fmt)],
        };
        let k = Kdf {
            ty: CKM_SP800_108_DOUBLE_PIPELINE_KDF,
            prf: CKM_AES_CMAC,
            data,
            iv: None,
        };
        let got = sp800_108::derive(&s, &k, base, &[ko.len() as u64]).unwrap();
        assert_eq!(got[0], ko, "vector {i}");
    }
}
