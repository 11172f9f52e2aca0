//! The operation catalogue: every benchmarkable operation in report order,
//! selection by glob, the ops an existing key allows, and building the
//! per-thread [`Worker`] of an op (dispatch to the family files).

use super::alg::*;
use super::failure::Failure;
use super::op::{OpDef, OpKind, Prep, Worker};
use super::{
    cipher, derive, digest, generic, kem, keygen, mac, objects, population, random, sign, vendor,
    wrap,
};

/// Every operation hsm-bench knows, in report order.
pub fn catalogue() -> Vec<OpDef> {
    let mut v = Vec::new();
    v.extend(sign::ops());
    v.extend(vendor::ops());
    v.extend(cipher::ops());
    v.extend(derive::ops());
    v.extend(kem::ops());
    v.extend(wrap::ops());
    v.extend(digest::ops());
    v.extend(mac::ops());
    v.extend(random::ops());
    v.extend(keygen::ops());
    v.extend(objects::ops());
    v.extend(population::ops());
    v
}

/// Shell-style glob match supporting `*` and `?`.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Select ops by comma-separated glob patterns, in catalogue order. A pattern that
/// matches nothing is an error.
pub fn select<'a>(all: &'a [OpDef], patterns: &[String]) -> Result<Vec<&'a OpDef>, String> {
    for p in patterns {
        if !all.iter().any(|o| glob_match(p, &o.id)) {
            return Err(format!(
                "no operation matches '{p}' (see `hsm-bench ops` for the list)"
            ));
        }
    }
    Ok(all
        .iter()
        .filter(|o| patterns.iter().any(|p| glob_match(p, &o.id)))
        .collect())
}

/// Build the worker of `op` for one thread.
pub fn build_worker(op: &OpDef, prep: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    match op.kind {
        OpKind::Sign(a) => sign::sign_worker(a, prep),
        OpKind::Verify(a) => sign::verify_worker(a, prep),
        OpKind::Encrypt(c) => cipher::encrypt_worker(c, prep),
        OpKind::Decrypt(c) => cipher::decrypt_worker(c, prep),
        OpKind::Digest(h) => digest::worker(h, prep),
        OpKind::Mac(m) => mac::worker(m, prep),
        OpKind::Random(n) => random::random_worker(n, prep),
        OpKind::SeedRandom(n) => random::seed_worker(n, prep),
        OpKind::SessionInfo => random::session_info_worker(prep),
        OpKind::KeyGen(k) => keygen::worker(k, prep),
        OpKind::FindObject(n) => objects::find_worker(n, prep),
        OpKind::VerifyBatch(n) => vendor::verify_batch_worker(n, prep),
        OpKind::Generic(f @ (GenericFn::Encapsulate | GenericFn::Decapsulate), ref param) => {
            kem::generic_worker(f, op.mechanism, param.clone(), prep)
        }
        OpKind::Generic(..) => generic::op_worker(op, prep),
        OpKind::Encapsulate(_) | OpKind::Decapsulate(_) => kem::catalogue_worker(op, prep),
        OpKind::Derive(a) => derive::worker(a, prep),
        OpKind::Wrap(a) => wrap::wrap_worker(a, prep),
        OpKind::Unwrap(a) => wrap::unwrap_worker(a, prep),
        OpKind::Population(op, _) => match &prep.population {
            Some(pp) => population::worker(op, prep, pp),
            None => Err(Failure::Check("no token population prepared".into())),
        },
    }
}

