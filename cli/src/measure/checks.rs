//! The checks of values that a flag and a profile key share; the caller names
//! the flag (`--iterations must …`) or the file and key (`key `iterations` must …`).
//! Also the parsing of a `--mix` (or a profile's `mix`).

use crate::suite::op::OpDef;

/// Short mix keys and the ops they stand for.
pub const MIX_ALIASES: &[(&str, &str)] = &[
    ("sign", "ed25519-sign"),
    ("verify", "ed25519-verify"),
    ("encrypt", "aes256-gcm-encrypt"),
    ("decrypt", "aes256-gcm-decrypt"),
    ("digest", "sha256"),
    ("hash", "sha256"),
    ("mac", "hmac-sha256"),
    ("random", "random32"),
    ("keygen", "p256-keygen"),
    ("find", "find-object"),
];

/// A parsed `--mix`: (op id, weight) pairs, plus the text as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    /// The specification as given (recorded in results).
    pub spec: String,
    /// Op ids with weights.
    pub parts: Vec<(String, u32)>,
}

/// Parse `verify=80,sign=15,encrypt=5` (short keys or full op ids).
pub fn parse_mix(spec: &str, all: &[OpDef]) -> std::result::Result<Mix, String> {
    let mut parts: Vec<(String, u32)> = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, w) = item
            .split_once('=')
            .ok_or_else(|| format!("mix entry '{item}' is not OP=WEIGHT"))?;
        let k = k.trim();
        let id = MIX_ALIASES
            .iter()
            .find(|(a, _)| *a == k)
            .map(|(_, id)| id.to_string())
            .unwrap_or_else(|| k.to_string());
        if !all.iter().any(|o| o.id == id) {
            return Err(format!("unknown op '{k}' in the mix"));
        }
        let w: u32 = w
            .trim()
            .parse()
            .map_err(|_| format!("bad weight in mix entry '{item}'"))?;
        if w == 0 {
            return Err(format!("weight of '{k}' must be positive"));
        }
        if parts.iter().any(|(p, _)| *p == id) {
            return Err(format!("'{k}' appears twice in the mix"));
        }
        parts.push((id, w));
    }
    if parts.is_empty() {
        return Err("empty mix".into());
    }
    if parts.len() > 32 {
        return Err("at most 32 ops in a mix".into());
    }
    Ok(Mix {
        spec: spec.to_string(),
        parts,
    })
}

/// Iterations per thread.
pub fn check_iterations(i: u64) -> std::result::Result<(), String> {
    (i >= 1).then_some(()).ok_or("must be at least 1".into())
}

/// A duration in seconds (`duration`, `max_op_time`).
pub fn check_seconds(d: f64) -> std::result::Result<(), String> {
    (d > 0.0 && d <= 86_400.0)
        .then_some(())
        .ok_or("must be between 0 and 86400 seconds".into())
}

/// Thread counts.
pub fn check_threads(t: &[u32]) -> std::result::Result<(), String> {
    if t.is_empty() {
        return Err("is empty".into());
    }
    (t.iter().all(|&t| (1..=1024).contains(&t)))
        .then_some(())
        .ok_or("values must be between 1 and 1024".into())
}

/// Process counts (`--processes`): each is that many worker processes per
/// module, all on one token.
pub fn check_processes(t: &[u32]) -> std::result::Result<(), String> {
    if t.is_empty() {
        return Err("is empty".into());
    }
    (t.iter().all(|&t| (1..=256).contains(&t)))
        .then_some(())
        .ok_or("values must be between 1 and 256".into())
}

/// Open-loop rate.
pub fn check_rate(r: f64) -> std::result::Result<(), String> {
    (r > 0.0 && r.is_finite())
        .then_some(())
        .ok_or("must be positive".into())
}

/// Rounds.
pub fn check_rounds(r: u32) -> std::result::Result<(), String> {
    (1..=100)
        .contains(&r)
        .then_some(())
        .ok_or("must be between 1 and 100".into())
}

/// Percentiles.
pub fn check_percentiles(p: &[f64]) -> std::result::Result<(), String> {
    if p.is_empty() {
        return Err("is empty".into());
    }
    (p.iter().all(|&x| x > 0.0 && x <= 100.0))
        .then_some(())
        .ok_or("must be in (0, 100]".into())
}
