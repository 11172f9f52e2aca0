//! One token driven by several processes (`run --processes`), per-module
//! environment (`--module …,env=VAR=VALUE,name=LABEL`) and the results of
//! several hosts merged (`hsm-bench merge`), run on the built hsm-bench
//! against our module (and SoftHSM2 behind the hostile shim for a crash).
//! No assertion here is about timings.

mod common;

use std::path::{Path, PathBuf};

use common::hostile::{HOSTILE, hostile_shim};
use common::*;
use serde_json::Value;

/// hsm-bench with our module and a private TMPDIR.
fn dcmd(module: &Path, tmp: &Path) -> std::process::Command {
    let mut c = cmd();
    c.env("HSM_BENCH_DALEK_MODULE", module).env("TMPDIR", tmp);
    c
}

fn procs(v: &Value) -> Vec<u64> {
    results(v)
        .iter()
        .map(|r| r["processes"].as_u64().unwrap())
        .collect()
}

#[test]
fn two_processes_give_two_rows_and_a_merged_row_counting_both() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    let v = run_json(
        dcmd(&m, tmp.path()).args([
            "run",
            "--quiet",
            "--module",
            "dalek",
            "--ops",
            "sha256",
            "--iterations",
            "40",
            "--warmup",
            "2",
            "--processes",
            "2",
        ]),
        &out,
    );
    assert_eq!(v["metadata"]["processes"], serde_json::json!([2]));
    let rs = results(&v);
    assert_eq!(rs.len(), 1);
    let r = &rs[0];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["processes"], 2);
    assert_sane(r);
    let parts = r["per_process"].as_array().expect("per-process rows");
    assert_eq!(parts.len(), 2);
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p["process"], i as u64 + 1);
        assert_eq!(p["iterations"], 40, "{p}");
        assert!(p["p99_us"].as_f64().unwrap() > 0.0);
    }
    let sum: u64 = parts
        .iter()
        .map(|p| p["iterations"].as_u64().unwrap())
        .sum();
    assert_eq!(r["iterations"].as_u64().unwrap(), sum);
    assert_eq!(r["latency_hdr"]["count"].as_u64().unwrap(), sum);
    assert_eq!(r["throughput_basis"], "union window");
    // The text report shows each process and the merged row.
    let text = run(dcmd(&m, tmp.path()).args(["report"]).arg(&out));
    let text = stdout(&text);
    assert!(has_row(&text, &["sha256", "1×2p", "process 2"]), "{text}");
    assert!(
        has_row(&text, &["sha256", "merged (union window)", "80"]),
        "{text}"
    );
    assert!(
        token_dirs(tmp.path()).is_empty(),
        "temporary token left behind"
    );
}

#[test]
fn a_processes_sweep_measures_each_count() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let v = run_json(
        dcmd(&m, tmp.path())
            .args([
                "run",
                "--quiet",
                "--module",
                "dalek",
                "--ops",
                "sha256,random32",
                "--iterations",
                "20",
                "--warmup",
                "1",
                "--processes",
                "1,2",
                "--html",
            ])
            .arg(tmp.path().join("r.html")),
        &tmp.path().join("r.json"),
    );
    assert_eq!(procs(&v), [1, 2, 1, 2]);
    // The page charts ops/s vs processes and lists each process's row.
    let page = std::fs::read_to_string(tmp.path().join("r.html")).unwrap();
    assert!(
        page.contains("id=\"chart-processes-sha256\""),
        "no processes chart"
    );
    assert!(page.contains("id=\"parts\"") && page.contains("process 2"));
    for r in results(&v) {
        assert_eq!(r["status"], "ok", "{r}");
        let n = r["processes"].as_u64().unwrap();
        assert_eq!(r["iterations"].as_u64().unwrap(), 20 * n, "{r}");
        assert_eq!(r.get("per_process").is_some(), n > 1, "{r}");
    }
}

#[test]
fn env_settings_reach_only_their_modules_workers_and_their_values_are_never_shown() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("only-the-first.log");
    let out = tmp.path().join("r.json");
    let logged = format!(
        "dalek,env=DALEK_PKCS11_LOG=info,env=DALEK_PKCS11_LOG_FILE={},name=logged",
        log.display()
    );
    let mut c = dcmd(&m, tmp.path());
    c.args(["run", "--module", &logged, "--module", "dalek"])
        .args(QUICK_SHA256)
        .args(["--processes", "2", "--format", "json", "-o"])
        .arg(&out);
    let o = run(&mut c);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&out);
    assert_valid(&v);
    let modules = v["metadata"]["modules"].as_array().unwrap();
    assert_eq!(modules[0]["name"], "logged");
    assert_eq!(
        modules[0]["env"],
        serde_json::json!(["DALEK_PKCS11_LOG", "DALEK_PKCS11_LOG_FILE"])
    );
    // The same module twice, named apart; both measured.
    assert_eq!(modules[1]["name"], "dalek");
    assert!(modules[1].get("env").is_none());
    assert_eq!(find(&v, "logged", "sha256")["status"], "ok");
    assert_eq!(find(&v, "dalek", "sha256")["status"], "ok");
    // Both processes of the first module logged; the second module did not.
    let text = std::fs::read_to_string(&log).expect("the first module's log file");
    let pids: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split_once('[')?.1.split_once(']').map(|x| x.0))
        .collect();
    assert!(pids.len() >= 2, "{text}");
    // The value (the log file's path) is in no report.
    let secret = log.display().to_string();
    let file = std::fs::read_to_string(&out).unwrap();
    for shown in [&file, &stdout(&o), &stderr(&o)] {
        assert!(!shown.contains(&secret), "{shown}");
    }
    assert!(file.contains("DALEK_PKCS11_LOG_FILE=***"));
    // A value the module refuses fails that module, naming it; the error
    // shows no value either.
    let o = run(dcmd(&m, tmp.path()).args([
        "run",
        "--quiet",
        "--module",
        "dalek,env=DALEK_PKCS11_STORAGE=not-a-store-s3cr3t",
        "--ops",
        "sha256",
        "--iterations",
        "5",
    ]));
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("hsm-bench: error: module dalek"), "{err}");
    assert!(err.contains("C_Initialize"), "{err}");
    assert!(
        !err.lines()
            .any(|l| l.starts_with("hsm-bench") && l.contains("s3cr3t")),
        "{err}"
    );
}

