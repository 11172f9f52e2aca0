//! Comparing runs (docs/benchmarking.md, "Comparing runs and exit codes",
//! "Baselines in CI"): a doctored baseline gates with exit codes, reference
//! ratios are recorded and compared, and a baseline of another machine
//! class is refused.

use super::*;

#[test]
fn comparison_with_a_doctored_baseline_gates_with_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    // Enough samples of fast ops that the confidence interval is narrow.
    let cur = dir.path().join("cur.json");
    let gate_ops = [
        "run",
        "--module",
        "softhsm",
        "--ops",
        "sha256,random32",
        "--iterations",
        "400",
        "--warmup",
        "20",
        "--quiet",
    ];
    let o = run(cmd()
        .args(gate_ops)
        .args(["--format", "json", "-o"])
        .arg(&cur));
    assert_eq!(code(&o), 0);
    let v = json(&cur);
    let write = |name: &str, v: &Value| write_json(dir.path(), name, v);
    // A baseline where sha256 was ten times faster, with a tight CI.
    let faster = write(
        "faster.json",
        &doctor(&v, "sha256", |r| {
            let ops = r["ops_per_sec"].as_f64().unwrap();
            let mean = r["mean_us"].as_f64().unwrap();
            r.insert("ops_per_sec".into(), (ops * 10.0).into());
            r.insert("mean_us".into(), (mean / 10.0).into());
            r.insert("ci95_us".into(), (mean / 1000.0).into());
        }),
    );
    let o = run(cmd()
        .arg("compare")
        .arg(&cur)
        .arg(&faster)
        .arg("--fail-on-regression"));
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.contains(" sha256 "))
        .expect("sha256 row");
    assert!(line.contains("REGRESSED"), "{line}");
    assert!(
        !text
            .lines()
            .filter(|l| l.contains("random32"))
            .any(|l| l.contains("REGRESSED"))
    );
    // Without --fail-on-regression the comparison still reports but exits 0.
    assert_eq!(code(&run(cmd().arg("compare").arg(&cur).arg(&faster))), 0);
    // A file compared with itself is unchanged.
    assert_eq!(
        code(&run(cmd()
            .arg("compare")
            .arg(&cur)
            .arg(&cur)
            .arg("--fail-on-regression"))),
        0
    );
    // JSON and markdown renderings.
    let o = run(cmd()
        .arg("compare")
        .arg(&cur)
        .arg(&faster)
        .args(["--format", "json"]));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = c["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["op"] == "sha256")
        .unwrap();
    assert_eq!(e["class"], "regressed");
    assert!(e["delta_pct"].as_f64().unwrap() < -85.0);
    let o = run(cmd()
        .arg("compare")
        .arg(&cur)
        .arg(&faster)
        .args(["--format", "markdown"]));
    assert!(stdout(&o).contains("| module | op |"));
    // Mismatched settings make the comparison inconclusive: exit 3.
    let other_mech = write(
        "mech.json",
        &doctor(&v, "sha256", |r| {
            r.insert("mechanism".into(), "CKM_SHA512".into());
        }),
    );
    let o = run(cmd().arg("compare").arg(&cur).arg(&other_mech));
    assert_eq!(code(&o), 3);
    assert!(stdout(&o).contains("MISMATCHED"));
    // Not a result file: exit 2 with one line.
    let bogus = dir.path().join("bogus.json");
    std::fs::write(&bogus, "{\"x\": 1}").unwrap();
    let o = run(cmd().arg("compare").arg(&cur).arg(&bogus));
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o).lines().count(), 1);
    // `run --compare` gates the same way.
    let o = run(cmd()
        .args(gate_ops)
        .arg("--fail-on-regression")
        .arg("--compare")
        .arg(&faster));
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("REGRESSED"));
}

