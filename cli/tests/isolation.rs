//! A module cannot take hsm-bench down: every module runs in a worker
//! process, so one that crashes (SIGSEGV, abort, exit), hangs or runs out of
//! memory costs only its own op, named with the signal and the calls in
//! flight; the other modules' results and its own finished ops are kept, the
//! JSON stays valid at every moment, and Ctrl-C ends a run even while a call
//! hangs. SoftHSM2 beside the hostile shim wrapping it (`cli/hostile-shim`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::hostile::{HOSTILE, hostile_shim};
use common::*;

const PLAIN: &str = "softhsm2";

/// `hsm-bench run` on SoftHSM2 and on the hostile shim (misbehaving as
/// `hostile` says) over the same token, JSON into `dir/r.json`.
fn hostile_run(t: &SoftToken, hostile: &str, args: &str, dir: &Path) -> std::process::Command {
    let mut c = t.hostile_run(hostile, &[&softhsm(), &hostile_shim()]);
    c.args(args.split_whitespace())
        .args(["--format", "json", "-o"])
        .arg(dir.join("r.json"));
    c
}

/// Run to the end: exit code (never a signal), no panic on stderr. A
/// hostile module's own report (its allocation failure, with the Rust
/// runtime's backtrace note) is passed on from the process that hosted it
/// and is not one; `RUST_BACKTRACE` is cleared so that report stays short.
fn finished(c: &mut std::process::Command) -> Output {
    c.env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    let o = run(c);
    let err = stderr(&o);
    assert!(
        o.status.code().is_some(),
        "hsm-bench died: {:?}\n{err}",
        o.status
    );
    assert!(!err.contains("panicked"), "{err}");
    o
}

