//! Benchmark profiles: named TOML suites in `bench-profiles/` (quick, full, ci,
//! sizes, threads, mix, scaling, breadth). A name is looked up next to the executable, then upward
//! from the executable and the current directory, then in the copies embedded in
//! the binary; anything containing a `/` or ending in `.toml` is read as a path.
//! Command-line flags override profile values.

use std::path::Path;

use serde::Deserialize;

use crate::error::{CliError, Result};
use crate::report::format::SizeValue;
use crate::suite::catalogue::catalogue;
use crate::suite::catalogue::glob_match;
use crate::suite::op::OpDef;
use crate::token::locate;

/// Profiles compiled into the binary, so `hsm-bench` works anywhere.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("quick", include_str!("../../../bench-profiles/quick.toml")),
    ("full", include_str!("../../../bench-profiles/full.toml")),
    ("ci", include_str!("../../../bench-profiles/ci.toml")),
    ("sizes", include_str!("../../../bench-profiles/sizes.toml")),
    (
        "threads",
        include_str!("../../../bench-profiles/threads.toml"),
    ),
    ("mix", include_str!("../../../bench-profiles/mix.toml")),
    (
        "scaling",
        include_str!("../../../bench-profiles/scaling.toml"),
    ),
    (
        "breadth",
        include_str!("../../../bench-profiles/breadth.toml"),
    ),
    ("pqc", include_str!("../../../bench-profiles/pqc.toml")),
];

/// Per-op settings that differ from the profile's (e.g. few RSA key generations).
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Override {
    /// Op id globs this applies to.
    pub ops: Vec<String>,
    /// Iterations per thread.
    pub iterations: Option<u64>,
    /// Seconds.
    pub duration: Option<f64>,
    /// Warmup calls.
    pub warmup: Option<u64>,
}

/// A profile file.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// One-line description.
    pub description: Option<String>,
    /// Op id globs.
    #[serde(default)]
    pub ops: Vec<String>,
    /// Iterations per thread.
    pub iterations: Option<u64>,
    /// Seconds per op (instead of iterations).
    pub duration: Option<f64>,
    /// Warmup calls per thread and round.
    pub warmup: Option<u64>,
    /// Thread counts to sweep.
    pub threads: Option<Vec<u32>>,
    /// Process counts to sweep (worker processes per module on one token).
    pub processes: Option<Vec<u32>>,
    /// Data sizes to sweep.
    pub data_sizes: Option<Vec<SizeValue>>,
    /// Percentiles to report.
    pub percentiles: Option<Vec<f64>>,
    /// Rounds per op.
    pub rounds: Option<u32>,
    /// Open-loop rate.
    pub rate: Option<f64>,
    /// Mix spec.
    pub mix: Option<String>,
    /// Longest time one op may take on one module, seconds (`--max-op-time`).
    pub max_op_time: Option<f64>,
    /// Per-op overrides; the first matching entry wins.
    #[serde(default, rename = "override")]
    pub overrides: Vec<Override>,
}

