//! Portable floors: minimum ratios to a reference module that must hold on every
//! machine, checked where no baseline of the machine's class exists.
//!
//! A baseline judges a run only on its own machine class (see `machine.rs`). On a
//! class with none, the gate can still catch a gross regression: for ops where our
//! module beats the reference by a wide margin on every CPU measured, a floor at
//! about half of the lowest ratio ever seen holds on any CPU and fails when the op
//! loses most of its lead. A floors file is TOML:
//!
//! ```toml
//! reference = "softhsm"           # the denominator module
//! modules = ["dalek"]             # optional: the numerators (default: all others)
//! [[floor]]
//! op = "ed25519-sign"
//! min_ratio = 4.0
//! [[floor]]
//! op = "aes256-gcm-encrypt"
//! data_size = "1K"                # optional: only this size (default: every size)
//! min_ratio = 4.0
//! ```

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{CliError, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, Result};
use crate::report::format::SizeValue;
use crate::report::format::fmt_size;
use crate::report::result::BenchResult;
use crate::report::result::Report;
use crate::report::result::Status;
use crate::report::result::ratios;
use crate::report::verdict::VerdictPage;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FloorsFile {
    #[serde(default)]
    description: Option<String>,
    reference: String,
    #[serde(default)]
    modules: Vec<String>,
    #[serde(rename = "floor", default)]
    floors: Vec<FloorEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FloorEntry {
    op: String,
    #[serde(default)]
    data_size: Option<SizeValue>,
    min_ratio: f64,
}

/// One floor: `op` (at `data_size`, or at every size) must keep at least
/// `min_ratio` times the reference module's ops/s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Floor {
    /// Op id.
    pub op: String,
    /// Data size it applies to (None: every size measured).
    pub data_size: Option<u64>,
    /// Smallest acceptable ops/s(module) ÷ ops/s(reference).
    pub min_ratio: f64,
}

/// A parsed floors file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Floors {
    /// One line on what the floors are for.
    pub description: Option<String>,
    /// The reference (denominator) module.
    pub reference: String,
    /// The numerator modules (empty: every module but the reference).
    pub modules: Vec<String>,
    /// The floors, in file order.
    pub floors: Vec<Floor>,
}

impl Floors {
    /// Parse a floors file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> std::result::Result<Self, String> {
        let f: FloorsFile =
            toml::from_str(text).map_err(|e| format!("{origin}: {}", first_line(e.message())))?;
        if f.reference.trim().is_empty() {
            return Err(format!("{origin}: reference must name a module"));
        }
        if f.floors.is_empty() {
            return Err(format!("{origin}: no [[floor]] entries"));
        }
        let mut seen = BTreeSet::new();
        let mut floors = Vec::with_capacity(f.floors.len());
        for e in f.floors {
            if !(e.min_ratio.is_finite() && e.min_ratio > 0.0) {
                return Err(format!(
                    "{origin}: floor of {} must be a positive ratio",
                    e.op
                ));
            }
            let data_size = e
                .data_size
                .map(|s| s.bytes())
                .transpose()
                .map_err(|m| format!("{origin}: {m}"))?;
            if !seen.insert((e.op.clone(), data_size)) {
                return Err(format!("{origin}: two floors for {}", e.op));
            }
            floors.push(Floor {
                op: e.op,
                data_size,
                min_ratio: e.min_ratio,
            });
        }
        Ok(Floors {
            description: f.description,
            reference: f.reference,
            modules: f.modules,
            floors,
        })
    }

    /// Read and parse a floors file (exit code 2 on any problem).
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
        Self::parse(&text, &path.display().to_string()).map_err(CliError::usage)
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .next()
        .unwrap_or("invalid TOML")
        .trim()
        .to_string()
}

/// Verdict on one floor for one module and result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The ratio is at or above the floor.
    Holds,
    /// The ratio is below the floor, or the op no longer runs.
    Broken,
}

