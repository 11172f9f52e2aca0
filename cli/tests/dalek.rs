//! End-to-end tests against our own module, `libdalek_pkcs11.so`.
//!
//! The module is looked for in `$HSM_BENCH_DALEK_MODULE`, then in the workspace's
//! `target/release` and `target/debug` (and `$CARGO_TARGET_DIR`). When it is not
//! built these tests print a notice and pass, unless `HSM_BENCH_REQUIRE_DALEK=1`
//! is set (CI sets it after building the provider), in which case they fail.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// hsm-bench with our module named explicitly and a private TMPDIR, so the test can
/// check that the temporary token is removed.
fn dcmd(module: &PathBuf, tmp: &std::path::Path) -> std::process::Command {
    let mut c = cmd();
    c.env("HSM_BENCH_DALEK_MODULE", module).env("TMPDIR", tmp);
    c
}

fn leftovers(tmp: &std::path::Path) -> Vec<String> {
    token_dirs(tmp)
}

const QUICK_OPS: &str = "ed25519-sign,ed25519-verify,p256-sign,p256-verify,rsa2048-sign,rsa2048-verify,aes256-gcm-encrypt,aes256-gcm-decrypt,sha256,hmac-sha256,aes256-cmac,random32,ed25519-keygen,p256-keygen,aes256-keygen,find-object";

#[test]
fn our_module_runs_the_common_ops_on_a_temporary_token() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    // A user configuration must not redirect the temporary token.
    let bogus = tmp.path().join("bogus.toml");
    std::fs::write(&bogus, "this is not toml = = =").unwrap();
    let v = run_json(
        dcmd(&m, tmp.path())
            .env("DALEK_PKCS11_CONFIG", &bogus)
            .args([
                "run",
                "--quiet",
                "--module",
                "dalek",
                "--ops",
                QUICK_OPS,
                "--iterations",
                "30",
                "--warmup",
                "2",
            ]),
        &out,
    );
    assert_eq!(v["metadata"]["modules"][0]["name"], "dalek");
    assert_eq!(v["metadata"]["modules"][0]["temporary_token"], true);
    assert_eq!(results(&v).len(), 16);
    // Mechanisms the module does not list yet are `unsupported`; everything it
    // lists must work, every call checked.
    for r in results(&v) {
        match r["status"].as_str().unwrap() {
            "ok" => {
                assert_eq!(r["iterations"], 30);
                assert_sane(r);
            }
            "unsupported" => assert!(
                r["reason"].as_str().unwrap().contains("mechanism list"),
                "{r}"
            ),
            _ => panic!("our module failed an op it lists: {r}"),
        }
    }
    for op in ["ed25519-sign", "ed25519-verify", "sha256", "random32"] {
        assert_eq!(find(&v, "dalek", op)["status"], "ok", "{op}");
    }
    assert!(
        leftovers(tmp.path()).is_empty(),
        "temporary token left behind"
    );
}

