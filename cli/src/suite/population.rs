//! Token-object scaling: how a token copes with many stored (token) objects.
//!
//! Before an op runs, the token is brought to exactly `n` *population*
//! objects: private AES-256 token keys with distinct labels and ids, made
//! with `C_CreateObject` (untimed; [`Population::ensure`]). The population is
//! kept per module and grows or shrinks between ops, so a profile that goes
//! 10 → 1,000 → 10,000 creates each object once. On a temporary token it is
//! left in place (the token is deleted after the run); on a named token it
//! is destroyed when the module is closed.
//!
//! The ops, each at n = 10, 1,000 and 10,000:
//! - `token-find-label-N` / `token-find-id-N`: `C_FindObjectsInit` by
//!   `CKA_LABEL` (or `CKA_CLASS` + `CKA_ID`), `C_FindObjects`,
//!   `C_FindObjectsFinal`; exactly the one object must come back.
//! - `token-create-N`: `C_CreateObject` of one more token key (destroyed
//!   untimed afterwards).
//! - `token-destroy-N`: `C_DestroyObject` of a token key made untimed just
//!   before.
//! - `token-keypair-p256-N` / `token-keypair-ed25519-N`:
//!   `C_GenerateKeyPair` of a token key pair (destroyed untimed).
//! - `cold-start-N`: a new process loads the module and times its
//!   `C_Initialize`; it then opens a session, logs in and finds one
//!   population object by label (so a module that loads lazily has loaded
//!   what it needs), and reports its peak resident memory (`VmHWM`).
//! - `cold-open-N`: the same probe, recording `C_Initialize` plus the first
//!   `C_OpenSession` (the time to a usable session, wherever a module does
//!   its loading).

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::Curve;
use super::alg::KeySpec;
use super::alg::PopOp;
use super::failure::Failure;
use super::failure::ck;
use super::objects::FindOne;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::PopPrep;
use super::op::Prep;
use super::op::Worker;
use crate::token::population::{ProbeCommand, token_key};
use crate::token::raw::{RawModule, Template};

/// Token-object counts of the catalogue's scaling ops.
pub const SIZES: [usize; 3] = [10, 1000, 10000];

impl PopOp {
    fn id(self) -> String {
        match self {
            PopOp::FindLabel => "token-find-label".into(),
            PopOp::FindId => "token-find-id".into(),
            PopOp::Create => "token-create".into(),
            PopOp::Destroy => "token-destroy".into(),
            PopOp::KeyPair(k) => format!("token-keypair-{}", k.name()),
            PopOp::ColdStart => "cold-start".into(),
            PopOp::ColdOpen => "cold-open".into(),
        }
    }

    fn title(self, n: usize) -> String {
        let what = match self {
            PopOp::FindLabel => "Find a token object by label".to_string(),
            PopOp::FindId => "Find a token key by CKA_ID".to_string(),
            PopOp::Create => "Create a token key".to_string(),
            PopOp::Destroy => "Destroy a token key".to_string(),
            PopOp::KeyPair(k) => format!("Generate a token {} key pair", k.name().to_uppercase()),
            PopOp::ColdStart => "C_Initialize in a new process".to_string(),
            PopOp::ColdOpen => "C_Initialize + first C_OpenSession in a new process".to_string(),
        };
        format!("{what} ({n} token objects)")
    }
}

/// A scaling op at `n` population objects.
pub fn pop_op(op: PopOp, n: usize) -> OpDef {
    let (mechanism, key_bits) = match op {
        PopOp::KeyPair(k) => (k.gen_mechanism().unwrap_or(0), None),
        _ => (0, None),
    };
    OpDef {
        id: format!("{}-{n}", op.id()),
        title: op.title(n),
        kind: OpKind::Population(op, n),
        mechanism,
        also_needs: vec![],
        key: None,
        key_bits,
        data: DataSpec::Fixed(0),
    }
}

/// Scaling ops of the catalogue, grouped by size so a profile listing them
/// in this order grows the population once.
pub fn ops() -> Vec<OpDef> {
    let kinds = [
        PopOp::FindLabel,
        PopOp::FindId,
        PopOp::Create,
        PopOp::Destroy,
        PopOp::KeyPair(KeySpec::Ec(Curve::P256)),
        PopOp::KeyPair(KeySpec::Ed25519),
        PopOp::ColdStart,
        PopOp::ColdOpen,
    ];
    SIZES
        .iter()
        .flat_map(|&n| kinds.iter().map(move |&k| pop_op(k, n)))
        .collect()
}

/// Makes and destroys token keys: `Create` times the creation, `Destroy`
/// the destruction; the other half runs untimed.
struct CreateDestroyWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    label: String,
    timed_destroy: bool,
    made: CK_OBJECT_HANDLE,
    counter: u32,
    setup_rv: CK_RV,
}

impl CreateDestroyWorker {
    fn create(&mut self) -> CK_RV {
        self.counter = self.counter.wrapping_add(1);
        let id = self.counter.to_be_bytes();
        let (rv, h) = self
            .raw
            .create_object(self.s, &mut token_key(&self.label, &id));
        self.made = h;
        rv
    }
}

impl Worker for CreateDestroyWorker {
    fn before(&mut self) {
        if self.timed_destroy {
            self.setup_rv = self.create();
        }
    }