/// One checked floor.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Numerator module.
    pub module: String,
    /// Op id.
    pub op: String,
    /// Data size of the result.
    pub data_size: u64,
    /// Threads of the result.
    pub threads: u32,
    /// Measured ratio (None when the op failed or was unsupported).
    pub ratio: Option<f64>,
    /// Relative noise of the ratio, as a fraction (shown, not used: the floors
    /// keep a factor of about two from the lowest ratio measured).
    pub noise: Option<f64>,
    /// The floor.
    pub min_ratio: f64,
    /// Holds or broken.
    pub verdict: Verdict,
    /// Why it broke without a ratio (e.g. "now error").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The outcome of checking a result file against floors.
#[derive(Debug, Clone, Serialize)]
pub struct FloorCheck {
    /// `hsm-bench-floors/1`.
    pub schema: &'static str,
    /// Reference module.
    pub reference: String,
    /// Timestamp of the checked run.
    pub current: String,
    /// Every floor checked, per module and result.
    pub checks: Vec<Check>,
    /// Floors that could not be checked, and why (make the check inconclusive).
    pub unchecked: Vec<String>,
}

fn applies(floor: &Floor, r: &BenchResult) -> bool {
    r.op == floor.op && floor.data_size.is_none_or(|s| s == r.data_size)
}

/// Check every floor against `rep`: each numerator module's result of the op (at
/// the floor's size, any thread count) divided by the reference's in the same run.
pub fn check(rep: &Report, floors: &Floors) -> FloorCheck {
    let reference = floors.reference.as_str();
    let ratio_rows = ratios(&rep.results, reference);
    let mut modules: Vec<String> = Vec::new();
    for r in &rep.results {
        let wanted = floors.modules.is_empty() || floors.modules.contains(&r.module);
        if r.module != reference && wanted && !modules.contains(&r.module) {
            modules.push(r.module.clone());
        }
    }
    let mut out = FloorCheck {
        schema: "hsm-bench-floors/1",
        reference: reference.to_string(),
        current: rep.metadata.timestamp.clone(),
        checks: Vec::new(),
        unchecked: Vec::new(),
    };
    if !rep.results.iter().any(|r| r.module == reference) {
        out.unchecked
            .push(format!("reference module '{reference}' is not in the run"));
        return out;
    }
    if modules.is_empty() {
        out.unchecked.push(if floors.modules.is_empty() {
            "no module besides the reference was run".to_string()
        } else {
            format!("none of {} was run", floors.modules.join(", "))
        });
        return out;
    }
    for floor in &floors.floors {
        let what = match floor.data_size {
            Some(s) => format!("{} {}", floor.op, fmt_size(s)),
            None => floor.op.clone(),
        };
        for m in &modules {
            let results: Vec<&BenchResult> = rep
                .results
                .iter()
                .filter(|r| &r.module == m && applies(floor, r))
                .collect();
            if results.is_empty() {
                out.unchecked.push(format!("{m} {what}: not measured"));
                continue;
            }
            for r in results {
                let base = rep.results.iter().find(|b| {
                    b.module == reference
                        && b.op == r.op
                        && b.data_size == r.data_size
                        && b.threads == r.threads
                });
                let mut c = Check {
                    module: m.clone(),
                    op: r.op.clone(),
                    data_size: r.data_size,
                    threads: r.threads,
                    ratio: None,
                    noise: None,
                    min_ratio: floor.min_ratio,
                    verdict: Verdict::Broken,
                    note: None,
                };
                match base.map(|b| b.status) {
                    Some(Status::Ok) => {}
                    other => {
                        out.unchecked.push(format!(
                            "{m} {what} {}t: the reference {}",
                            r.threads,
                            other.map_or("did not run it".into(), |s| format!(
                                "reports it {}",
                                s.as_str()
                            ))
                        ));
                        continue;
                    }
                }
                if r.status != Status::Ok {
                    c.note = Some(format!("now {}", r.status.as_str()));
                    out.checks.push(c);
                    continue;
                }
                let row = ratio_rows.iter().find(|x| {
                    &x.module == m
                        && x.op == r.op
                        && x.data_size == r.data_size
                        && x.threads == r.threads
                });
                match row {
                    Some(x) => {
                        c.ratio = Some(x.ratio);
                        c.noise = Some(x.noise);
                        if x.ratio >= floor.min_ratio {
                            c.verdict = Verdict::Holds;
                        }
                        out.checks.push(c);
                    }
                    None => out
                        .unchecked
                        .push(format!("{m} {what} {}t: no ops/s to divide", r.threads)),
                }
            }
        }
    }
    out
}