#[test]
fn our_module_side_by_side_with_softhsm() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    let v = run_json(
        dcmd(&m, tmp.path())
            .args([
                "run",
                "--quiet",
                "--module",
                "dalek",
                "--module",
                "softhsm",
                "--ops",
                "ed25519-sign,ed25519-verify,sha256",
            ])
            .args([
                "--iterations",
                "600",
                "--rounds",
                "6",
                "--reference",
                "softhsm",
            ]),
        &out,
    );
    for op in ["ed25519-sign", "ed25519-verify", "sha256"] {
        for module in ["dalek", "softhsm"] {
            let r = find(&v, module, op);
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(r["rounds"], 6);
        }
    }
    assert_eq!(v["ratios"].as_array().unwrap().len(), 3);
    let text = stdout(&run(cmd().arg("report").arg(&out)));
    assert!(text.contains("dalek/softhsm"), "{text}");
    assert!(leftovers(tmp.path()).is_empty());

    // The ratio gate: against itself the run passes; against a baseline in
    // which our module was three times faster relative to SoftHSM2 on
    // ed25519-sign, it fails with exit code 1 and names the op.
    let same = run(cmd().arg("compare").arg(&out).arg(&out).args([
        "--reference",
        "softhsm",
        "--fail-on-regression",
    ]));
    assert_eq!(code(&same), 0, "{}", stdout(&same));
    let mut doctored = v.clone();
    for r in doctored["results"].as_array_mut().unwrap() {
        if r["module"] == "dalek" && r["op"] == "ed25519-sign" {
            let ops = r["ops_per_sec"].as_f64().unwrap();
            r["ops_per_sec"] = serde_json::json!(ops * 3.0);
        }
    }
    for r in doctored["ratios"].as_array_mut().unwrap() {
        if r["op"] == "ed25519-sign" {
            let ratio = r["ratio"].as_f64().unwrap();
            r["ratio"] = serde_json::json!(ratio * 3.0);
        }
    }
    let base = tmp.path().join("baseline.json");
    std::fs::write(&base, serde_json::to_vec(&doctored).unwrap()).unwrap();
    let gate = run(cmd().arg("compare").arg(&out).arg(&base).args([
        "--reference",
        "softhsm",
        "--fail-on-regression",
    ]));
    assert_eq!(code(&gate), 1, "{}", stdout(&gate));
    let text = stdout(&gate);
    assert!(has_row(&text, &["ed25519-sign", "REGRESSED"]), "{text}");
}

/// P-521 ECDH and P-384/P-521 key generation on our module and SoftHSM2:
/// every op measured, its checks passing (for ECDH: the 66-byte secret
/// derived from both sides agrees, and sampled timed derivations equal it).
#[test]
fn p521_ecdh_and_ec_key_generation_run_on_both_modules() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    let ops = ["p521-ecdh-derive", "p384-keygen", "p521-keygen"];
    let v = run_json(
        dcmd(&m, tmp.path())
            .args(["run", "--quiet", "--module", "dalek", "--module", "softhsm"])
            .args(["--ops", &ops.join(",")])
            .args(["--iterations", "20", "--warmup", "1"]),
        &out,
    );
    assert_eq!(results(&v).len(), 2 * ops.len());
    for op in ops {
        for module in ["dalek", "softhsm"] {
            let r = find(&v, module, op);
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(r["iterations"], 20, "{r}");
            assert_eq!(r["errors"], 0, "{r}");
            assert_sane(r);
        }
    }
    assert!(leftovers(tmp.path()).is_empty());
}

/// The post-quantum ops (`pqc` profile) on our module, which offers
/// ML-DSA and ML-KEM: every result checked (signatures verified and a
/// corrupted one rejected by the token; the two sides of a key
/// encapsulation agree, a corrupted ciphertext gives another secret).
/// SLH-DSA ops are checked alike where the token lists `CKM_SLH_DSA`, and
/// are otherwise unsupported for that reason only.
#[test]
fn our_module_runs_the_pqc_profile() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    let v = run_json(
        dcmd(&m, tmp.path()).args([
            "run",
            "--quiet",
            "--module",
            "dalek",
            "--profile",
            "pqc",
            "--iterations",
            "12",
            "--warmup",
            "1",
        ]),
        &out,
    );
    let ids: Vec<&str> = results(&v)
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "mldsa44-sign",
            "mldsa44-verify",
            "mldsa65-sign",
            "mldsa65-verify",
            "mldsa87-sign",
            "mldsa87-verify",
            "slhdsa-sha2-128f-sign",
            "slhdsa-sha2-128f-verify",
            "slhdsa-shake-128f-sign",
            "slhdsa-shake-128f-verify",
            "slhdsa-sha2-128s-sign",
            "slhdsa-sha2-128s-verify",
            "mlkem512-encaps",
            "mlkem512-decaps",
            "mlkem768-encaps",
            "mlkem768-decaps",
            "mlkem1024-encaps",
            "mlkem1024-decaps",
            "mldsa44-keygen",
            "mldsa65-keygen",
            "mldsa87-keygen",
            "slhdsa-sha2-128f-keygen",
            "slhdsa-shake-128f-keygen",
            "mlkem512-keygen",
            "mlkem768-keygen",
            "mlkem1024-keygen",
        ]
    );
    for r in results(&v) {
        let op = r["op"].as_str().unwrap();
        if op.starts_with("slhdsa") && r["status"] == "unsupported" {
            let why = r["reason"].as_str().unwrap();
            assert!(
                why.starts_with("CKM_SLH_DSA")
                    && why.ends_with("is not in the token's mechanism list"),
                "{r}"
            );
            continue;
        }
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["errors"], 0, "{r}");
        assert_sane(r);
    }
    assert!(leftovers(tmp.path()).is_empty());
}

