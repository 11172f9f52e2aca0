//! The JSON (`hsm-bench/1`) and CSV output of `run` against SoftHSM2
//! (docs/benchmarking.md, "Output formats", "Result checks"): the JSON
//! validates, every result is checked, and the CSV has the same rows.

use super::*;

#[test]
fn json_output_validates_and_every_result_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (v, _) = softhsm_run(dir.path());
    assert_valid(&v);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("hsm-bench-token-")
        })
        .collect();
    assert!(left.is_empty(), "temporary token left behind: {left:?}");
    assert_eq!(v["schema"], "hsm-bench/1");
    let m = &v["metadata"]["modules"][0];
    assert_eq!(m["name"], "softhsm");
    assert_eq!(m["temporary_token"], true);
    assert!(
        m["token"]["label"]
            .as_str()
            .unwrap()
            .starts_with("hsm-bench-")
    );
    assert_eq!(v["metadata"]["iterations"], 40);
    assert!(v["metadata"]["timer"]["resolution_ns"].as_f64().unwrap() > 0.0);
    let ids: Vec<&str> = results(&v)
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "ed25519-sign",
            "ed25519-verify",
            "p256-sign",
            "rsa2048-oaep-sha256-encrypt",
            "aes256-gcm-encrypt",
            "aes256-gcm-decrypt",
            "sha256",
            "hmac-sha256",
            "random32"
        ]
    );
    for op in [
        "ed25519-sign",
        "ed25519-verify",
        "p256-sign",
        "aes256-gcm-encrypt",
        "aes256-gcm-decrypt",
        "sha256",
        "hmac-sha256",
        "random32",
    ] {
        let r = find(&v, "softhsm", op);
        assert_eq!(r["status"], "ok", "{op}: {r}");
        assert_eq!(r["iterations"], 40, "{op}");
        assert_eq!(r["errors"], 0);
        assert_sane(r);
    }
    assert_eq!(find(&v, "softhsm", "sha256")["data_size"], 1024);
    assert_eq!(find(&v, "softhsm", "hmac-sha256")["data_size"], 32);
    assert_eq!(
        find(&v, "softhsm", "ed25519-sign")["mechanism"],
        "CKM_EDDSA"
    );
    // SoftHSM2 lists RSA-OAEP but accepts only SHA-1: every call fails, so every
    // warmup call did; the op is reported failed with the CKR name, not measured,
    // and the suite went on.
    let oaep = find(&v, "softhsm", "rsa2048-oaep-sha256-encrypt");
    assert_eq!(oaep["status"], "error");
    assert_eq!(oaep["warmup_first_error"], "CKR_ARGUMENTS_BAD", "{oaep}");
    assert!(
        oaep["reason"].as_str().unwrap().contains("warmup failed"),
        "{oaep}"
    );
}

#[test]
fn csv_has_the_same_rows_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let (v, path) = softhsm_run(dir.path());
    let o = run(cmd().arg("report").arg(&path).args(["--format", "csv"]));
    assert_eq!(code(&o), 0);
    let mut rdr = csv::Reader::from_reader(o.stdout.as_slice());
    let headers = rdr.headers().unwrap().clone();
    for col in [
        "op",
        "module",
        "mechanism",
        "data_size",
        "threads",
        "iterations",
        "errors",
        "status",
        "ops_per_sec",
        "mean_us",
        "ci95_us",
        "stddev_us",
        "min_us",
        "p50_us",
        "p90_us",
        "p95_us",
        "p99_us",
        "p999_us",
        "max_us",
    ] {
        assert!(headers.iter().any(|h| h == col), "column {col}");
    }
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), results(&v).len());
    let idx = |name: &str| headers.iter().position(|h| h == name).unwrap();
    for (row, r) in rows.iter().zip(results(&v)) {
        assert_eq!(&row[idx("op")], r["op"].as_str().unwrap());
        assert_eq!(&row[idx("status")], r["status"].as_str().unwrap());
        assert_eq!(
            row[idx("data_size")].parse::<u64>().unwrap(),
            r["data_size"].as_u64().unwrap()
        );
        match r["ops_per_sec"].as_f64() {
            Some(x) => assert_eq!(row[idx("ops_per_sec")].parse::<f64>().unwrap(), x),
            None => assert_eq!(&row[idx("ops_per_sec")], ""),
        }
        if let Some(p99) = r["p99_us"].as_f64() {
            assert_eq!(row[idx("p99_us")].parse::<f64>().unwrap(), p99);
        }
    }
    // `run --format csv` writes the same columns directly.
    let o = run(cmd().args([
        "run",
        "--module",
        "softhsm",
        "--ops",
        "sha256,random32",
        "--iterations",
        "20",
        "--quiet",
        "--format",
        "csv",
    ]));
    assert_eq!(code(&o), 0);
    let mut rdr = csv::Reader::from_reader(o.stdout.as_slice());
    assert_eq!(rdr.headers().unwrap(), &headers);
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(&rows[0][0], "sha256");
    assert_eq!(&rows[1][idx("status")], "ok");
}
