//! Helpers for the integration tests: running the built binary, SoftHSM2 tokens
//! made with softhsm2-util, the delay shim, schema validation.

#![allow(dead_code)]

pub mod hostile;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// The hsm-bench binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_hsm-bench")
}

/// A command for the binary with a clean environment for our variables.
pub fn cmd() -> Command {
    let mut c = Command::new(bin());
    for v in [
        "HSM_BENCH_PIN",
        "HSM_BENCH_MODULE",
        "HSM_BENCH_SLOT",
        "HSM_BENCH_TOKEN_LABEL",
        "SOFTHSM2_CONF",
        "P11_DELAY_SHIM_DELAY",
        "P11_DELAY_SHIM_HIDE",
        "P11_DELAY_SHIM_TOKEN_INFO",
        "P11_DELAY_SHIM_CALL_LOG",
        "P11_DELAY_SHIM_FLIP",
        "P11_DELAY_SHIM_FLIP_AFTER",
        "P11_DELAY_SHIM_FAIL",
        "P11_HOSTILE",
        "P11_HOSTILE_MODULE",
        "P11_HOSTILE_COUNT_FILE",
        "DALEK_PKCS11_CONFIG",
        "HSM_BENCH_WORKER",
    ] {
        c.env_remove(v);
    }
    c
}

/// One cheap op, briefly: the arguments of a quick `run`.
pub const QUICK_SHA256: &[&str] = &["--ops", "sha256", "--iterations", "5", "--warmup", "1"];

/// Run and return the output, printing stderr on failure to help debugging.
pub fn run(c: &mut Command) -> Output {
    let out = c.output().expect("hsm-bench runs");
    if !out.status.success() {
        eprintln!(
            "stderr of {:?}:\n{}",
            c,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// Exit code of an output.
pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally, not by a signal")
}

/// The system SoftHSM2 module.
pub fn softhsm() -> PathBuf {
    [
        "/usr/lib/softhsm/libsofthsm2.so",
        "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
        "/usr/lib64/pkcs11/libsofthsm2.so",
        "/usr/local/lib/softhsm/libsofthsm2.so",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
    .expect("SoftHSM2 is installed (apt-get install softhsm2)")
}

/// A SoftHSM2 token in a temporary directory, made with softhsm2-util.
pub struct SoftToken {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    pub label: String,
    pub pin: String,
}

impl SoftToken {
    pub fn new(label: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("tokens");
        std::fs::create_dir_all(&tokens).unwrap();
        let conf = dir.path().join("softhsm2.conf");
        std::fs::write(
            &conf,
            format!(
                "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
                tokens.display()
            ),
        )
        .unwrap();
        let pin = "4711-test".to_string();
        let out = Command::new("softhsm2-util")
            .env("SOFTHSM2_CONF", &conf)
            .args([
                "--init-token",
                "--free",
                "--label",
                label,
                "--so-pin",
                "12345678",
                "--pin",
                &pin,
            ])
            .output()
            .expect("softhsm2-util runs");
        assert!(
            out.status.success(),
            "softhsm2-util: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        SoftToken {
            dir,
            conf,
            label: label.into(),
            pin,
        }
    }

    /// `hsm-bench` with SOFTHSM2_CONF pointing at this token's configuration.
    pub fn cmd(&self) -> Command {
        let mut c = cmd();
        c.env("SOFTHSM2_CONF", &self.conf);
        c
    }

    /// `hsm-bench run --quiet` through `modules` (in that order) on this token,
    /// with its label and PIN.
    pub fn run_on(&self, modules: &[&Path]) -> Command {
        let mut c = self.cmd();
        c.args(["run", "--quiet"]);
        for m in modules {
            c.arg("--module").arg(m);
        }
        c.args(["--token-label", &self.label, "--pin", &self.pin]);
        c
    }

    /// [`run_on`](Self::run_on) the delay shim wrapping SoftHSM2;
    /// `side_by_side` also runs SoftHSM2 itself first, as the unwrapped reference.
    pub fn shim_run(&self, side_by_side: bool) -> Command {
        let (softhsm, shim) = (softhsm(), shim());
        let mut c = if side_by_side {
            self.run_on(&[&softhsm, &shim])
        } else {
            self.run_on(&[&shim])
        };
        c.env("P11_DELAY_SHIM_MODULE", &softhsm);
        c
    }
}

/// Our module, `libdalek_pkcs11.so`: `$HSM_BENCH_DALEK_MODULE`, then the
/// workspace's `target/release` and `target/debug` (and `$CARGO_TARGET_DIR`).
/// `None` (with a notice) when it is not built, unless
/// `HSM_BENCH_REQUIRE_DALEK=1`, which makes that a failure.
pub fn dalek() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("HSM_BENCH_DALEK_MODULE") {
        candidates.push(PathBuf::from(p));
    }
    let ws = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut targets = vec![ws.join("target")];
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        targets.insert(0, PathBuf::from(t));
    }
    for t in targets {
        for profile in ["release", "debug"] {
            candidates.push(t.join(profile).join("libdalek_pkcs11.so"));
        }
    }
    let found = candidates.into_iter().find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("HSM_BENCH_REQUIRE_DALEK").as_deref() != Ok("1"),
            "HSM_BENCH_REQUIRE_DALEK=1 but libdalek_pkcs11.so was not found"
        );
        eprintln!("NOTICE: libdalek_pkcs11.so not built; skipping a test of our module");
    }
    found
}