#[test]
fn our_module_is_listed() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let o = run(dcmd(&m, tmp.path())
        .env("DALEK_PKCS11_TOKEN_DIR", tmp.path())
        .env_remove("DALEK_PKCS11_CONFIG")
        .args(["list", "--module", "dalek"]));
    assert_eq!(code(&o), 0);
    let text = stdout(&o);
    assert!(text.contains("CKM_EDDSA"), "{text}");
}

#[test]
fn bare_hsm_bench_runs_the_quick_profile_on_our_module() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let o = run(dcmd(&m, tmp.path()).env("DALEK_PKCS11_CONFIG", "/nonexistent"));
    assert_eq!(code(&o), 0);
    let text = stdout(&o);
    assert!(text.contains("module dalek"), "{text}");
    for op in [
        "ed25519-sign",
        "p256-verify",
        "aes256-gcm-decrypt",
        "find-object",
    ] {
        let row = text
            .lines()
            .find(|l| l.starts_with(op))
            .unwrap_or_else(|| panic!("{op} row"));
        assert!(!row.contains("error"), "{row}");
    }
    let row = text
        .lines()
        .find(|l| l.starts_with("ed25519-sign"))
        .unwrap();
    assert!(!row.contains("unsupported"), "{row}");
    assert!(t.elapsed().as_secs() < 90, "quick took {:?}", t.elapsed());
}

/// The token-object scaling ops populate a temporary token (10, then 1,000
/// token objects), time their calls, and the cold-start probe reports
/// `C_Initialize` and its peak memory.
#[test]
fn scaling_ops_populate_the_token_and_probe_a_cold_start() {
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
            "token-find-label-10,token-find-id-1000,token-destroy-1000,\
         token-keypair-ed25519-1000,token-create-10,cold-start-10,cold-open-1000",
            "--iterations",
            "5",
            "--warmup",
            "1",
        ]),
        &out,
    );
    assert_eq!(results(&v).len(), 7);
    for r in results(&v) {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["iterations"], 5);
        assert_sane(r);
    }
    for op in ["cold-start-10", "cold-open-1000"] {
        let r = find(&v, "dalek", op);
        let kib = r["peak_rss_kib"].as_u64().expect("probe reports its RSS");
        assert!((1024..1024 * 1024).contains(&kib), "{op}: {kib} KiB");
    }
    // Opening a session loads 1,000 objects: it takes longer than
    // C_Initialize alone on 10.
    let p50 = |op: &str| find(&v, "dalek", op)["p50_us"].as_f64().unwrap();
    assert!(p50("cold-open-1000") > p50("cold-start-10"));
    assert!(leftovers(tmp.path()).is_empty());
}