    #[inline]
    fn call(&mut self) -> CK_RV {
        if self.timed_destroy {
            if self.setup_rv != CKR_OK {
                return self.setup_rv;
            }
            let rv = self.raw.destroy_object(self.s, self.made);
            if rv == CKR_OK {
                self.made = 0;
            }
            rv
        } else {
            self.create()
        }
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        let made = std::mem::take(&mut self.made);
        if made != 0 {
            ck(self.raw.destroy_object(self.s, made))?;
        }
        ck(rv)
    }

    fn rate_from_latency(&self) -> bool {
        true
    }
}

/// Runs a cold-start probe per operation; the probe's own measurement of
/// `C_Initialize` is the recorded latency.
struct ColdStartWorker {
    probe: ProbeCommand,
    label: String,
    /// Record `C_Initialize` + first `C_OpenSession` (`cold-open-N`).
    include_open: bool,
    last: Option<ProbeReport>,
    error: Option<String>,
    peak_rss_kib: u64,
}

/// What a cold-start probe prints (one JSON line).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct ProbeReport {
    /// Duration of `C_Initialize`.
    pub initialize_ns: u64,
    /// Duration of the first `C_OpenSession` (where a module that loads
    /// its objects lazily loads them).
    #[serde(default)]
    pub open_session_ns: u64,
    /// Duration of the first find by label, after `C_Login`.
    #[serde(default)]
    pub find_ns: u64,
    /// Peak resident memory of the probe process, after the find.
    pub peak_rss_kib: u64,
}

impl ColdStartWorker {
    fn run_probe(&self) -> Result<ProbeReport, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(exe)
            .arg("cold-start")
            .arg("--module")
            .arg(&self.probe.module)
            .arg("--token-label")
            .arg(&self.probe.token_label)
            .arg("--label")
            .arg(&self.label)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the probe: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = writeln!(stdin, "{}", self.probe.pin);
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("probe: {e}"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(err.lines().next().unwrap_or("probe failed").to_string());
        }
        serde_json::from_slice(&out.stdout).map_err(|e| format!("probe output: {e}"))
    }
}

impl Worker for ColdStartWorker {
    fn call(&mut self) -> CK_RV {
        match self.run_probe() {
            Ok(r) => {
                self.last = Some(r);
                self.error = None;
                CKR_OK
            }
            Err(e) => {
                self.last = None;
                self.error = Some(e);
                CKR_GENERAL_ERROR
            }
        }
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        if let Some(e) = self.error.take() {
            return Err(Failure::Check(e));
        }
        ck(rv)?;
        if let Some(r) = self.last {
            self.peak_rss_kib = self.peak_rss_kib.max(r.peak_rss_kib);
        }
        Ok(())
    }

    fn measured_ns(&self) -> Option<u64> {
        self.last.map(|r| {
            r.initialize_ns
                + if self.include_open {
                    r.open_session_ns
                } else {
                    0
                }
        })
    }

    fn peak_rss_kib(&self) -> Option<u64> {
        (self.peak_rss_kib > 0).then_some(self.peak_rss_kib)
    }

    fn rate_from_latency(&self) -> bool {
        true
    }
}

/// Worker of a scaling op for one thread.
pub fn worker(op: PopOp, p: &Prep<'_>, pp: &PopPrep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let pop = pp.population;
    let need_target = || {
        pop.target()
            .ok_or_else(|| Failure::Check("the token holds no population objects".into()))
    };
    Ok(match op {
        PopOp::FindLabel | PopOp::FindId => {
            let (i, target) = need_target()?;
            let template = if op == PopOp::FindLabel {
                Template::new().bytes(CKA_LABEL, pop.label(i).as_bytes())
            } else {
                Template::new()
                    .ulong(CKA_CLASS, CKO_SECRET_KEY)
                    .bytes(CKA_ID, &pop.id(i))
            };
            Box::new(FindOne::new(p.raw.clone(), p.session, template, target))
        }
        PopOp::Create | PopOp::Destroy => Box::new(CreateDestroyWorker {
            raw: p.raw.clone(),
            s: p.session,
            label: format!("hsm-bench-scratch-{}-{}", pop.tag(), p.thread),
            timed_destroy: op == PopOp::Destroy,
            made: 0,
            counter: (p.thread as u32) << 24,
            setup_rv: CKR_OK,
        }),
        PopOp::KeyPair(spec) => {
            let label = format!("hsm-bench-pair-{}-{}", pop.tag(), p.thread);
            return super::keygen::pair_worker(spec, p, &label, true);
        }
        PopOp::ColdStart | PopOp::ColdOpen => {
            let (i, _) = need_target()?;
            Box::new(ColdStartWorker {
                probe: pp.probe.clone(),
                label: pop.label(i),
                include_open: op == PopOp::ColdOpen,
                last: None,
                error: None,
                peak_rss_kib: 0,
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_ids_are_unique_and_grouped_by_size() {
        let ops = ops();
        assert_eq!(ops.len(), 8 * SIZES.len());
        let ids: std::collections::BTreeSet<_> = ops.iter().map(|o| o.id.clone()).collect();
        assert_eq!(ids.len(), ops.len());
        assert!(ids.contains("token-keypair-p256-10000"));
        assert!(ids.contains("cold-start-10"));
        let sizes: Vec<usize> = ops
            .iter()
            .map(|o| match o.kind {
                OpKind::Population(_, n) => n,
                _ => 0,
            })
            .collect();
        assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "sizes ascend");
    }
}