impl Profile {
    /// Parse profile text.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let p: Profile = toml::from_str(text).map_err(|e| e.to_string())?;
        if p.iterations.is_some() && p.duration.is_some() {
            return Err("give either iterations or duration, not both".into());
        }
        Ok(p)
    }

    /// The checks the corresponding flags get, plus op patterns that match no
    /// op; an error names the key, e.g. "key `iterations` must be at least 1".
    /// `table` is the file as parsed TOML (to tell an empty list from a missing one).
    pub fn validate(&self, table: &toml::Table, all: &[OpDef]) -> std::result::Result<(), String> {
        use crate::measure::checks::{
            check_iterations, check_percentiles, check_processes, check_rate, check_rounds,
            check_seconds, check_threads,
        };
        let key =
            |k: &str, r: std::result::Result<(), String>| r.map_err(|e| format!("key `{k}` {e}"));
        let patterns = |k: &str, ops: &[String]| -> std::result::Result<(), String> {
            if ops.is_empty() {
                return Err(format!("key `{k}` is empty"));
            }
            match ops
                .iter()
                .find(|p| !all.iter().any(|o| glob_match(p, &o.id)))
            {
                Some(p) => Err(format!("key `{k}`: pattern '{p}' matches no op")),
                None => Ok(()),
            }
        };
        if table.contains_key("ops") {
            patterns("ops", &self.ops)?;
        }
        if let Some(i) = self.iterations {
            key("iterations", check_iterations(i))?;
        }
        for (k, v) in [
            ("duration", self.duration),
            ("max_op_time", self.max_op_time),
        ] {
            if let Some(d) = v {
                key(k, check_seconds(d))?;
            }
        }
        if let Some(t) = &self.threads {
            key("threads", check_threads(t))?;
        }
        if let Some(t) = &self.processes {
            key("processes", check_processes(t))?;
        }
        if let Some(sizes) = &self.data_sizes {
            if sizes.is_empty() {
                return Err("key `data_sizes` is empty".into());
            }
            self.sizes().map_err(|e| format!("key `data_sizes`: {e}"))?;
        }
        if let Some(p) = &self.percentiles {
            key("percentiles", check_percentiles(p))?;
        }
        if let Some(r) = self.rounds {
            key("rounds", check_rounds(r))?;
        }
        if let Some(r) = self.rate {
            key("rate", check_rate(r))?;
        }
        if let Some(m) = &self.mix {
            crate::measure::checks::parse_mix(m, all).map_err(|e| format!("key `mix`: {e}"))?;
        }
        for o in &self.overrides {
            patterns("override.ops", &o.ops)?;
            if let Some(i) = o.iterations {
                key("override.iterations", check_iterations(i))?;
            }
            if let Some(d) = o.duration {
                key("override.duration", check_seconds(d))?;
            }
        }
        Ok(())
    }

    /// The override for `op`, if any.
    pub fn override_for(&self, op: &str) -> Option<&Override> {
        self.overrides
            .iter()
            .find(|o| o.ops.iter().any(|p| glob_match(p, op)))
    }

    /// Data sizes in bytes.
    pub fn sizes(&self) -> std::result::Result<Option<Vec<u64>>, String> {
        self.data_sizes
            .as_ref()
            .map(|v| v.iter().map(SizeValue::bytes).collect())
            .transpose()
    }
}

