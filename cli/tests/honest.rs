//! Honest results on real tokens: warmup errors, time bounds, exit codes,
//! checks before the benchmark starts, Ctrl-C and closed stdout, missed rates.
//! SoftHSM2 tokens, slowed down or made to fail by the delay shim.

mod common;

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use common::*;

/// Runs the shim over `t` with `env` and `args` (split at spaces), JSON into a
/// temporary file; returns the output, the file and its directory (to keep it alive).
fn shim_json(
    t: &SoftToken,
    env: &[(&str, &str)],
    args: &str,
) -> (Output, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut c = t.shim_run(false);
    c.envs(env.iter().copied())
        .args(args.split_whitespace())
        .args(["--format", "json", "-o"])
        .arg(&out);
    (run(&mut c), out, dir)
}

#[test]
fn warmup_errors_are_counted_and_an_op_failing_them_all_is_not_measured() {
    let t = SoftToken::new("warm-fail");
    let (o, out, _dir) = shim_json(
        &t,
        &[("P11_DELAY_SHIM_FAIL", "C_GenerateRandom=0x30")],
        "--ops random32,sha256 --iterations 20 --warmup 5",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&out);
    assert_valid(&v);
    let r = find(&v, "p11_delay_shim", "random32");
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["iterations"], 0, "{r}");
    assert_eq!(r["warmup_errors"], 5, "{r}");
    assert_eq!(r["warmup_first_error"], "CKR_DEVICE_ERROR", "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.contains("warmup failed") && reason.contains("CKR_DEVICE_ERROR"),
        "{reason}"
    );
    let ok = find(&v, "p11_delay_shim", "sha256");
    assert_eq!(ok["status"], "ok");
    assert!(ok.get("warmup_errors").is_none(), "{ok}");
    // The text table names the cause too.
    let text = stdout(&run(cmd().arg("report").arg(&out)));
    assert!(
        has_row(&text, &["random32", "warmup failed", "CKR_DEVICE_ERROR"]),
        "{text}"
    );
}

#[test]
fn a_slow_op_is_cut_short_by_max_op_time_with_a_partial_result() {
    let t = SoftToken::new("slow-cap");
    // 200 ms per C_Sign: the warmup (50 calls) alone would take 10 s.
    let started = Instant::now();
    let (o, out, _dir) = shim_json(
        &t,
        &[("P11_DELAY_SHIM_DELAY", "C_Sign=200ms")],
        "--ops p256-sign --duration 0.3 --rounds 3 --warmup 50 --max-op-time 1",
    );
    let took = started.elapsed();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Preparing signs once or twice too; warmup and rounds stay within the
    // cap (about 1.5 s; the bound leaves room for a busy machine).
    assert!(took < Duration::from_secs(6), "took {took:?}");
    let v = json(&out);
    assert_valid(&v);
    assert_eq!(v["metadata"]["max_op_time_s"], 1.0);
    let r = find(&v, "p11_delay_shim", "p256-sign");
    assert_eq!(r["cut_short"], true, "{r}");
    let warning = r["warnings"][0].as_str().unwrap();
    assert!(warning.contains("cut short by --max-op-time"), "{warning}");
    let n = r["iterations"].as_u64().unwrap();
    assert!((1..=5).contains(&n), "{r}");
    // Too few samples for fences: no outliers flagged.
    assert_eq!(r["outliers_high"], 0, "{r}");
    let text = stdout(&run(cmd().arg("report").arg(&out)));
    assert!(
        has_row(&text, &["warning: p256-sign", "cut short"]),
        "{text}"
    );
}