fn reason(r: &serde_json::Value) -> String {
    r["reason"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_module_that_crashes_in_an_op_costs_only_that_op() {
    let t = SoftToken::new("crash");
    for (kind, how) in [
        ("segv", "killed by SIGSEGV"),
        ("abort", "killed by SIGABRT"),
        ("exit", "exited with status 3"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let spec = format!("crash=C_Sign:{kind}@30");
        let mut c = hostile_run(
            &t,
            &spec,
            "--ops p256-sign,sha256 --iterations 200",
            dir.path(),
        );
        let o = finished(&mut c);
        assert_eq!(code(&o), 0, "{kind}: {}", stderr(&o));
        let v = json(&dir.path().join("r.json"));
        assert_valid(&v);
        let crashed = find(&v, HOSTILE, "p256-sign");
        assert_eq!(crashed["status"], "error", "{kind}: {crashed}");
        let why = reason(crashed);
        assert!(
            why.contains(how) && why.contains("C_Sign") && why.contains("p256-sign"),
            "{kind}: {why}"
        );
        // The other module's op, and the crashed module's next op (a new
        // worker), are measured.
        assert_eq!(find(&v, PLAIN, "p256-sign")["status"], "ok", "{kind}");
        assert_eq!(find(&v, HOSTILE, "sha256")["status"], "ok", "{kind}");
        assert_eq!(find(&v, PLAIN, "sha256")["status"], "ok", "{kind}");
        assert!(v["metadata"].get("partial").is_none(), "{kind}");
    }
    // --fail-on-error turns the crash into exit code 5, naming it.
    let dir = tempfile::tempdir().unwrap();
    let mut c = hostile_run(
        &t,
        "crash=C_Sign:segv@30",
        "--ops p256-sign --iterations 100 --fail-on-error",
        dir.path(),
    );
    let o = finished(&mut c);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    assert!(stderr(&o).contains("SIGSEGV"), "{}", stderr(&o));
}

#[test]
fn a_crash_or_hang_in_c_finalize_keeps_every_result() {
    let t = SoftToken::new("final");
    for spec in ["crash=C_Finalize:segv", "hang=C_Finalize:60s"] {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let mut c = hostile_run(
            &t,
            spec,
            "--ops sha256 --iterations 50 --max-op-time 3",
            dir.path(),
        );
        let o = finished(&mut c);
        // Bounded by --max-op-time, not by the 60 s hang (no timing
        // asserted beyond "well before the hang ends").
        assert!(started.elapsed() < Duration::from_secs(50), "{spec}");
        assert_eq!(code(&o), 0, "{spec}: {}", stderr(&o));
        let v = json(&dir.path().join("r.json"));
        assert_valid(&v);
        assert_eq!(find(&v, HOSTILE, "sha256")["status"], "ok", "{spec}");
        assert_eq!(find(&v, PLAIN, "sha256")["status"], "ok", "{spec}");
        let modules = v["metadata"]["modules"].as_array().unwrap();
        let hostile = modules.iter().find(|m| m["name"] == HOSTILE).unwrap();
        let failure = hostile["failures"][0].as_str().unwrap_or_default();
        assert!(failure.contains("C_Finalize"), "{spec}: {hostile}");
        let plain = modules.iter().find(|m| m["name"] == PLAIN).unwrap();
        assert!(plain.get("failures").is_none(), "{spec}: {plain}");
        assert!(
            stderr(&o).contains("warning: module p11_hostile_shim"),
            "{spec}"
        );
    }
}

#[test]
fn a_hung_call_ends_its_op_at_max_op_time_and_the_run_goes_on() {
    // The case: C_Sign blocks 60 s after 300 calls; --duration 1
    // --max-op-time 3 ran 62 s and reported the op as ok.
    let t = SoftToken::new("hang");
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut c = hostile_run(
        &t,
        "hang=C_Sign:60s@300",
        "--ops ed25519-sign,sha256 --duration 1 --max-op-time 3",
        dir.path(),
    );
    let o = finished(&mut c);
    assert!(started.elapsed() < Duration::from_secs(50));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&dir.path().join("r.json"));
    assert_valid(&v);
    let hung = find(&v, HOSTILE, "ed25519-sign");
    assert_eq!(hung["status"], "error", "{hung}");
    assert_eq!(hung["cut_short"], true, "{hung}");
    let why = reason(hung);
    assert!(
        why.contains("no answer within")
            && why.contains("C_Sign")
            && why.contains("--max-op-time 3"),
        "{why}"
    );
    assert_eq!(find(&v, PLAIN, "ed25519-sign")["status"], "ok");
    assert_eq!(find(&v, HOSTILE, "sha256")["status"], "ok");
}

#[test]
fn a_module_out_of_memory_fails_its_op_not_the_machine() {
    let t = SoftToken::new("oom");
    let dir = tempfile::tempdir().unwrap();
    let mut c = hostile_run(
        &t,
        "oom=C_Digest@20",
        "--ops sha256 --iterations 100",
        dir.path(),
    );
    c.env("HSM_BENCH_WORKER_MEMORY_MIB", "1024");
    let o = finished(&mut c);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&dir.path().join("r.json"));
    assert_valid(&v);
    let r = find(&v, HOSTILE, "sha256");
    assert_eq!(r["status"], "error", "{r}");
    assert!(reason(r).contains("SIGABRT"), "{r}");
    assert_eq!(find(&v, PLAIN, "sha256")["status"], "ok");
}

/// A child killed if the test fails before it is waited for.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Wait until `path` holds a JSON report with `n` results (a partial one
/// written during the run), at most `limit`.
fn wait_for_results(path: &PathBuf, n: usize, limit: Duration) -> serde_json::Value {
    let until = Instant::now() + limit;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && results(&v).len() >= n
        {
            return v;
        }
        assert!(
            Instant::now() < until,
            "no {n} results in {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn results_are_written_as_ops_finish_and_ctrl_c_ends_a_hung_run() {
    let t = SoftToken::new("ctrlc");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // p256-sign runs first on both modules, then C_Digest hangs for 60 s.
    let mut c = hostile_run(
        &t,
        "hang=C_Digest:60s",
        "--ops p256-sign,sha256 --iterations 50",
        dir.path(),
    );
    let mut guard = KillOnDrop(Some(c.stderr(Stdio::piped()).spawn().unwrap()));
    let partial = wait_for_results(&out, 2, Duration::from_secs(40));
    // Written during the run: marked partial, valid, with the finished op.
    assert_valid(&partial);
    assert_eq!(partial["metadata"]["partial"], true);
    assert_eq!(find(&partial, HOSTILE, "p256-sign")["status"], "ok");
    // The hang is under way (no default limit reached); one Ctrl-C ends it.
    std::thread::sleep(Duration::from_millis(500));
    let child = guard.0.take().unwrap();
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let v = json(&out);
    assert_valid(&v);
    assert_eq!(v["metadata"]["interrupted"], true);
    assert!(v["metadata"].get("partial").is_none());
    assert_eq!(find(&v, PLAIN, "p256-sign")["status"], "ok");
    assert_eq!(find(&v, HOSTILE, "p256-sign")["status"], "ok");
    assert!(
        !results(&v).iter().any(|r| r["op"] == "sha256"),
        "the op under way is dropped"
    );
}

#[test]
fn a_module_that_crashes_or_hangs_while_opening_is_a_one_line_error() {
    let t = SoftToken::new("opening");
    for (spec, how) in [
        ("crash=C_Login:segv", "was killed by SIGSEGV"),
        ("hang=C_Initialize:60s", "no answer within"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = t.hostile_run(spec, &[&hostile_shim()]);
        c.args([
            "--ops",
            "sha256",
            "--iterations",
            "10",
            "--max-op-time",
            "2",
        ])
        .args(["--format", "json", "-o"])
        .arg(dir.path().join("r.json"));
        let o = finished(&mut c);
        common::hostile::assert_one_line_error(
            &o,
            2,
            &["module p11_hostile_shim (", how, "while starting"],
        );
    }
}

#[test]
fn list_survives_a_module_that_crashes() {
    let t = SoftToken::new("list");
    let mut c = t.hostile("crash=C_GetSlotList:segv");
    c.args(["list", "--module"]).arg(hostile_shim());
    let o = finished(&mut c);
    common::hostile::assert_one_line_error(
        &o,
        2,
        &["module p11_hostile_shim (", "was killed by SIGSEGV"],
    );
    // Several modules: each is listed in its own process, in order.
    let mut c = t.cmd();
    c.env("P11_HOSTILE_MODULE", softhsm())
        .args(["list", "--format", "json", "--module"])
        .arg(softhsm())
        .arg("--module")
        .arg(hostile_shim());
    let o = finished(&mut c);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [PLAIN, HOSTILE]);
}