/// The delay shim cdylib: `$HSM_BENCH_DELAY_SHIM`, or built here with cargo into a
/// separate target directory (cargo cannot depend on a cdylib yet).
pub fn shim() -> PathBuf {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| test_cdylib("p11-delay-shim", "HSM_BENCH_DELAY_SHIM"))
        .clone()
}

/// A test module of this workspace (`package`): the path in `$env_var`, or
/// built with cargo into `target/<package>` beside the test binary's.
pub fn test_cdylib(package: &str, env_var: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        return PathBuf::from(p);
    }
    let exe = Path::new(bin());
    let target = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join(package.trim_start_matches("p11-"));
    let out = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", package, "--target-dir"])
        .arg(&target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = target.join(format!("debug/lib{}.so", package.replace('-', "_")));
    assert!(p.is_file(), "{} exists", p.display());
    p
}

pub fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Validate a result file against cli/schema/hsm-bench-1.schema.json.
pub fn assert_valid(v: &Value) {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/hsm-bench-1.schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "schema violations:\n{}",
        errors.join("\n")
    );
}

/// The results array.
pub fn results(v: &Value) -> &Vec<Value> {
    v["results"].as_array().expect("results array")
}

/// The result for (module, op, size).
pub fn find<'a>(v: &'a Value, module: &str, op: &str) -> &'a Value {
    results(v)
        .iter()
        .find(|r| r["module"] == module && r["op"] == op)
        .unwrap_or_else(|| panic!("no result {module} {op}"))
}

/// Check the internal consistency of a measured result.
pub fn assert_sane(r: &Value) {
    let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} of {r}"));
    assert!(f("ops_per_sec") > 0.0);
    assert!(f("min_us") <= f("p50_us") + 1e-9, "{r}");
    assert!(f("p50_us") <= f("p90_us") + 1e-9);
    assert!(f("p90_us") <= f("p95_us") + 1e-9);
    assert!(f("p95_us") <= f("p99_us") + 1e-9);
    assert!(f("p99_us") <= f("p999_us") + 1e-9);
    assert!(f("p999_us") <= f("max_us") + 1e-9);
    assert!(f("min_us") <= f("mean_us") && f("mean_us") <= f("max_us"));
    assert!(f("ci95_us") >= 0.0 && f("stddev_us") >= 0.0);
    // Closed loop: n threads (in each of p processes) cannot complete more
    // than n·p / mean-latency ops per second.
    if r["mode"] == "closed" {
        let processes = r["processes"].as_f64().unwrap_or(1.0);
        let threads = r["threads"].as_f64().unwrap() * processes;
        assert!(
            f("ops_per_sec") <= threads * 1e6 / f("mean_us") * 1.05,
            "{r}"
        );
    }
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `c` with `--format json -o out`, checks that it exited 0, and returns
/// the result file, validated against the schema.
pub fn run_json(c: &mut Command, out: &Path) -> Value {
    let o = run(c.args(["--format", "json", "-o"]).arg(out));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(out);
    assert_valid(&v);
    v
}

/// Whether one line of `text` (a table row) contains every one of `parts`, e.g.
/// an op and its verdict.
pub fn has_row(text: &str, parts: &[&str]) -> bool {
    text.lines().any(|l| parts.iter().all(|p| l.contains(p)))
}

/// Write `v` as `dir/name` (a doctored baseline, say) and return the path.
pub fn write_json(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
    p
}

/// Temporary token directories (`hsm-bench-token-*`) left in `tmp`.
pub fn token_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hsm-bench-token-"))
        .collect()
}