#[test]
fn reference_ratios_are_recorded_and_compared() {
    let t = SoftToken::new("ratio-test");
    let dir = tempfile::tempdir().unwrap();
    let bench = |delay: &str, name: &str| {
        let out = dir.path().join(name);
        let o = run(t
            .shim_run(true)
            .env("P11_DELAY_SHIM_DELAY", delay)
            .args([
                "--reference",
                "softhsm2",
                "--ops",
                "sha256",
                "--iterations",
                "60",
                "--format",
                "json",
                "-o",
            ])
            .arg(&out));
        assert_eq!(code(&o), 0);
        out
    };
    let base = bench("C_Digest=0us", "base.json");
    let slow = bench("C_Digest=500us", "slow.json");
    let v = json(&slow);
    assert_valid(&v);
    let r = &v["ratios"][0];
    assert_eq!(r["module"], "p11_delay_shim");
    assert_eq!(r["reference"], "softhsm2");
    assert!(r["ratio"].as_f64().unwrap() < 0.2, "{r}");
    let o = run(cmd().arg("compare").arg(&slow).arg(&base).args([
        "--reference",
        "softhsm2",
        "--fail-on-regression",
    ]));
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("ratio to softhsm2"));
    // An unknown reference is inconclusive.
    assert_eq!(
        code(&run(cmd()
            .arg("compare")
            .arg(&slow)
            .arg(&base)
            .args(["--reference", "nope"]))),
        3
    );

    // In ratio mode the reference must be the same library in both files, and
    // the other modules the same builds: a baseline against SoftHSM2 2.7 (or of
    // another build of the judged module) is refused with one line, exit 3.
    let base_v = json(&base);
    let write = |name: &str, v: &Value| write_json(dir.path(), name, v);
    let with_library = |module: &str, field: &str, value: &str| {
        let mut v = base_v.clone();
        for m in v["metadata"]["modules"].as_array_mut().unwrap() {
            if m["name"] == module {
                m["library"][field] = value.into();
            }
        }
        v
    };
    let ratio_compare = |b: &std::path::Path| {
        run(cmd().arg("compare").arg(&slow).arg(b).args([
            "--reference",
            "softhsm2",
            "--fail-on-regression",
        ]))
    };
    for (module, field, says) in [
        ("softhsm2", "version", "reference softhsm2 is"),
        ("softhsm2", "description", "reference softhsm2 is"),
        (
            "p11_delay_shim",
            "description",
            "module p11_delay_shim is build",
        ),
    ] {
        let b = write(
            "other-build.json",
            &with_library(module, field, "2.7 other"),
        );
        let o = ratio_compare(&b);
        assert_eq!(code(&o), 3, "{module} {field}: {}", stdout(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(says) && err.contains("--allow-class-mismatch"),
            "{err}"
        );
    }
    // A new version of the judged module is what a gate is for: compared.
    let b = write(
        "new-version.json",
        &with_library("p11_delay_shim", "version", "9.9"),
    );
    assert_eq!(code(&ratio_compare(&b)), 1);

    // Portable floors on the same two runs: the undelayed shim keeps about
    // SoftHSM2's speed, the delayed one loses 80 % of it.
    let floors = dir.path().join("floors.toml");
    std::fs::write(
        &floors,
        "reference = \"softhsm2\"\n[[floor]]\nop = \"sha256\"\ndata_size = \"1K\"\nmin_ratio = 0.5\n",
    )
    .unwrap();
    let check = |f: &std::path::Path| run(cmd().arg("check-floors").arg(f).arg(&floors));
    let o = check(&base);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("1 of 1 floors hold"), "{}", stdout(&o));
    let o = check(&slow);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let text = stdout(&o);
    assert!(
        has_row(&text, &["p11_delay_shim", "sha256", "BELOW FLOOR"]),
        "{text}"
    );
    // The same floor with another reference name: nothing to divide by, exit 3.
    let o = run(cmd()
        .arg("check-floors")
        .arg(&base)
        .arg(&floors)
        .args(["--reference", "nope"]));
    assert_eq!(code(&o), 3);
    assert!(stdout(&o).contains("NOT CHECKED"), "{}", stdout(&o));
    // A floor on an op the run left out cannot be checked: exit 3, never 0.
    std::fs::write(
        &floors,
        "reference = \"softhsm2\"\n[[floor]]\nop = \"ed25519-sign\"\nmin_ratio = 0.5\n",
    )
    .unwrap();
    let o = check(&base);
    assert_eq!(code(&o), 3);
    assert!(
        stdout(&o).contains("ed25519-sign: not measured"),
        "{}",
        stdout(&o)
    );
    // A broken floors file: one line, exit 2.
    std::fs::write(&floors, "reference = \"softhsm2\"\n").unwrap();
    let o = check(&base);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn a_baseline_of_another_machine_class_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cur = dir.path().join("cur.json");
    let gate_ops = [
        "run",
        "--module",
        "softhsm",
        "--ops",
        "sha256",
        "--iterations",
        "100",
        "--quiet",
    ];
    let v = run_json(cmd().args(gate_ops), &cur);
    // The run records this machine's class, the same `hsm-bench machine` shows.
    let class = &v["metadata"]["system"]["machine_class"];
    let o = run(cmd().args(["machine", "--id"]));
    assert_eq!(code(&o), 0);
    assert_eq!(class["id"], stdout(&o).trim());
    let o = run(cmd().args(["machine", "--format", "json"]));
    let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(&shown, class);
    assert!(stdout(&run(cmd().arg("machine"))).contains("features"));

    let write = |name: &str, v: &Value| write_json(dir.path(), name, v);
    // The same run, said to come from a CPU of another vendor without SHA-NI,
    // and ten times faster.
    let mut other = doctor(&v, "sha256", |r| {
        let ops = r["ops_per_sec"].as_f64().unwrap();
        r.insert("ops_per_sec".into(), (ops * 10.0).into());
    });
    let c = &mut other["metadata"]["system"]["machine_class"];
    c["vendor"] = "othervendor".into();
    c["id"] = "x86_64-othervendor-f1m1-64c-debian12-aes".into();
    let feats = c["features"].as_array_mut().unwrap();
    feats.retain(|f| f != "sha");
    let other = write("other-class.json", &other);
    let compare = |b: &std::path::Path, extra: &[&str]| {
        run(cmd()
            .arg("compare")
            .arg(&cur)
            .arg(b)
            .arg("--fail-on-regression")
            .args(extra))
    };
    let o = compare(&other, &[]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("hsm-bench: error: the baseline is of machine class x86_64-othervendor-"),
        "{err}"
    );
    assert!(err.contains("vendor othervendor vs "), "{err}");
    assert!(err.contains("--allow-class-mismatch"), "{err}");
    assert!(stdout(&o).is_empty(), "nothing judged: {}", stdout(&o));
    // Told to, it judges anyway (the 10x drop is a regression) and warns.
    let o = compare(&other, &["--allow-class-mismatch"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("warning: machine class differs"),
        "{}",
        stdout(&o)
    );
    // A baseline from before classes were recorded is refused the same way.
    let mut old = json(&cur);
    old["metadata"]["system"]
        .as_object_mut()
        .unwrap()
        .remove("machine_class");
    let old = write("old.json", &old);
    let o = compare(&old, &[]);
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("the baseline records no machine class"));
    // `run --compare` refuses before measuring anything: no result is written.
    let out = dir.path().join("never.json");
    let o = run(cmd()
        .args(gate_ops)
        .arg("--compare")
        .arg(&other)
        .args(["--format", "json", "-o"])
        .arg(&out));
    assert_eq!(code(&o), 3);
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(!out.exists());
    // The same class is judged as before.
    assert_eq!(code(&compare(&cur, &[])), 0);
}