impl FloorCheck {
    /// Number of broken floors.
    pub fn broken(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.verdict == Verdict::Broken)
            .count()
    }

    /// Exit code: 1 if a floor is broken, else 3 if a floor could not be checked
    /// (or nothing was), else 0.
    pub fn exit_code(&self) -> i32 {
        if self.broken() > 0 {
            EXIT_REGRESSION
        } else if !self.unchecked.is_empty() || self.checks.is_empty() {
            EXIT_INCONCLUSIVE
        } else {
            EXIT_OK
        }
    }
}

impl VerdictPage for FloorCheck {
    fn heading(&self) -> (&'static str, String) {
        ("floors", format!("run {}", self.current))
    }

    fn rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let headers = [
            "module", "op", "size", "thr", "ratio", "noise", "floor", "margin", "verdict",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let rows = self
            .checks
            .iter()
            .map(|c| {
                vec![
                    c.module.clone(),
                    c.op.clone(),
                    fmt_size(c.data_size),
                    c.threads.to_string(),
                    c.ratio.map_or("-".into(), |r| format!("{r:.3}x")),
                    c.noise
                        .map_or("-".into(), |n| format!("±{:.1}%", n * 100.0)),
                    format!("{:.2}x", c.min_ratio),
                    c.ratio
                        .map_or("-".into(), |r| format!("{:.2}", r / c.min_ratio)),
                    match (c.verdict, &c.note) {
                        (Verdict::Holds, _) => "holds".into(),
                        (Verdict::Broken, Some(n)) => format!("BELOW FLOOR ({n})"),
                        (Verdict::Broken, None) => "BELOW FLOOR".into(),
                    },
                ]
            })
            .collect();
        (headers, rows)
    }

    fn summary_line(&self) -> String {
        format!(
            "{} of {} floors hold, {} broken, {} not checked (ratios to {})",
            self.checks.len() - self.broken(),
            self.checks.len(),
            self.broken(),
            self.unchecked.len(),
            self.reference
        )
    }