#[test]
fn a_run_that_measured_nothing_exits_4_after_writing_its_results() {
    let t = SoftToken::new("nothing");
    let (o, out, _dir) = shim_json(
        &t,
        &[
            ("P11_DELAY_SHIM_HIDE", "CKM_EDDSA"),
            ("P11_DELAY_SHIM_FAIL", "C_GenerateRandom=0x30"),
        ],
        "--ops ed25519-sign,random32 --iterations 5",
    );
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("nothing was measured (1 unsupported, 1 failed)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let v = json(&out);
    assert_valid(&v);
    assert_eq!(results(&v).len(), 2);
}

#[test]
fn fail_on_error_exits_5_when_an_op_failed() {
    let t = SoftToken::new("fail-on-err");
    let failing = |extra: &[&str]| {
        let mut c = t.shim_run(false);
        c.env("P11_DELAY_SHIM_FAIL", "C_GenerateRandom=0x30")
            .args(["--ops", "random32,sha256", "--iterations", "5"])
            .args(extra);
        run(&mut c)
    };
    assert_eq!(code(&failing(&[])), 0, "failures alone do not fail the run");
    let o = failing(&["--fail-on-error"]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("1 op failed (--fail-on-error): random32 [p11_delay_shim]")
            && err.contains("CKR_DEVICE_ERROR"),
        "{err}"
    );
    // The table still went to stdout.
    assert!(has_row(&stdout(&o), &["sha256"]), "{}", stdout(&o));
    // Nothing failed: exit 0 with the flag too.
    let o =
        run(t
            .shim_run(false)
            .args(["--ops", "sha256", "--iterations", "5", "--fail-on-error"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// `hsm-bench run` on SoftHSM2 with a temporary token in the private `tmp`.
fn softhsm_run(tmp: &std::path::Path) -> std::process::Command {
    let mut c = cmd();
    c.env("TMPDIR", tmp)
        .args(["run", "--quiet", "--module", "softhsm"]);
    c
}

#[test]
fn a_bad_output_path_is_refused_before_any_module_is_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-dir/r.json");
    let not_dir = tmp.path().join("file");
    std::fs::write(&not_dir, "x").unwrap();
    for (path, why) in [
        (missing.clone(), "does not exist"),
        (tmp.path().to_path_buf(), "is a directory"),
        (not_dir.join("r.json"), "is not a directory"),
    ] {
        let o = run(softhsm_run(tmp.path())
            .args(["--ops", "sha256", "--iterations", "5", "--format", "json"])
            .arg("-o")
            .arg(&path));
        assert_eq!(code(&o), 2, "{path:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("hsm-bench: error: cannot write --output")
                && err.contains(&path.display().to_string())
                && err.contains(why),
            "{err}"
        );
        assert!(token_dirs(tmp.path()).is_empty(), "a token was made");
    }
    // Through the shim, which logs C_Login: the module is never even logged into.
    let t = SoftToken::new("bad-output");
    let log = tmp.path().join("calls.log");
    let o = run(t
        .shim_run(false)
        .env("P11_DELAY_SHIM_CALL_LOG", &log)
        .args(["--ops", "sha256", "-o"])
        .arg(&missing));
    assert_eq!(code(&o), 2);
    assert!(
        !log.exists(),
        "C_Login was called before the output was checked"
    );
    // report --output too.
    let o = run(cmd()
        .args(["report", "/nonexistent.json", "-o"])
        .arg(&missing));
    assert!(
        stderr(&o).contains("cannot write --output"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn each_bad_profile_key_is_refused_naming_the_file_and_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("ops = []\n", "key `ops` is empty"),
        (
            "ops = [\"nope-*\"]\n",
            "key `ops`: pattern 'nope-*' matches no op",
        ),
        (
            "ops = [\"sha256\"]\nthreads = []\n",
            "key `threads` is empty",
        ),
        (
            "ops = [\"sha256\"]\nthreads = [0]\n",
            "key `threads` values",
        ),
        (
            "ops = [\"sha256\"]\niterations = 0\n",
            "key `iterations` must be at least 1",
        ),
        (
            "ops = [\"sha256\"]\nduration = 0.0\n",
            "key `duration` must be",
        ),
        (
            "ops = [\"sha256\"]\nmax_op_time = 0.0\n",
            "key `max_op_time` must be",
        ),
        ("ops = [\"sha256\"]\ndata_sizes = [0]\n", "key `data_sizes`"),
        (
            "ops = [\"sha256\"]\ndata_sizes = []\n",
            "key `data_sizes` is empty",
        ),
        ("ops = [\"sha256\"]\nrounds = 0\n", "key `rounds`"),
        ("ops = [\"sha256\"]\nrate = 0.0\n", "key `rate`"),
        (
            "ops = [\"sha256\"]\npercentiles = [0]\n",
            "key `percentiles`",
        ),
        ("mix = \"nope=1\"\n", "key `mix`"),
        (
            "ops = [\"sha256\"]\n[[override]]\nops = [\"rsa9*\"]\niterations = 2\n",
            "key `override.ops`: pattern 'rsa9*' matches no op",
        ),
        (
            "ops = [\"sha256\"]\n[[override]]\nops = [\"sha*\"]\niterations = 0\n",
            "key `override.iterations`",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let file = tmp.path().join(format!("bad{i}.toml"));
        std::fs::write(&file, text).unwrap();
        let o = run(softhsm_run(tmp.path()).arg("--profile").arg(&file));
        assert_eq!(code(&o), 2, "{text}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("profile {}: ", file.display())) && err.contains(want),
            "{text}: {err}"
        );
        assert!(!err.contains("--"), "names the key, not a flag: {err}");
        assert!(token_dirs(tmp.path()).is_empty());
    }
}

/// Waits up to `limit` for `child` to exit; kills it (and fails) after that.
fn wait_for(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_writes_the_finished_results_removes_the_token_and_exits_130() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    let mut child = cmd()
        .env("TMPDIR", tmp.path())
        .args([
            "run",
            "--module",
            "softhsm",
            "--ops",
            "sha256,sha384,sha512",
        ])
        .args(["--duration", "4", "--warmup", "1", "--format", "json", "-o"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first per-op line on stderr: sha256 is finished, sha384 under way.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.starts_with("[1/3] sha256"), "{line}");
    assert!(
        !token_dirs(tmp.path()).is_empty(),
        "the run has a temporary token"
    );
    std::thread::sleep(Duration::from_millis(200));
    let pid = child.id() as libc::pid_t;
    // SAFETY: sending SIGINT to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let started = Instant::now();
    let status = wait_for(&mut child, Duration::from_secs(10));
    // The two ops left would take 8 s more.
    assert!(started.elapsed() < Duration::from_secs(4), "stops promptly");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(
        rest.contains("interrupted: 1 finished results written"),
        "{rest}"
    );
    assert!(!rest.contains("panic"), "{rest}");
    let v = json(&out);
    assert_valid(&v);
    assert_eq!(v["metadata"]["interrupted"], true);
    let ops: Vec<&str> = results(&v)
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["sha256"]);
    assert_eq!(find(&v, "softhsm", "sha256")["status"], "ok");
    assert!(
        token_dirs(tmp.path()).is_empty(),
        "temporary token left behind"
    );
}

#[test]
fn a_closed_stdout_ends_quietly_without_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        "ops",
        "run --quiet --module softhsm --ops sha256 --iterations 5",
    ] {
        // The reader is gone before hsm-bench writes a byte.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = cmd()
            .env("TMPDIR", tmp.path())
            .args(args.split_whitespace())
            .stdout(writer)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(141), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: quiet, but: {err}");
        assert!(token_dirs(tmp.path()).is_empty());
    }
}

#[test]
fn a_rate_far_above_what_the_token_can_do_is_reported_as_missed() {
    let t = SoftToken::new("rate");
    let rate = |r: &str| {
        let args = format!("--ops sha256 --duration 0.3 --rate {r}");
        let (o, out, _dir) = shim_json(&t, &[("P11_DELAY_SHIM_DELAY", "C_Digest=1ms")], &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v = json(&out);
        assert_valid(&v);
        let r = find(&v, "p11_delay_shim", "sha256").clone();
        (r, stdout(&run(cmd().arg("report").arg(&out))))
    };
    // At most 1000 ops/s with 1 ms per call: 100,000 ops/s cannot be reached.
    let (r, text) = rate("100000");
    assert_eq!(r["rate_missed"], true, "{r}");
    let achieved = r["rate_achieved"].as_f64().unwrap();
    assert!(achieved > 0.0 && achieved < 1100.0, "{r}");
    assert_eq!(r["rate_target"], 100000.0);
    let w = r["warnings"][0].as_str().unwrap();
    assert!(
        w.contains("target rate missed") && w.contains("of 100,000 ops/s"),
        "{w}"
    );
    assert!(
        has_row(&text, &["warning: sha256", "target rate missed"]),
        "{text}"
    );
    // 100 ops/s is within reach, but whether a busy machine keeps it in
    // 0.3 s is a matter of load (the 95 % rule is unit-tested on figures in
    // measure/bench.rs): here only what holds on any machine. The open loop
    // never starts calls faster than the target, and the report says
    // "missed" exactly when the result does.
    let (r, text) = rate("100");
    let achieved = r["rate_achieved"].as_f64().unwrap();
    assert!(achieved > 0.0 && achieved <= 100.0 * 1.05, "{r}");
    let missed = r.get("rate_missed") == Some(&serde_json::Value::Bool(true));
    assert_eq!(missed, achieved < 95.0, "{r}");
    assert_eq!(text.contains("target rate missed"), missed, "{text}");
}

#[test]
fn a_second_ctrl_c_exits_at_once_even_inside_a_hanging_call() {
    let t = SoftToken::new("hang");
    let mut child = t
        .shim_run(false)
        .env("P11_DELAY_SHIM_DELAY", "C_Digest=20s")
        .args(["--ops", "sha256", "--iterations", "5"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id() as libc::pid_t;
    // SAFETY: sending SIGINT to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first waits for the call"
    );
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = wait_for(&mut child, Duration::from_secs(2));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted twice"), "{err}");
}
