//! Token keys: `hsm-bench keys create|list|delete`, `run --key-store token`,
//! `--keep-keys`, and that no `hsm-bench-tmp-` key outlives a run that ends,
//! fails or is interrupted. Against SoftHSM2 tokens in temporary directories.

mod common;

use std::io::BufRead;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// `hsm-bench keys <sub>` on token `t` with its label and PIN.
fn keys(t: &SoftToken, sub: &str) -> std::process::Command {
    let mut c = t.cmd();
    c.args(["keys", sub, "--module", "softhsm"])
        .args(["--token-label", &t.label, "--pin", &t.pin]);
    c
}

/// The key objects on `t`, as `keys list --format json` gives them.
fn listed(t: &SoftToken) -> Vec<Value> {
    let o = run(keys(t, "list").args(["--format", "json"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    serde_json::from_str::<Value>(&stdout(&o))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn labels(t: &SoftToken) -> Vec<String> {
    let mut v: Vec<String> = listed(t)
        .iter()
        .map(|k| k["label"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

fn tmp_keys(t: &SoftToken) -> Vec<String> {
    labels(t)
        .into_iter()
        .filter(|l| l.starts_with("hsm-bench-tmp-"))
        .collect()
}

#[test]
fn keys_are_made_once_listed_reused_and_deleted() {
    let t = SoftToken::new("keys");
    let mut said = String::new();
    for (ty, label) in [("p256", "bench-p256"), ("hmac-sha256", "bench-hmac")] {
        let o = run(keys(&t, "create").args(["--type", ty, "--label", label]));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(stdout(&o).contains(&format!("created {ty} key '{label}'")));
        said.push_str(&stdout(&o));
    }
    let list = listed(&t);
    let p256: Vec<&Value> = list.iter().filter(|k| k["label"] == "bench-p256").collect();
    assert_eq!(p256.len(), 2, "{list:?}");
    for k in &p256 {
        assert_eq!(k["key_type"], "EC");
        assert_eq!(k["size"], "P-256");
        // The pair shares one CKA_ID, the one `create` printed.
        assert_eq!(k["id"], p256[0]["id"]);
        assert_eq!(k["id"].as_str().unwrap().len(), 16, "{k}");
    }
    assert!(
        said.contains(&format!(
            "2 token objects, CKA_ID {})",
            p256[0]["id"].as_str().unwrap()
        )),
        "{said}"
    );
    let hmac = list.iter().find(|k| k["label"] == "bench-hmac").unwrap();
    assert_eq!(
        (&hmac["class"], &hmac["size"]),
        (&Value::from("secret"), &Value::from("32 bytes"))
    );
    assert!(hmac["usage"].as_array().unwrap().contains(&"sign".into()));
    // A label in use is refused, in one line.
    let o = run(keys(&t, "create").args(["--type", "aes256", "--label", "bench-p256"]));
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    // The kept key is benchmarked by label.
    let dir = tempfile::tempdir().unwrap();
    let v = run_json(
        t.run_on(&[&softhsm()])
            .args(["--key-label", "bench-p256", "--iterations", "10"]),
        &dir.path().join("r.json"),
    );
    for r in results(&v) {
        assert_eq!(r["status"], "ok", "{r}");
    }
    // A key-agreement pair runs ECDH only (P-521's too: a 66-byte secret);
    // a 3DES key its two modes.
    for (ty, label, want) in [
        ("p256-ecdh", "bench-ecdh", vec!["p256-ecdh-derive"]),
        ("p521-ecdh", "bench-ecdh521", vec!["p521-ecdh-derive"]),
        (
            "des3",
            "bench-des3",
            vec![
                "des3-ecb-encrypt",
                "des3-ecb-decrypt",
                "des3-cbc-encrypt",
                "des3-cbc-decrypt",
            ],
        ),
    ] {
        let o = run(keys(&t, "create").args(["--type", ty, "--label", label]));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        if ty == "des3" {
            let list = listed(&t);
            let k = list.iter().find(|k| k["label"] == label).unwrap();
            assert_eq!(
                (&k["key_type"], &k["size"]),
                (&"DES3".into(), &"24 bytes".into())
            );
        }
        let v = run_json(
            t.run_on(&[&softhsm()])
                .args(["--key-label", label, "--iterations", "10"]),
            &dir.path().join(format!("{label}.json")),
        );
        let ids: Vec<&str> = results(&v)
            .iter()
            .map(|r| r["op"].as_str().unwrap())
            .collect();
        assert_eq!(ids, want);
        for r in results(&v) {
            assert_eq!(r["status"], "ok", "{r}");
        }
        let o = run(keys(&t, "delete").args(["--label", label]));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    // Deleting names what it destroyed; deleting nothing is an error.
    let o = run(keys(&t, "delete").args(["--label", "bench-p256"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).matches("destroyed").count(), 2, "{}", stdout(&o));
    assert_eq!(labels(&t), ["bench-hmac"]);
    let o = run(keys(&t, "delete").args(["--label", "bench-p256"]));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no key object labelled 'bench-p256'"));
    // Unknown types and a missing token are one-line usage errors.
    let o = run(keys(&t, "create").args(["--type", "rsa1024", "--label", "x"]));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("unknown key type 'rsa1024'"));
    let o = run(t.cmd().args(["keys", "list", "--module", "softhsm"]));
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("--token-label or --slot"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn token_keys_are_destroyed_at_the_end_unless_kept() {
    let t = SoftToken::new("store");
    let ops = "p256-sign,hmac-sha256,aes128-gcm-encrypt,p256-keygen,find-object";
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let v = run_json(
        t.run_on(&[&softhsm()])
            .args(["--ops", ops, "--iterations", "10", "--key-store", "token"]),
        &out,
    );
    for r in results(&v) {
        assert_eq!(r["status"], "ok", "{r}");
    }
    let keys_note = v["metadata"]["keys"].as_str().unwrap();
    assert!(
        keys_note.contains("token-object keys") && keys_note.contains("destroyed at the end"),
        "{keys_note}"
    );
    assert!(tmp_keys(&t).is_empty(), "{:?}", tmp_keys(&t));
    // --keep-keys leaves them, says which, and they go with one delete.
    let o = run(t
        .run_on(&[&softhsm()])
        .args(["--ops", "p256-sign,hmac-sha256", "--iterations", "10"])
        .arg("--keep-keys"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let kept = tmp_keys(&t);
    assert_eq!(kept.len(), 3, "a pair and a secret: {kept:?}");
    for l in &kept {
        assert!(
            stderr(&o).contains(&format!("kept token key '{l}'")),
            "{}",
            stderr(&o)
        );
    }
    let o = run(keys(&t, "delete").args(["--prefix", "hsm-bench-tmp-"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(tmp_keys(&t).is_empty());
    // Session store and --keep-keys contradict each other.
    let o = run(t.run_on(&[&softhsm()]).args([
        "--ops",
        "p256-sign",
        "--key-store",
        "session",
        "--keep-keys",
    ]));
    assert_eq!(code(&o), 2);
}

#[test]
fn an_interrupted_run_leaves_no_token_keys() {
    let t = SoftToken::new("sigint");
    let mut child = t
        .run_on(&[&softhsm()])
        .args(["--ops", "p256-sign,p384-sign,sha256", "--duration", "4"])
        .args(["--key-store", "token"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The keys are made before the first op is measured; wait until they
    // are on the token (in SoftHSM2's files: no second SoftHSM2 process
    // beside the run's), then interrupt.
    wait_for(&mut child, "token keys", || object_files(&t) > 0);
    let pid = child.id() as libc::pid_t;
    // SAFETY: sending SIGINT to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    let mut err = String::new();
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        err.push_str(&line.unwrap());
        err.push('\n');
    }
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(tmp_keys(&t).is_empty(), "left behind: {:?}", tmp_keys(&t));
}

/// Token objects in SoftHSM2's file store of `t` (one `.object` file each,
/// beside the token's own `token.object`): key and data objects alike.
fn object_files(t: &SoftToken) -> usize {
    let mut n = 0;
    for d in std::fs::read_dir(t.dir.path().join("tokens")).unwrap() {
        let d = d.unwrap().path();
        if !d.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&d).unwrap() {
            let name = f.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".object") && name != "token.object" {
                n += 1;
            }
        }
    }
    n
}

/// Name, length and modification time of each of `t`'s object files.
fn object_snapshot(t: &SoftToken) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut files = Vec::new();
    for d in std::fs::read_dir(t.dir.path().join("tokens")).unwrap() {
        let d = d.unwrap().path();
        if !d.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&d).unwrap() {
            let f = f.unwrap();
            let name = f.file_name().to_string_lossy().into_owned();
            if let Ok(m) = f.metadata()
                && name.ends_with(".object")
            {
                files.push((name, m.len(), m.modified().unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// Wait (up to 30 s) until `ready`, failing the test if the child ended.
fn wait_for(child: &mut std::process::Child, what: &str, ready: impl Fn() -> bool) {
    let started = std::time::Instant::now();
    while !ready() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before {what}"
        );
        assert!(started.elapsed() < Duration::from_secs(30), "no {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_failed_run_leaves_no_token_keys() {
    let t = SoftToken::new("failed");
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let mut child = t
        .run_on(&[&softhsm()])
        .args(["--ops", "p256-sign,hmac-sha256", "--duration", "1"])
        .args(["--key-store", "token", "--format", "json", "--output"])
        .arg(gone.join("r.json"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The keys are on the token; the report cannot be written any more
    // (the directory goes with what the run wrote into it so far: results
    // are written as ops finish). The keys are seen in SoftHSM2's files,
    // not by a second SoftHSM2 process beside the run's (SoftHSM2 does not
    // keep its object store consistent across concurrent processes).
    wait_for(&mut child, "token keys", || object_files(&t) > 0);
    std::fs::remove_dir_all(&gone).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));
    assert!(tmp_keys(&t).is_empty(), "left behind: {:?}", tmp_keys(&t));
    assert_eq!(object_files(&t), 0);
}

#[test]
fn keys_delete_prefix_cleans_up_after_a_killed_run() {
    let t = SoftToken::new("killed");
    let mut child = t
        .run_on(&[&softhsm()])
        .args(["--ops", "find-object-10", "--duration", "30"])
        .args(["--key-store", "token"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&mut child, "find-object objects", || object_files(&t) >= 10);
    // SoftHSM2 writes an object's file in several steps (created empty, then
    // rewritten per attribute); a kill between them leaves a file it cannot
    // read back, which no tool can then list or delete. Kill only once the
    // population is written: its files unchanged for a second.
    let started = std::time::Instant::now();
    let mut last = object_snapshot(&t);
    let mut unchanged = 0;
    while unchanged < 10 {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "files never settled"
        );
        std::thread::sleep(Duration::from_millis(100));
        let now = object_snapshot(&t);
        unchanged = if now == last { unchanged + 1 } else { 0 };
        last = now;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(object_files(&t), 10, "a killed run cleans nothing up");
    let o = run(keys(&t, "delete").args(["--prefix", "hsm-bench-tmp-"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o)
            .matches("destroyed data object 'hsm-bench-tmp-")
            .count(),
        10,
        "{}",
        stdout(&o)
    );
    assert_eq!(object_files(&t), 0);
    let o = run(keys(&t, "delete").args(["--prefix", "hsm-bench-tmp-"]));
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("no key or data object whose label starts with 'hsm-bench-tmp-'"),
        "{}",
        stderr(&o)
    );
}

/// The same on our module: a named token in a temporary token directory,
/// made with pkcs11-tool (opensc) in its always-free slot.
#[test]
fn keys_on_our_module() {
    let Some(m) = dalek() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pin = "4711-dalek";
    let tool = |args: &[&str]| {
        let o = std::process::Command::new("pkcs11-tool")
            .env("DALEK_PKCS11_TOKEN_DIR", dir.path())
            .env_remove("DALEK_PKCS11_CONFIG")
            .env("XDG_CONFIG_HOME", dir.path())
            .arg("--module")
            .arg(&m)
            .args(args)
            .output()
            .expect("pkcs11-tool (opensc) runs");
        assert!(o.status.success(), "pkcs11-tool {args:?}: {}", stderr(&o));
    };
    tool(&[
        "--init-token",
        "--slot-index",
        "0",
        "--label",
        "bench",
        "--so-pin",
        "87654321",
    ]);
    tool(&[
        "--token-label",
        "bench",
        "--login",
        "--login-type",
        "so",
        "--so-pin",
        "87654321",
        "--init-pin",
        "--pin",
        pin,
    ]);
    let hsm = |args: &[&str]| {
        let mut c = cmd();
        c.env("HSM_BENCH_DALEK_MODULE", &m)
            .env("DALEK_PKCS11_TOKEN_DIR", dir.path())
            .env_remove("DALEK_PKCS11_CONFIG")
            .env("XDG_CONFIG_HOME", dir.path())
            .args(args)
            .args(["--module", "dalek", "--token-label", "bench", "--pin", pin]);
        c
    };
    for ty in ["ed25519", "p256", "rsa2048", "aes256", "hmac-sha256"] {
        let label = format!("b-{ty}");
        let o = run(&mut hsm(&[
            "keys", "create", "--type", ty, "--label", &label,
        ]));
        assert_eq!(code(&o), 0, "{ty}: {}", stderr(&o));
    }
    let o = run(&mut hsm(&["keys", "list", "--format", "json"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let list: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let one = |label: &str, class: &str| {
        list.iter()
            .find(|k| k["label"] == label && k["class"] == class)
            .unwrap_or_else(|| panic!("no {class} key {label}: {list:?}"))
    };
    assert_eq!(one("b-ed25519", "public")["size"], "Ed25519");
    assert_eq!(one("b-p256", "private")["size"], "P-256");
    let id = &one("b-p256", "private")["id"];
    assert_eq!(
        (id, id.as_str().unwrap().len()),
        (&one("b-p256", "public")["id"], 16)
    );
    assert_eq!(one("b-rsa2048", "public")["size"], "2048 bits");
    assert_eq!(one("b-aes256", "secret")["size"], "32 bytes");
    assert_eq!(one("b-hmac-sha256", "secret")["size"], "32 bytes");
    assert!(
        one("b-aes256", "secret")["usage"]
            .as_array()
            .unwrap()
            .contains(&"encrypt".into())
    );
    assert_eq!(list.len(), 8, "three pairs and two secret keys: {list:?}");
    // Each kept key is benchmarked by label, every result checked.
    let out = dir.path().join("r.json");
    for label in ["b-aes256", "b-ed25519"] {
        let v = run_json(
            &mut hsm(&["run", "--quiet", "--key-label", label, "--iterations", "10"]),
            &out,
        );
        assert!(!results(&v).is_empty());
        for r in results(&v) {
            assert_eq!(r["status"], "ok", "{r}");
        }
    }
    // A run with token keys leaves the token as it found it.
    let v = run_json(
        &mut hsm(&[
            "run",
            "--quiet",
            "--ops",
            "p256-sign,hmac-sha256,p256-keygen,find-object",
            "--iterations",
            "10",
            "--key-store",
            "token",
        ]),
        &out,
    );
    for r in results(&v) {
        assert_eq!(r["status"], "ok", "{r}");
    }
    let o = run(&mut hsm(&["keys", "list", "--format", "json"]));
    let after: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(after.len(), 8, "{after:?}");
    for ty in ["ed25519", "p256", "rsa2048", "aes256", "hmac-sha256"] {
        let label = format!("b-{ty}");
        let o = run(&mut hsm(&["keys", "delete", "--label", &label]));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let o = run(&mut hsm(&["keys", "list", "--format", "json"]));
    assert_eq!(stdout(&o).trim(), "[]");
}