/// `scripts/perf-gate` and `scripts/refresh-baselines` as CI runs them, on a
/// temporary baselines directory and two small profiles (the ci gate's and
/// the breadth gate's), with our module wrapped in the delay shim: on a
/// machine class with no baseline the portable floors alone judge each gate
/// (and the gate says how to record a baseline); once one is recorded the
/// comparison judges it too; a slowed `C_Sign` fails either way, and a
/// baseline claiming another machine class is refused.
#[test]
fn the_perf_gate_judges_by_its_class_baseline_or_the_floors() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let ws = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let baselines = tmp.path().join("baselines");
    let profile = tmp.path().join("gate.toml");
    std::fs::write(
        &profile,
        "ops = [\"ed25519-sign\", \"sha256\"]\niterations = 300\nwarmup = 20\nrounds = 3\n\
         threads = [1]\n",
    )
    .unwrap();
    let floors = tmp.path().join("floors.toml");
    std::fs::write(
        &floors,
        "reference = \"softhsm\"\n[[floor]]\nop = \"ed25519-sign\"\nmin_ratio = 0.5\n\
         [[floor]]\nop = \"sha256\"\nmin_ratio = 0.2\n",
    )
    .unwrap();
    let breadth = tmp.path().join("breadth.toml");
    std::fs::write(
        &breadth,
        "ops = [\"sha1\"]\niterations = 300\nwarmup = 20\nrounds = 3\nthreads = [1]\n",
    )
    .unwrap();
    let breadth_floors = tmp.path().join("floors-breadth.toml");
    std::fs::write(
        &breadth_floors,
        "reference = \"softhsm\"\n[[floor]]\nop = \"sha1\"\nmin_ratio = 0.2\n",
    )
    .unwrap();
    let class = stdout(&run(cmd().args(["machine", "--id"])))
        .trim()
        .to_string();
    // `measured`: a directory of results to judge instead of measuring.
    let gate = |name: &str, sign_delay: &str, measured: Option<&Path>| {
        let mut c = std::process::Command::new("bash");
        c.arg(ws.join("scripts").join(name))
            .env("HSM_BENCH", bin())
            .env("PERF_GATE_BASELINES", &baselines)
            .env("PERF_GATE_FLOORS", &floors)
            .env("PERF_GATE_PROFILE", &profile)
            .env("PERF_GATE_BREADTH_PROFILE", &breadth)
            .env("PERF_GATE_BREADTH_FLOORS", &breadth_floors)
            .env("PERF_GATE_BUILDS", "default")
            .env("PERF_GATE_OUT", tmp.path().join("out"))
            .env("HSM_BENCH_DALEK_MODULE", shim())
            .env("P11_DELAY_SHIM_MODULE", &m)
            .env("P11_DELAY_SHIM_DELAY", format!("C_Sign={sign_delay}"))
            .env("TMPDIR", tmp.path())
            .env_remove("PERF_GATE_MEASURED")
            .env_remove("SOFTHSM2_CONF")
            .env_remove("DALEK_PKCS11_CONFIG");
        if let Some(dir) = measured {
            c.env("PERF_GATE_MEASURED", dir);
        }
        let o = run(&mut c);
        (code(&o), stdout(&o), stderr(&o))
    };
    let script = |name: &str, sign_delay: &str| gate(name, sign_delay, None);
    // Judges `result` as the default build's ci measurement (and the
    // recorded breadth baseline as its breadth measurement), measuring
    // nothing: the outcome depends on the files alone, never on how busy the
    // machine is.
    let judged = |result: &serde_json::Value| {
        let dir = tmp.path().join("measured");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("default.json"),
            serde_json::to_vec(result).unwrap(),
        )
        .unwrap();
        std::fs::copy(
            baselines.join(&class).join("breadth-default.json"),
            dir.join("breadth-default.json"),
        )
        .unwrap();
        gate("perf-gate", "0us", Some(&dir))
    };

    // No baseline for this class: the floors judge, and the gate says so.
    // Live runs assert only what holds on any machine: the floors sit at a
    // small fraction of our lead, and a 2 ms C_Sign is far below any floor.
    let (rc, out, _) = script("perf-gate", "0us");
    assert_eq!(rc, 0, "{out}");
    for gate in ["ci", "breadth"] {
        assert!(
            out.contains(&format!(
                "no baseline for machine class {class} ({gate} gate, default build)"
            )),
            "{out}"
        );
    }
    assert!(out.contains("scripts/refresh-baselines"), "{out}");
    assert!(out.contains("2 of 2 floors hold"), "{out}");
    assert!(out.contains("1 of 1 floors hold"), "{out}");
    let (rc, out, _) = script("perf-gate", "2ms");
    assert_eq!(rc, 1, "{out}");
    assert!(has_row(&out, &["ed25519-sign", "BELOW FLOOR"]), "{out}");
    assert!(!has_row(&out, &["sha256", "BELOW FLOOR"]), "{out}");

    // Record this class's baseline; now the comparison judges as well.
    let (rc, out, _) = script("refresh-baselines", "0us");
    assert_eq!(rc, 0, "{out}");
    let recorded = baselines.join(&class).join("ci-default.json");
    let v = json(&recorded);
    assert_valid(&v);
    let recorded_breadth = json(&baselines.join(&class).join("breadth-default.json"));
    assert_valid(&recorded_breadth);
    assert_eq!(recorded_breadth["ratios"].as_array().unwrap().len(), 1);
    assert_eq!(recorded_breadth["ratios"][0]["op"], "sha1");
    assert_eq!(
        v["metadata"]["system"]["machine_class"]["id"],
        class.as_str()
    );
    assert_eq!(v["ratios"].as_array().unwrap().len(), 2);
    // The baseline judged as a measurement: nothing regressed, floors hold.
    let (rc, out, err) = judged(&v);
    assert_eq!(rc, 0, "{out}{err}");
    assert!(out.contains("measured before"), "{out}");
    assert!(out.contains("comparing with"), "{out}");
    assert!(!out.contains("no baseline"), "{out}");
    assert!(out.contains("2 of 2 floors hold"), "{out}");
    assert!(out.contains("1 of 1 floors hold"), "{out}");
    // The same result with our ed25519-sign ratio divided by a factor
    // beyond the threshold and beyond the recorded noise (whatever noise
    // this machine's run had): the comparison fails it.
    let mut slower = v.clone();
    let mut factor = 0.0;
    for r in slower["ratios"].as_array_mut().unwrap() {
        if r["op"] == "ed25519-sign" {
            let (ratio, noise) = (r["ratio"].as_f64().unwrap(), r["noise"].as_f64().unwrap());
            factor = 2.0 * (1.0 + 1.5 * noise);
            r["ratio"] = serde_json::json!(ratio / factor);
        }
    }
    assert!(factor > 0.0, "no ed25519-sign ratio in {v}");
    for r in slower["results"].as_array_mut().unwrap() {
        if r["module"] == "dalek" && r["op"] == "ed25519-sign" {
            let ops = r["ops_per_sec"].as_f64().unwrap();
            r["ops_per_sec"] = serde_json::json!(ops / factor);
        }
    }
    let (rc, out, _) = judged(&slower);
    assert_eq!(rc, 1, "{out}");
    assert!(has_row(&out, &["ed25519-sign", "REGRESSED"]), "{out}");
    assert!(!has_row(&out, &["sha256", "REGRESSED"]), "{out}");
    // End to end with the baseline: a 2 ms C_Sign fails both judges.
    let (rc, out, _) = script("perf-gate", "2ms");
    assert_eq!(rc, 1, "{out}");
    assert!(out.contains("comparing with"), "{out}");
    assert!(has_row(&out, &["ed25519-sign", "REGRESSED"]), "{out}");
    assert!(has_row(&out, &["ed25519-sign", "BELOW FLOOR"]), "{out}");

    // A baseline in this class's place that was measured on another class is
    // refused, not used.
    let mut doctored = v.clone();
    doctored["metadata"]["system"]["machine_class"]["family"] = "f1m1".into();
    doctored["metadata"]["system"]["machine_class"]["id"] = "x86_64-other".into();
    std::fs::write(&recorded, serde_json::to_vec(&doctored).unwrap()).unwrap();
    let (rc, out, err) = judged(&v);
    assert_eq!(rc, 3, "{out}");
    assert!(
        err.contains("the baseline is of machine class x86_64-other"),
        "{err}"
    );
    // A directory without the build's result is an error, not a pass.
    let (rc, _, err) = gate("perf-gate", "0us", Some(&tmp.path().join("nothing")));
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("has no result"), "{err}");
    assert!(leftovers(tmp.path()).is_empty());
}