/// Load a profile by name or path; returns (where it came from, profile).
pub fn load(name: &str) -> Result<(String, Profile)> {
    let parse = |src: String, text: &str| {
        let all = catalogue();
        Profile::parse(text)
            .and_then(|p| {
                let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
                p.validate(&table, &all).map(|()| p)
            })
            .map(|p| (src.clone(), p))
            .map_err(|e| CliError::usage(format!("profile {src}: {e}")))
    };
    if name.contains('/') || name.ends_with(".toml") {
        let text = std::fs::read_to_string(name)
            .map_err(|e| CliError::usage(format!("cannot read profile {name}: {e}")))?;
        return parse(name.to_string(), &text);
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(CliError::usage(format!("bad profile name '{name}'")));
    }
    let rel = format!("bench-profiles/{name}.toml");
    if let Some(p) = locate::find_upward(&rel)
        && let Ok(text) = std::fs::read_to_string(&p)
    {
        return parse(display(&p), &text);
    }
    match EMBEDDED.iter().find(|(n, _)| *n == name) {
        Some((_, text)) => parse(format!("{name} (built in)"), text),
        None => Err(CliError::usage(format!(
            "unknown profile '{name}' (built in: {})",
            EMBEDDED.iter().map(|e| e.0).collect::<Vec<_>>().join(", ")
        ))),
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::alg::CipherAlg;
    use crate::suite::catalogue::catalogue;
    use crate::suite::catalogue::select;
    use crate::suite::op::OpKind;

    /// The embedded profile `name`, parsed.
    fn embedded(name: &str) -> Profile {
        let text = EMBEDDED.iter().find(|(n, _)| *n == name).expect("embedded");
        Profile::parse(text.1).unwrap()
    }

    #[test]
    fn embedded_profiles_parse_and_select_known_ops() {
        let all = catalogue();
        for (name, text) in EMBEDDED {
            let p = Profile::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let table: toml::Table = toml::from_str(text).unwrap();
            p.validate(&table, &all)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(p.description.is_some(), "{name} has a description");
            if p.mix.is_none() {
                assert!(!p.ops.is_empty(), "{name} selects ops");
                select(&all, &p.ops).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            p.sizes().unwrap();
            for o in &p.overrides {
                select(&all, &o.ops).unwrap_or_else(|e| panic!("{name} override: {e}"));
            }
        }
    }

    #[test]
    fn quick_leaves_out_slow_rsa_and_full_has_everything() {
        let all = catalogue();
        let quick = Profile::parse(EMBEDDED[0].1).unwrap();
        let ids: Vec<&str> = select(&all, &quick.ops)
            .unwrap()
            .iter()
            .map(|o| o.id.as_str())
            .collect();
        assert!(!ids.contains(&"rsa4096-sign") && !ids.contains(&"rsa3072-sign"));
        assert!(ids.contains(&"ed25519-sign"));
        // One key generation per family; P-384/P-521 are for `full`.
        let keygens: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| id.ends_with("-keygen"))
            .collect();
        assert_eq!(keygens, ["p256-keygen", "ed25519-keygen", "aes256-keygen"]);
        let full = Profile::parse(EMBEDDED[1].1).unwrap();
        let is_scaling = |o: &&crate::suite::op::OpDef| {
            matches!(o.kind, crate::suite::op::OpKind::Population(..))
        };
        let full_ids: Vec<String> = select(&all, &full.ops)
            .unwrap()
            .iter()
            .map(|o| o.id.clone())
            .collect();
        let want: Vec<String> = all
            .iter()
            .filter(|o| !is_scaling(o))
            .map(|o| o.id.clone())
            .collect();
        assert_eq!(full_ids, want, "full: every op but the scaling ones");
        let scaling = embedded("scaling");
        let picked = select(&all, &scaling.ops).unwrap();
        assert_eq!(picked.len(), all.iter().filter(is_scaling).count());
        assert!(picked.iter().all(is_scaling));
    }

    #[test]
    fn pqc_runs_the_post_quantum_ops_and_nothing_else() {
        let all = catalogue();
        let pqc = embedded("pqc");
        let picked: Vec<String> = select(&all, &pqc.ops)
            .unwrap()
            .iter()
            .map(|o| o.id.clone())
            .collect();
        let want: Vec<String> = all
            .iter()
            .filter(|o| {
                matches!(
                    o.mechanism,
                    cryptoki_sys::CKM_ML_DSA
                        | cryptoki_sys::CKM_ML_DSA_KEY_PAIR_GEN
                        | cryptoki_sys::CKM_SLH_DSA
                        | cryptoki_sys::CKM_SLH_DSA_KEY_PAIR_GEN
                        | cryptoki_sys::CKM_ML_KEM
                        | cryptoki_sys::CKM_ML_KEM_KEY_PAIR_GEN
                )
            })
            .map(|o| o.id.clone())
            .collect();
        assert_eq!(picked, want);
        // ML-DSA: sign, verify, keygen of three sets; SLH-DSA: sign and
        // verify of three sets, keygen of two; ML-KEM: encaps, decaps and
        // keygen of three sets.
        assert_eq!(picked.len(), 9 + 8 + 9);
    }

    #[test]
    fn breadth_runs_every_breadth_op_and_nothing_else() {
        use crate::suite::alg::Curve;
        use crate::suite::alg::HashAlg;
        use crate::suite::alg::KeySpec;
        use crate::suite::alg::MacAlg;
        use crate::suite::alg::SigAlg;
        let all = catalogue();
        let breadth = embedded("breadth");
        let picked: Vec<&str> = select(&all, &breadth.ops)
            .unwrap()
            .iter()
            .map(|o| o.id.as_str())
            .collect();
        let want: Vec<&str> = all
            .iter()
            .filter(|o| {
                matches!(
                    o.kind,
                    OpKind::Encrypt(
                        CipherAlg::Aes(..) | CipherAlg::Des3(_) | CipherAlg::ChaCha20Poly1305
                    ) | OpKind::Decrypt(CipherAlg::Aes(..) | CipherAlg::Des3(_))
                        | OpKind::Sign(SigAlg::EcdsaHash(..))
                        | OpKind::Verify(SigAlg::EcdsaHash(..))
                        | OpKind::Sign(SigAlg::Ecdsa(Curve::P521 | Curve::Secp256k1))
                        | OpKind::Verify(SigAlg::Ecdsa(Curve::P521 | Curve::Secp256k1))
                        | OpKind::Derive(_)
                        | OpKind::Wrap(_)
                        | OpKind::Unwrap(_)
                        | OpKind::Digest(HashAlg::Sha1 | HashAlg::Sha3_256 | HashAlg::Sha3_512)
                        | OpKind::Mac(MacAlg::HmacSha3_256)
                        | OpKind::SeedRandom(_)
                        | OpKind::KeyGen(KeySpec::Pbkdf2Sha256(_))
                ) || (o.key_bits.is_some_and(|b| b > 2048)
                    && (o.id.contains("-pss-") || o.id.contains("-oaep-")))
            })
            .map(|o| o.id.as_str())
            .collect();
        assert_eq!(picked, want);
        // AES 30, AES-256 CCM and CTS encryption 2, ChaCha20-Poly1305
        // encryption 1, 3DES 4, ECDSA with hashing 16, raw ECDSA on P-521
        // and secp256k1 4, ECDH 4 (P-256, P-384, P-521, X25519) and DH
        // ffdhe2048 1, PBKDF2 1, wrap 6,
        // SHA-1, SHA3-256 and SHA3-512, HMAC-SHA3-256, C_SeedRandom, PSS 4,
        // OAEP 8.
        assert_eq!(
            picked.len(),
            30 + 2 + 1 + 4 + 16 + 4 + 4 + 1 + 1 + 6 + 1 + 2 + 1 + 1 + 4 + 8
        );
        for id in [
            "aes256-ccm-encrypt",
            "aes256-cts-encrypt",
            "chacha20-poly1305-encrypt",
            "ffdhe2048-dh-derive",
            "pbkdf2-sha256-1000-keygen",
        ] {
            assert!(picked.contains(&id), "{id}");
        }
        assert!(picked.contains(&"p521-ecdh-derive"));
        // Key generation is not breadth (its mechanisms are exercised by the
        // keys the ops make); `full` has p384-keygen and p521-keygen. The
        // exception is PBKDF2, whose cost is the derivation.
        assert!(
            !picked
                .iter()
                .any(|id| id.ends_with("-keygen") && !id.starts_with("pbkdf2-"))
        );
        assert!(breadth.duration.unwrap() <= 0.5, "brief");
    }

    #[test]
    fn overrides_and_errors() {
        let p = Profile::parse(
            "ops = [\"*\"]\niterations = 100\n[[override]]\nops = [\"rsa*-keygen\"]\niterations = 3\n",
        )
        .unwrap();
        assert_eq!(
            p.override_for("rsa2048-keygen").unwrap().iterations,
            Some(3)
        );
        assert!(p.override_for("sha256").is_none());
        assert!(Profile::parse("iterations = 1\nduration = 1.0\n").is_err());
        assert!(Profile::parse("nonsense = 1\n").is_err());
        // `processes` sweeps like `threads`, with the same checks.
        let all = crate::suite::catalogue::catalogue();
        let sweep = |text: &str| {
            let p = Profile::parse(text).unwrap();
            p.validate(&text.parse::<toml::Table>().unwrap(), &all)
                .map(|()| p.processes)
        };
        assert_eq!(
            sweep("processes = [1, 2, 4, 8]\n"),
            Ok(Some(vec![1, 2, 4, 8]))
        );
        assert!(
            sweep("processes = [0]\n")
                .unwrap_err()
                .contains("`processes`")
        );
        assert!(sweep("processes = []\n").is_err());
        assert!(load("no-such-profile").is_err());
        assert!(load("../etc").is_err());
        assert_eq!(
            load("quick").unwrap().1,
            Profile::parse(EMBEDDED[0].1).unwrap()
        );
    }
}
