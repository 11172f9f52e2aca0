//! Measuring modes (docs/benchmarking.md, "Commands and flags", "How
//! measuring works"): thread and size sweeps, open-loop rate, weighted
//! mixes, the histogram and raw samples.

use super::*;

#[test]
fn sweeps_rate_mix_histogram_and_samples() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.json");
    let v = run_json(
        cmd()
            .args([
                "run",
                "--quiet",
                "--module",
                "softhsm",
                "--ops",
                "sha256,p256-sign",
                "--threads",
                "1,2",
                "--data-sizes",
                "64,4K",
            ])
            .args([
                "--iterations",
                "30",
                "--histogram",
                "--raw-samples",
                "--percentiles",
                "50,99.9",
            ]),
        &out,
    );
    let keys: Vec<(String, u64, u64, u64)> = results(&v)
        .iter()
        .map(|r| {
            (
                r["op"].as_str().unwrap().to_string(),
                r["data_size"].as_u64().unwrap(),
                r["threads"].as_u64().unwrap(),
                r["iterations"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            ("p256-sign".into(), 32, 1, 30),
            ("p256-sign".into(), 32, 2, 60),
            ("sha256".into(), 64, 1, 30),
            ("sha256".into(), 64, 2, 60),
            ("sha256".into(), 4096, 1, 30),
            ("sha256".into(), 4096, 2, 60),
        ]
    );
    for r in results(&v) {
        assert_sane(r);
        assert_eq!(
            r["samples_ns"].as_array().unwrap().len() as u64,
            r["iterations"].as_u64().unwrap()
        );
        let h: u64 = r["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum();
        assert_eq!(h, r["iterations"].as_u64().unwrap());
        assert!(r["percentiles"]["p99.9"].is_number());
    }
    let text = stdout(&run(cmd().arg("report").arg(&out)));
    assert!(text.contains("latency histogram"), "{text}");

    // Open loop: 200 ops/s for 0.5 s.
    let out = dir.path().join("rate.json");
    let o = run(cmd()
        .args([
            "run",
            "--quiet",
            "--module",
            "softhsm",
            "--ops",
            "random32",
            "--duration",
            "0.5",
            "--rate",
            "200",
            "--warmup",
            "0",
            "--format",
            "json",
            "-o",
        ])
        .arg(&out));
    assert_eq!(code(&o), 0);
    let v = json(&out);
    let r = find(&v, "softhsm", "random32");
    assert_eq!(r["mode"], "open");
    assert_eq!(r["rate_target"], 200.0);
    let n = r["iterations"].as_u64().unwrap();
    assert!((85..=101).contains(&n), "{n} ops at 200/s for 0.5 s");

    // Weighted mix.
    let out = dir.path().join("mix.json");
    let v = run_json(
        cmd().args([
            "run",
            "--quiet",
            "--module",
            "softhsm",
            "--mix",
            "verify=80,sign=20",
            "--iterations",
            "200",
        ]),
        &out,
    );
    let count = |op: &str| find(&v, "softhsm", op)["iterations"].as_u64().unwrap();
    assert_eq!(count("mix"), 200);
    assert_eq!(count("mix/ed25519-verify") + count("mix/ed25519-sign"), 200);
    assert!(count("mix/ed25519-verify") > 2 * count("mix/ed25519-sign"));
    assert_eq!(find(&v, "softhsm", "mix")["mix"], "verify=80,sign=20");

    // Per-thread keys.
    let out = dir.path().join("ptk.json");
    let o = run(cmd()
        .args([
            "run",
            "--quiet",
            "--module",
            "softhsm",
            "--ops",
            "p256-sign,aes256-gcm-decrypt",
            "--threads",
            "2",
            "--per-thread-keys",
        ])
        .args(["--iterations", "20", "--format", "json", "-o"])
        .arg(&out));
    assert_eq!(code(&o), 0);
    let v = json(&out);
    assert_valid(&v);
    for r in results(&v) {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["key"], "generated per thread");
        assert_eq!(r["iterations"], 40);
    }
    assert!(
        v["metadata"]["keys"]
            .as_str()
            .unwrap()
            .starts_with("per thread")
    );

    // github-action-benchmark output.
    let o = run(cmd().args([
        "run",
        "--quiet",
        "--module",
        "softhsm",
        "--ops",
        "sha256",
        "--iterations",
        "20",
        "--format",
        "gh-bench",
    ]));
    let g: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(g[0]["unit"], "ops/s");
    assert!(g[0]["value"].as_f64().unwrap() > 0.0);
    assert!(g[0]["name"].as_str().unwrap().contains("sha256"));
}