/// The temporary token is made and found again (by the run and by the
/// cold-start probe) through token info that cryptoki's own reader refuses:
/// our module behind the delay shim, which gives it an opencryptoki-style
/// `utcTime` and NUL-padded labels.
#[test]
fn a_temporary_token_is_found_through_odd_token_info() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    let v = run_json(
        dcmd(&shim(), tmp.path())
            .env("P11_DELAY_SHIM_MODULE", &m)
            .env("P11_DELAY_SHIM_TOKEN_INFO", "utc=13:06:00,label_nul=1")
            .args(["run", "--quiet", "--module", "dalek"])
            .args(["--ops", "sha256,cold-start-10"])
            .args(["--iterations", "5", "--warmup", "1"]),
        &out,
    );
    let meta = &v["metadata"]["modules"][0];
    assert_eq!(meta["temporary_token"], true);
    let label = meta["token"]["label"].as_str().unwrap();
    assert!(
        label.starts_with("hsm-bench-") && label.len() == 18,
        "{label:?}"
    );
    assert_eq!(meta["token"]["utc_time"], "13:06:00");
    // The cold-start probe finds the token by the same cleaned label.
    for op in ["sha256", "cold-start-10"] {
        assert_eq!(find(&v, "dalek", op)["status"], "ok", "{op}");
    }
    assert!(leftovers(tmp.path()).is_empty());
}