/// The ops an existing key allows (`--key-label`): those of its type and
/// size whose usage flags (CKA_SIGN, CKA_VERIFY, CKA_ENCRYPT, CKA_DECRYPT) are
/// set and whose mechanism its CKA_ALLOWED_MECHANISMS permits (PKCS#11 3.0
/// §4.7); a key typed for one HMAC (`CKK_SHA256_HMAC`) runs only that HMAC.
/// Ids are the catalogue's, with the key's size (an AES-128 key runs
/// `aes128-gcm-encrypt`), so `--ops` selects among them as it does among the
/// catalogue.
pub fn ops_for_existing(k: &crate::suite::existing::ExistingKey) -> Vec<OpDef> {
    use super::existing::Detected;
    let ex = KeySpec::Existing;
    let h = &k.handles;
    let (sign, verify) = (
        h.private.is_some() && k.can_sign,
        h.public.is_some() && h.private.is_some() && k.can_verify,
    );
    // ECDH needs the private key (CKA_DERIVE) and the public one (to check
    // the agreement from the peer's side).
    let agree = k.can_derive && h.private.is_some() && h.public.is_some();
    let derive_existing = |a: crate::suite::alg::DeriveAlg| {
        let mut o = derive::derive_op(a);
        o.key = Some(ex);
        o.also_needs.clear();
        o
    };
    let mut v = Vec::new();
    let sigs = |v: &mut Vec<OpDef>, a: SigAlg| {
        if sign {
            v.push(sign::sign_op(a, ex));
        }
        if verify {
            v.push(sign::verify_op(a, ex));
        }
    };
    let ecdsa_hashed = |v: &mut Vec<OpDef>, c: Curve| {
        for hash in [HashAlg::Sha256, HashAlg::Sha384] {
            sigs(v, SigAlg::EcdsaHash(c, hash));
        }
    };
    match &k.kind {
        Detected::Ed25519 => sigs(&mut v, SigAlg::Ed25519),
        Detected::Ec(c) => {
            sigs(&mut v, SigAlg::Ecdsa(*c));
            ecdsa_hashed(&mut v, *c);
            if agree {
                v.push(derive_existing(crate::suite::alg::DeriveAlg::Ecdh(*c)));
            }
        }
        Detected::X25519 => {
            if agree {
                v.push(derive_existing(crate::suite::alg::DeriveAlg::X25519));
            }
        }
        Detected::Rsa(b) => {
            sigs(&mut v, SigAlg::RsaPkcs(*b));
            sigs(&mut v, SigAlg::RsaPss(*b));
            if h.public.is_some() && k.can_encrypt {
                for c in [CipherAlg::RsaOaepSha1(*b), CipherAlg::RsaOaepSha256(*b)] {
                    v.push(cipher::encrypt_op(c, ex));
                    if h.private.is_some() && k.can_decrypt {
                        v.push(cipher::decrypt_op(c, ex));
                    }
                }
            }
        }
        Detected::Aes(n) => {
            if h.secret.is_some() && k.can_encrypt {
                for mode in AesMode::ALL {
                    let c = CipherAlg::Aes(mode, *n);
                    v.push(cipher::encrypt_op(c, ex));
                    if k.can_decrypt {
                        v.push(cipher::decrypt_op(c, ex));
                    }
                }
            }
            if h.secret.is_some() && k.can_sign {
                let bits = n * 8;
                let mut o = mac::mac_op(
                    MacAlg::AesCmac,
                    &format!("aes{bits}-cmac"),
                    &format!("AES-{bits}-CMAC"),
                    ex,
                );
                o.key_bits = Some(u64::from(bits));
                v.push(o);
            }
        }
        Detected::Des3 => {
            if h.secret.is_some() && k.can_encrypt {
                for mode in [AesMode::Ecb, AesMode::Cbc] {
                    let c = CipherAlg::Des3(mode);
                    v.push(cipher::encrypt_op(c, ex));
                    if k.can_decrypt {
                        v.push(cipher::decrypt_op(c, ex));
                    }
                }
            }
        }
        Detected::Hmac(only) => {
            if h.secret.is_some() && k.can_sign {
                for (m, id, title) in [
                    (MacAlg::HmacSha256, "hmac-sha256", "HMAC-SHA256"),
                    (MacAlg::HmacSha512, "hmac-sha512", "HMAC-SHA512"),
                ] {
                    if only.is_none_or(|o| o == m.mechanism()) {
                        let mut o = mac::mac_op(m, id, title, ex);
                        // The token's minimum HMAC key size is checked in bytes.
                        o.key_bits = k.value_len.map(|n| u64::from(n) * 8);
                        v.push(o);
                    }
                }
            }
        }
        Detected::MlDsa(s) => sigs(&mut v, SigAlg::MlDsa(*s)),
        Detected::SlhDsa(s) => sigs(&mut v, SigAlg::SlhDsa(*s)),
        // Both halves: each function's results are checked with the other.
        Detected::MlKem(s) if h.public.is_some() && h.private.is_some() => {
            if k.can_encapsulate {
                v.push(kem::encaps_op(*s, ex));
            }
            if k.can_decapsulate {
                v.push(kem::decaps_op(*s, ex));
            }
        }
        Detected::MlKem(_) => {}
        // Only the generic op measures it (`--mechanism`).
        Detected::Other { .. } => {}
    }
    v.retain(|o| k.allows(o.mechanism));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("ed25519-*", "ed25519-sign"));
        assert!(glob_match("sha*", "sha512"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("p?56-sign", "p256-sign"));
        assert!(!glob_match("sha*", "hmac-sha256"));
        assert!(glob_match("*sha256*", "hmac-sha256"));
        assert!(!glob_match("rsa2048-sign", "rsa2048-sign-x"));
    }

    #[test]
    fn catalogue_has_the_contract_ids_once() {
        let all = catalogue();
        let ids: Vec<&str> = all.iter().map(|o| o.id.as_str()).collect();
        for id in [
            "ed25519-sign",
            "ed25519-verify",
            "p256-sign",
            "p256-verify",
            "p384-sign",
            "p384-verify",
            "rsa2048-sign",
            "rsa3072-sign",
            "rsa4096-sign",
            "rsa2048-verify",
            "rsa2048-pss-sign",
            "rsa2048-oaep-sha1-encrypt",
            "rsa2048-oaep-sha256-encrypt",
            "rsa2048-oaep-sha256-decrypt",
            "aes256-gcm-encrypt",
            "aes256-gcm-decrypt",
            "aes256-cbc-encrypt",
            "sha256",
            "sha384",
            "sha512",
            "hmac-sha256",
            "hmac-sha512",
            "aes256-cmac",
            "random32",
            "p256-ecdh-derive",
            "p384-ecdh-derive",
            "p521-ecdh-derive",
            "x25519-ecdh-derive",
            "p256-keygen",
            "p384-keygen",
            "p521-keygen",
            "ed25519-keygen",
            "rsa2048-keygen",
            "aes256-keygen",
            "find-object",
            "sha1",
            "aes128-ctr-encrypt",
            "aes192-cbc-pad-decrypt",
            "p384-ecdsa-sha256-verify",
            "rsa3072-pss-sign",
            "rsa4096-pss-verify",
            "rsa4096-oaep-sha256-decrypt",
            "rsa3072-oaep-sha1-decrypt",
        ] {
            assert_eq!(ids.iter().filter(|x| **x == id).count(), 1, "{id}");
        }
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "ids are unique");
    }

    /// Key generation in report order: the EC curves together, P-384 and
    /// P-521 right after P-256; ECDH on every NIST curve, before X25519.
    #[test]
    fn keygen_and_ecdh_come_in_curve_order() {
        let all = catalogue();
        let ids = |pattern: &str| -> Vec<String> {
            select(&all, &[pattern.into()])
                .unwrap()
                .iter()
                .map(|o| o.id.clone())
                .collect()
        };
        assert_eq!(
            ids("*-keygen"),
            [
                "p256-keygen",
                "p384-keygen",
                "p521-keygen",
                "ed25519-keygen",
                "rsa2048-keygen",
                "aes256-keygen",
                "mldsa44-keygen",
                "mldsa65-keygen",
                "mldsa87-keygen",
                "slhdsa-sha2-128f-keygen",
                "slhdsa-shake-128f-keygen",
                "mlkem512-keygen",
                "mlkem768-keygen",
                "mlkem1024-keygen",
                "pbkdf2-sha256-1000-keygen",
            ]
        );
        assert_eq!(
            ids("*-ecdh-derive"),
            [
                "p256-ecdh-derive",
                "p384-ecdh-derive",
                "p521-ecdh-derive",
                "x25519-ecdh-derive"
            ]
        );
    }

    /// An existing EC pair with `CKA_DERIVE` (and both halves) runs ECDH on
    /// its curve, P-521 included, under the catalogue's id; without
    /// `CKA_DERIVE` it does not.
    #[test]
    fn an_existing_ec_pair_that_derives_runs_ecdh_on_its_curve() {
        use crate::suite::existing::{Detected, ExistingKey};
        use crate::suite::keyset::KeyHandles;
        let all = catalogue();
        for c in [Curve::P256, Curve::P384, Curve::P521] {
            let mut k = ExistingKey {
                kind: Detected::Ec(c),
                handles: KeyHandles {
                    public: Some(1),
                    private: Some(2),
                    ..Default::default()
                },
                can_sign: false,
                can_verify: false,
                can_encrypt: false,
                can_decrypt: false,
                can_derive: true,
                can_encapsulate: false,
                can_decapsulate: false,
                value_len: None,
                allowed: None,
            };
            let want = format!("{}-ecdh-derive", c.id());
            let ops = ops_for_existing(&k);
            let ids: Vec<&str> = ops.iter().map(|o| o.id.as_str()).collect();
            assert_eq!(ids, [want.as_str()]);
            let o = &ops[0];
            let cat = all.iter().find(|x| x.id == want).expect("in the catalogue");
            assert_eq!(
                (&o.kind, o.mechanism, o.key_bits),
                (&cat.kind, cat.mechanism, cat.key_bits)
            );
            assert_eq!(o.key, Some(KeySpec::Existing));
            assert!(o.also_needs.is_empty());
            k.can_derive = false;
            assert!(ops_for_existing(&k).is_empty());
        }
    }

    #[test]
    fn selection_keeps_catalogue_order_and_rejects_unknown() {
        let all = catalogue();
        let sel = select(&all, &["sha*".into(), "ed25519-*".into()]).unwrap();
        let ids: Vec<&str> = sel.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "ed25519-sign",
                "ed25519-verify",
                "ed25519-verify-batch",
                "sha256",
                "sha384",
                "sha512",
                "sha1",
                "sha3-256",
                "sha3-512",
                "ed25519-keygen"
            ]
        );
        assert!(select(&all, &["nope-*".into()]).is_err());
    }

    #[test]
    fn data_ops_are_the_documented_ones() {
        let all = catalogue();
        let data_ops: Vec<&str> = all
            .iter()
            .filter(|o| o.takes_data())
            .map(|o| o.id.as_str())
            .collect();
        for id in [
            "aes256-gcm-encrypt",
            "aes256-cbc-encrypt",
            "sha256",
            "hmac-sha256",
            "aes256-cmac",
            "ed25519-sign",
        ] {
            assert!(data_ops.contains(&id), "{id}");
        }
        assert!(!data_ops.contains(&"p256-sign"));
        assert!(!data_ops.contains(&"random32"));
    }
}