    fn notes(&self) -> Vec<String> {
        self.unchecked
            .iter()
            .map(|u| format!("NOT CHECKED: {u}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::report;
    use crate::report::fixtures::result;

    const FILE: &str = r#"
        description = "test floors"
        reference = "softhsm"
        [[floor]]
        op = "ed25519-sign"
        min_ratio = 4.0
        [[floor]]
        op = "sha256"
        data_size = "1K"
        min_ratio = 1.0
    "#;

    fn run(dalek_sign: f64) -> Report {
        let mut sha_ours = result("dalek", "sha256", 2000.0, 0.01);
        sha_ours.data_size = 1024;
        let mut sha_ref = result("softhsm", "sha256", 1000.0, 0.01);
        sha_ref.data_size = 1024;
        report(vec![
            result("dalek", "ed25519-sign", dalek_sign, 0.01),
            result("softhsm", "ed25519-sign", 1000.0, 0.01),
            sha_ours,
            sha_ref,
        ])
    }

    #[test]
    fn floors_parse_with_sizes_and_refuse_nonsense() {
        let f = Floors::parse(FILE, "f.toml").unwrap();
        assert_eq!(f.reference, "softhsm");
        assert_eq!(f.floors.len(), 2);
        assert_eq!(f.floors[1].data_size, Some(1024));
        for bad in [
            "reference = \"softhsm\"\n",
            "reference = \"\"\n[[floor]]\nop = \"x\"\nmin_ratio = 1.0\n",
            "reference = \"s\"\n[[floor]]\nop = \"x\"\nmin_ratio = 0.0\n",
            "reference = \"s\"\n[[floor]]\nop = \"x\"\nmin_ratio = -1.0\n",
            "reference = \"s\"\n[[floor]]\nop = \"x\"\nmin_ratio = nan\n",
            "reference = \"s\"\n[[floor]]\nop = \"x\"\nmin_ratio = 1.0\nbogus = 1\n",
            "reference = \"s\"\n[[floor]]\nop = \"x\"\ndata_size = \"1G\"\nmin_ratio = 1.0\n",
            "reference = \"s\"\n[[floor]]\nop = \"x\"\nmin_ratio = 1.0\n[[floor]]\nop = \"x\"\nmin_ratio = 2.0\n",
            "not toml [",
        ] {
            let e = Floors::parse(bad, "f.toml").unwrap_err();
            assert!(e.starts_with("f.toml: "), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn floors_hold_or_break_by_ratio() {
        let f = Floors::parse(FILE, "f").unwrap();
        let ok = check(&run(5000.0), &f);
        assert_eq!(ok.checks.len(), 2);
        assert_eq!(ok.broken(), 0);
        assert!(ok.unchecked.is_empty(), "{:?}", ok.unchecked);
        assert_eq!(ok.exit_code(), EXIT_OK);
        // Exactly at the floor holds; just below breaks.
        assert_eq!(check(&run(4000.0), &f).exit_code(), EXIT_OK);
        let low = check(&run(3990.0), &f);
        assert_eq!(low.broken(), 1);
        assert_eq!(low.exit_code(), EXIT_REGRESSION);
        let text = low.render_text();
        let line = text.lines().find(|l| l.contains("ed25519-sign")).unwrap();
        assert!(line.contains("BELOW FLOOR"), "{line}");
        assert!(low.render_markdown().contains("| module | op |"));
        let v: serde_json::Value = serde_json::from_str(&low.render_json()).unwrap();
        assert_eq!(v["checks"][0]["verdict"], "broken");
    }

    #[test]
    fn a_failing_op_breaks_its_floor_and_gaps_are_inconclusive() {
        let f = Floors::parse(FILE, "f").unwrap();
        let mut rep = run(5000.0);
        rep.results[0].status = Status::Error;
        let c = check(&rep, &f);
        assert_eq!(c.broken(), 1);
        assert_eq!(c.checks[0].note.as_deref(), Some("now error"));
        // An op the floors name but the run left out: not checked, exit 3.
        let mut rep = run(5000.0);
        rep.results.retain(|r| r.op != "sha256");
        let c = check(&rep, &f);
        assert_eq!(c.unchecked, vec!["dalek sha256 1K: not measured"]);
        assert_eq!(c.exit_code(), EXIT_INCONCLUSIVE);
        // The sha256 floor is for 1K only: a 32-byte result does not satisfy it.
        let mut rep = run(5000.0);
        for r in &mut rep.results {
            if r.op == "sha256" {
                r.data_size = 32;
            }
        }
        assert_eq!(check(&rep, &f).exit_code(), EXIT_INCONCLUSIVE);
        // The reference failing the op leaves the floor unchecked.
        let mut rep = run(5000.0);
        rep.results[1].status = Status::Unsupported;
        let c = check(&rep, &f);
        assert!(c.unchecked[0].contains("reports it unsupported"), "{c:?}");
        assert_eq!(c.exit_code(), EXIT_INCONCLUSIVE);
        // No reference at all, or nothing else run.
        let only_ours = report(vec![result("dalek", "ed25519-sign", 5000.0, 0.01)]);
        assert_eq!(check(&only_ours, &f).exit_code(), EXIT_INCONCLUSIVE);
        let only_ref = report(vec![result("softhsm", "ed25519-sign", 5000.0, 0.01)]);
        assert_eq!(check(&only_ref, &f).exit_code(), EXIT_INCONCLUSIVE);
    }

    /// An op no floor names is not gated: whatever its ratio or status (a
    /// new op, measured before anyone has set its floor), the verdict is the
    /// floors' alone.
    #[test]
    fn ops_without_a_floor_are_not_gated() {
        let f = Floors::parse(FILE, "f").unwrap();
        for status in [Status::Ok, Status::Error, Status::Unsupported] {
            let mut rep = run(5000.0);
            let mut ours = result("dalek", "p521-ecdh-derive", 1.0, 0.01);
            ours.status = status;
            rep.results.push(ours);
            rep.results
                .push(result("softhsm", "p521-ecdh-derive", 1000.0, 0.01));
            rep.results.push(result("dalek", "p521-keygen", 1.0, 0.01));
            let c = check(&rep, &f);
            assert_eq!(c.checks.len(), 2, "{status:?}");
            assert!(c.unchecked.is_empty(), "{:?}", c.unchecked);
            assert!(c.checks.iter().all(|x| x.op != "p521-ecdh-derive"));
            assert_eq!(c.exit_code(), EXIT_OK, "{status:?}");
        }
    }

    /// The committed floors of a gate name ops its profile measures (else
    /// the gate could never check them), and every committed baseline of
    /// that gate keeps them: a floor above a ratio recorded on some machine
    /// class would fail CI there. Returns how many baselines were checked.
    fn floors_hold(text: &str, name: &str, profile: &str, gate: &str) -> usize {
        let f = Floors::parse(text, name).unwrap();
        assert_eq!(f.reference, "softhsm");
        let (_, p) = crate::measure::profiles::load(profile).unwrap();
        let all = crate::suite::catalogue::catalogue();
        let ops = crate::suite::catalogue::select(&all, &p.ops).unwrap();
        for floor in &f.floors {
            assert!(
                ops.iter().any(|o| o.id == floor.op),
                "{} is not in the {profile} profile",
                floor.op
            );
        }
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../baselines");
        let mut checked = 0;
        for class in std::fs::read_dir(&dir).unwrap() {
            let class = class.unwrap().path();
            if !class.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&class).unwrap() {
                let file = file.unwrap().path();
                let base = file.file_name().unwrap().to_string_lossy().to_string();
                if !base.starts_with(&format!("{gate}-")) {
                    continue;
                }
                let rep = crate::report::json::load(&file).unwrap();
                let c = check(&rep, &f);
                assert_eq!(
                    c.exit_code(),
                    EXIT_OK,
                    "{}: {}",
                    file.display(),
                    c.render_text()
                );
                checked += 1;
            }
        }
        checked
    }

    #[test]
    fn committed_floors_are_measured_by_their_gate_and_hold_on_every_baseline() {
        let ci = floors_hold(
            include_str!("../../../baselines/floors.toml"),
            "baselines/floors.toml",
            "ci",
            "ci",
        );
        assert!(ci > 0, "no ci baseline");
        let breadth = floors_hold(
            include_str!("../../../baselines/floors-breadth.toml"),
            "baselines/floors-breadth.toml",
            "breadth",
            "breadth",
        );
        assert!(breadth > 0, "no breadth baseline");
    }

    /// Every op of the breadth profile our default build and SoftHSM2 both
    /// offer (a ratio in a committed breadth baseline) has a floor in the
    /// breadth gate (docs/benchmarking.md): an op added to the profile must
    /// get one.
    #[test]
    fn the_breadth_floors_cover_every_shared_op_of_the_breadth_profile() {
        let f = Floors::parse(
            include_str!("../../../baselines/floors-breadth.toml"),
            "baselines/floors-breadth.toml",
        )
        .unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../baselines");
        let mut ratios = 0;
        for class in std::fs::read_dir(&dir).unwrap() {
            let file = class.unwrap().path().join("breadth-default.json");
            if !file.is_file() {
                continue;
            }
            let rep = crate::report::json::load(&file).unwrap();
            for r in rep.ratios.iter().flatten() {
                assert!(
                    f.floors.iter().any(|x| x.op == r.op),
                    "{}: {} has no floor",
                    file.display(),
                    r.op
                );
                ratios += 1;
            }
        }
        assert!(ratios > 50, "{ratios} ratios in the breadth baselines");
    }

    #[test]
    fn modules_restrict_the_numerators() {
        let mut f = Floors::parse(FILE, "f").unwrap();
        let mut rep = run(5000.0);
        rep.results
            .push(result("hardware", "ed25519-sign", 10.0, 0.01));
        // Every module but the reference by default: the slow token breaks it.
        assert_eq!(check(&rep, &f).broken(), 1);
        f.modules = vec!["dalek".into()];
        let c = check(&rep, &f);
        assert_eq!(c.broken(), 0);
        assert!(c.checks.iter().all(|c| c.module == "dalek"));
        f.modules = vec!["absent".into()];
        assert_eq!(check(&rep, &f).unchecked, vec!["none of absent was run"]);
    }
}