/// A tiny profile on our module with stderr piped (not a terminal): one plain
/// `[i/N] <op> <size> <threads>t done: ...` line per job, numbered in order, with
/// the throughput only for ops that have a data size; nothing of it on stdout, and
/// nothing at all with `--quiet`. The result file carries `bytes_per_sec`.
#[test]
fn piped_progress_prints_one_numbered_line_per_op_in_order() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("tiny.toml");
    std::fs::write(
        &profile,
        "ops = [\"ed25519-sign\", \"sha256\", \"random32\"]\ndata_sizes = [64, \"1K\"]\n\
         iterations = 20\nwarmup = 2\nthreads = [1]\n",
    )
    .unwrap();
    let out = tmp.path().join("r.json");
    let o = run(dcmd(&m, tmp.path())
        .args(["run", "--module", "dalek", "--profile"])
        .arg(&profile)
        .args(["--format", "json", "-o"])
        .arg(&out));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&out);
    assert_valid(&v);
    let rs = results(&v);
    // ed25519-sign and sha256 at two sizes, random32 at its fixed size.
    assert_eq!(rs.len(), 5);
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), rs.len(), "{err}");
    for (i, (line, r)) in lines.iter().zip(rs).enumerate() {
        let size = match r["data_size"].as_u64().unwrap() {
            64 => "64B",
            1024 => "1K",
            32 => "32B",
            other => panic!("size {other}"),
        };
        let head = format!(
            "[{}/{}] {} {size} 1t done: ",
            i + 1,
            rs.len(),
            r["op"].as_str().unwrap()
        );
        assert!(
            line.starts_with(&head),
            "{line:?} should start with {head:?}\n{err}"
        );
        assert!(line.contains(" ops/s"), "{line}");
        let bps = &r["bytes_per_sec"];
        if r["op"] == "random32" {
            assert!(bps.is_null(), "{r}");
            assert!(!line.contains("B/s"), "{line}");
        } else {
            let expect = r["ops_per_sec"].as_f64().unwrap() * r["data_size"].as_f64().unwrap();
            assert!(
                (bps.as_f64().unwrap() - expect).abs() < 1e-6 * expect,
                "{r}"
            );
            assert!(line.contains("B/s, p50"), "{line}");
        }
    }
    assert!(!stdout(&o).contains("done:"), "progress on stdout");
    // `--quiet` silences the progress.
    let o = run(dcmd(&m, tmp.path())
        .args(["run", "--quiet", "--module", "dalek", "--profile"])
        .arg(&profile)
        .args(["--format", "json", "-o"])
        .arg(tmp.path().join("q.json")));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("done:"), "{}", stderr(&o));
    assert!(leftovers(tmp.path()).is_empty());
}