/// A run of sha256 on a temporary token, as host `host`: its JSON file.
fn host_run(m: &Path, tmp: &Path, host: &str) -> PathBuf {
    let out = tmp.join(format!("{host}.json"));
    let mut v = run_json(
        dcmd(m, tmp).args([
            "run",
            "--quiet",
            "--module",
            "dalek",
            "--ops",
            "sha256,ed25519-sign",
            "--iterations",
            "30",
            "--warmup",
            "1",
        ]),
        &out,
    );
    v["metadata"]["system"]["hostname"] = host.into();
    write_json(tmp, &format!("{host}.json"), &v)
}

#[test]
fn merge_gives_host_rows_and_a_merged_row_and_refuses_what_cannot_merge() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (
        host_run(&m, tmp.path(), "alpha"),
        host_run(&m, tmp.path(), "beta"),
    );
    let merged = tmp.path().join("merged.json");
    let page = tmp.path().join("merged.html");
    let o = run(cmd()
        .args(["merge", "--format", "json", "-o"])
        .arg(&merged)
        .arg("--html")
        .arg(&page)
        .arg(&a)
        .arg(&b));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains("host alpha") && page.contains("<b>merged</b>"));
    let v = json(&merged);
    assert_valid(&v);
    let from: Vec<&str> = v["metadata"]["merged_from"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["host"].as_str().unwrap())
        .collect();
    assert_eq!(from, ["alpha", "beta"]);
    assert_eq!(results(&v).len(), 2);
    for r in results(&v) {
        assert_eq!(r["status"], "ok", "{r}");
        let hosts = r["hosts"].as_array().unwrap();
        assert_eq!(hosts.len(), 2);
        assert_eq!(hosts[0]["host"], "alpha");
        assert_eq!(hosts[1]["iterations"], 30);
        assert_eq!(r["iterations"], 60);
        assert_eq!(r["latency_hdr"]["count"], 60);
        assert_eq!(r["throughput_basis"], "union window");
    }
    // CSV: each host's row, then the merged row.
    let o = run(cmd().args(["merge", "--format", "csv"]).arg(&a).arg(&b));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let csv = stdout(&o);
    let hosts: Vec<&str> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.rsplit(',').next())
        .collect();
    assert_eq!(
        hosts,
        ["alpha", "beta", "merged", "alpha", "beta", "merged"]
    );
    // Text: the merged table and the per-host rows.
    let o = run(cmd().args(["merge"]).arg(&a).arg(&b));
    let text = stdout(&o);
    assert!(has_row(&text, &["sha256", "host beta"]), "{text}");
    assert!(has_row(&text, &["sha256", "merged", "60"]), "{text}");

    // Refusals: one line, exit 2.
    let refused = |files: &[&Path], what: &str| {
        let o = run(cmd().arg("merge").args(files));
        assert_eq!(code(&o), 2, "{what}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("hsm-bench: error:") && err.contains(what),
            "{err}"
        );
    };
    let mut old = json(&b);
    for r in old["results"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("latency_hdr");
    }
    let old = write_json(tmp.path(), "old.json", &old);
    refused(&[&a, &old], "latency_hdr");
    let mut other = json(&b);
    other["metadata"]["iterations"] = 31.into();
    let other = write_json(tmp.path(), "other.json", &other);
    refused(&[&a, &other], "iterations");
    let junk = tmp.path().join("junk.json");
    std::fs::write(&junk, "{ not json").unwrap();
    refused(&[&a, &junk], "junk.json");
}

#[test]
fn a_process_that_crashes_costs_only_that_op_and_is_named() {
    let t = SoftToken::new("procs-crash");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut c = t.hostile_run("crash=C_Sign:segv@30", &[&hostile_shim()]);
    c.args([
        "--ops",
        "p256-sign,sha256",
        "--iterations",
        "200",
        "--processes",
        "2",
        "--format",
        "json",
        "-o",
    ])
    .arg(&out);
    let o = run(&mut c);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&out);
    assert_valid(&v);
    let crashed = find(&v, HOSTILE, "p256-sign");
    assert_eq!(crashed["status"], "error");
    let why = crashed["reason"].as_str().unwrap();
    assert!(
        why.contains("of 2: its worker process was killed by SIGSEGV") && why.contains("C_Sign"),
        "{why}"
    );
    // The next op runs on fresh workers, both processes.
    let next = find(&v, HOSTILE, "sha256");
    assert_eq!(next["status"], "ok", "{next}");
    assert_eq!(next["per_process"].as_array().unwrap().len(), 2);
}