/// The ops of the breadth profile: AES modes × key sizes × directions,
/// 3DES, ECDSA with SHA-256/384 on P-256/384/521 and secp256k1, raw ECDSA on
/// P-521 and secp256k1, ECDH (P-256/384/521, X25519), key wrap and unwrap,
/// SHA-1, C_SeedRandom, RSA-PSS and RSA-OAEP at 3072 and 4096 bits.
fn breadth_ids() -> Vec<String> {
    let mut v = Vec::new();
    for bits in [128, 192, 256] {
        for mode in ["ecb", "cbc", "cbc-pad", "ctr", "gcm"] {
            for dir in ["encrypt", "decrypt"] {
                v.push(format!("aes{bits}-{mode}-{dir}"));
            }
        }
    }
    for c in [256, 384] {
        for h in ["sha256", "sha384"] {
            for dir in ["sign", "verify"] {
                v.push(format!("p{c}-ecdsa-{h}-{dir}"));
            }
        }
    }
    for c in ["p521", "secp256k1"] {
        for h in ["sha256", "sha384"] {
            for dir in ["sign", "verify"] {
                v.push(format!("{c}-ecdsa-{h}-{dir}"));
            }
        }
    }
    for mode in ["ecb", "cbc"] {
        for dir in ["encrypt", "decrypt"] {
            v.push(format!("des3-{mode}-{dir}"));
        }
    }
    v.extend(
        [
            "p521-sign",
            "p521-verify",
            "secp256k1-sign",
            "secp256k1-verify",
            "p256-ecdh-derive",
            "p384-ecdh-derive",
            "p521-ecdh-derive",
            "x25519-ecdh-derive",
            "ffdhe2048-dh-derive",
            "pbkdf2-sha256-1000-keygen",
            "aes256-key-wrap",
            "aes256-key-unwrap",
            "aes256-key-wrap-pad",
            "aes256-key-unwrap-pad",
            "rsa2048-oaep-wrap",
            "rsa2048-oaep-unwrap",
        ]
        .map(String::from),
    );
    v.extend(
        [
            "aes256-ccm-encrypt",
            "aes256-cts-encrypt",
            "chacha20-poly1305-encrypt",
        ]
        .map(String::from),
    );
    v.extend(["sha1", "sha3-256", "sha3-512", "hmac-sha3-256"].map(String::from));
    v.push("seed-random32".into());
    for b in [3072, 4096] {
        v.extend([format!("rsa{b}-pss-sign"), format!("rsa{b}-pss-verify")]);
        for h in ["sha1", "sha256"] {
            for dir in ["encrypt", "decrypt"] {
                v.push(format!("rsa{b}-oaep-{h}-{dir}"));
            }
        }
    }
    v
}

/// Our module lists every breadth mechanism: each op is measured, every
/// result checked (decrypt-and-compare and the in-process ciphertext of the
/// known key; signatures verified; SHA-1 against sha1), none failing.
#[test]
fn the_breadth_profile_measures_every_op_on_our_module() {
    let Some(m) = dalek() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.json");
    let v = run_json(
        dcmd(&m, tmp.path())
            .args([
                "run",
                "--quiet",
                "--module",
                "dalek",
                "--profile",
                "breadth",
            ])
            .args(["--iterations", "10", "--warmup", "1"]),
        &out,
    );
    let ids = breadth_ids();
    assert_eq!(results(&v).len(), ids.len(), "one result per breadth op");
    for id in &ids {
        let r = find(&v, "dalek", id);
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["iterations"], 10, "{id}");
        assert_eq!(r["errors"], 0, "{id}");
        assert_sane(r);
    }
    assert!(
        leftovers(tmp.path()).is_empty(),
        "temporary token left behind"
    );
}
