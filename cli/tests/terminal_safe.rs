//! Text a module or a result file supplied (token labels, manufacturer IDs,
//! descriptions, module names) reaches the terminal escaped: no ESC, OSC, BEL,
//! newline inside a field, C1 control or bidi override is printed raw by the
//! text and markdown outputs or the error line, while the JSON keeps the text.
//! The module's text comes from the hostile shim (`cli/hostile-shim`), which
//! rewrites SoftHSM2's token, slot and library info.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// An OSC sequence that retitles the window (ESC ] … BEL), a newline, a CSI
/// as the C1 control U+009B and a right-to-left override.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}tok\nforged\u{9b}2J\u{202e}x";

/// [`HOSTILE`] as hsm-bench shows it.
const HOSTILE_SHOWN: &str = "\\e]0;pwned\\x07tok\\nforged\\u{9b}2J\\u{202e}x";

/// What in `out` could act on a terminal: C0 controls but the newline, DEL,
/// the C1 controls and the bidi controls (as UTF-8).
fn raw_controls(out: &[u8]) -> Vec<String> {
    let mut bad: Vec<String> = out
        .iter()
        .enumerate()
        .filter(|&(_, &b)| (b < 0x20 && b != b'\n') || b == 0x7f)
        .map(|(i, b)| format!("byte 0x{b:02x} at {i}"))
        .collect();
    match std::str::from_utf8(out) {
        Ok(text) => bad.extend(
            text.chars()
                .filter(|&c| {
                    matches!(c, '\u{80}'..='\u{9f}' | '\u{61c}' | '\u{200e}' | '\u{200f}'
                        | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
                })
                .map(|c| format!("U+{:04X}", c as u32)),
        ),
        Err(e) => bad.push(format!("invalid UTF-8: {e}")),
    }
    bad
}

fn assert_safe(what: &str, out: &[u8]) {
    let bad = raw_controls(out);
    let text = String::from_utf8_lossy(out);
    let head: String = text.chars().take(600).collect();
    assert!(bad.is_empty(), "{what}: {bad:?} in {head:?}");
}

/// The sweep fixture with the first module renamed to [`HOSTILE`] and its
/// library description, token label and manufacturer set to it.
fn hostile_file(dir: &Path) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-sweep.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let m = &mut v["metadata"]["modules"][0];
    let old = m["name"].as_str().unwrap().to_string();
    m["name"] = HOSTILE.into();
    m["library"]["description"] = HOSTILE.into();
    m["token"]["label"] = HOSTILE.into();
    m["token"]["manufacturer"] = HOSTILE.into();
    v["metadata"]["system"]["cpu_model"] = HOSTILE.into();
    for r in v["results"].as_array_mut().unwrap() {
        if r["module"] == old.as_str() {
            r["module"] = HOSTILE.into();
        }
    }
    let path = dir.join("hostile.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

#[test]
fn reports_of_a_result_file_print_its_text_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let file = hostile_file(dir.path());

    let o = run(cmd().arg("report").arg(&file));
    assert_eq!(code(&o), 0);
    assert_safe("report --format text", &o.stdout);
    let text = stdout(&o);
    assert!(
        text.contains(&format!("module {HOSTILE_SHOWN}: {HOSTILE_SHOWN} 0.1 (")),
        "{text}"
    );
    assert!(text.contains(&format!("token '{HOSTILE_SHOWN}'")), "{text}");

    // JSON keeps the text itself (and escapes it as JSON).
    let o = run(cmd().arg("report").arg(&file).args(["--format", "json"]));
    assert_eq!(code(&o), 0);
    assert_safe("report --format json", &o.stdout);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["metadata"]["modules"][0]["token"]["label"], HOSTILE);

    for format in ["text", "markdown"] {
        let o = run(cmd()
            .arg("compare")
            .args([&file, &file])
            .args(["--format", format]));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_safe(&format!("compare --format {format}"), &o.stdout);
        assert_safe(&format!("compare --format {format}"), &o.stderr);
        assert!(stdout(&o).contains(HOSTILE_SHOWN), "{}", stdout(&o));
    }
}

#[test]
fn an_error_quoting_file_text_prints_it_escaped_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    let doc = serde_json::json!({ "schema": HOSTILE });
    std::fs::write(&file, doc.to_string()).unwrap();
    let o = run(cmd().arg("report").arg(&file));
    assert_eq!(code(&o), 2);
    assert_safe("error line", &o.stderr);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("schema '{HOSTILE_SHOWN}' is not supported")),
        "{err}"
    );
}

/// The hostile shim's spec: a token label with an OSC sequence (ESC ] … BEL),
/// a newline and the invalid UTF-8 byte 0xff; a manufacturer ID (token, slot
/// and library) with a CSI colour sequence and BEL; a model with the C1 CSI
/// U+009B and a right-to-left override, as UTF-8.
const SHIM_TEXT: &str = r"token_label=a\e]0;pwn\aB\nC\xffD,manufacturer=m\e[31m\a\nX\xff,model=x\xc2\x9b2J\xe2\x80\xaey";

/// The token label as hsm-bench decodes it (the byte 0xff as the text `\xff`).
const LABEL: &str = "a\u{1b}]0;pwn\u{7}B\nC\\xffD";

/// [`LABEL`] as hsm-bench shows it.
const LABEL_SHOWN: &str = "a\\e]0;pwn\\x07B\\nC\\xffD";

/// The manufacturer ID as decoded and as shown.
const MANUFACTURER: &str = "m\u{1b}[31m\u{7}\nX\\xff";
const MANUFACTURER_SHOWN: &str = "m\\e[31m\\x07\\nX\\xff";

/// The model as shown.
const MODEL_SHOWN: &str = "x\\u{9b}2J\\u{202e}y";

/// `hsm-bench ARGS` through the hostile shim over `t`, rewriting the token's
/// text as [`SHIM_TEXT`] says.
fn through_shim(t: &SoftToken, args: &[&str]) -> std::process::Output {
    t.through_hostile(SHIM_TEXT, args)
}

#[test]
fn list_of_a_token_with_hostile_text_prints_no_raw_control_byte() {
    let t = SoftToken::new("hostile-list");
    let o = through_shim(&t, &["list"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_safe("list stdout", &o.stdout);
    assert_safe("list stderr", &o.stderr);
    let text = stdout(&o);
    assert!(
        text.contains(&format!(
            "    token '{LABEL_SHOWN}': {MANUFACTURER_SHOWN} {MODEL_SHOWN}, serial "
        )),
        "{text}"
    );
    // The library's and the slot's manufacturer IDs too.
    assert!(
        text.contains(&format!("manufacturer {MANUFACTURER_SHOWN}, sha256 ")),
        "{text}"
    );

    // JSON keeps the text, escaped as JSON.
    let o = through_shim(&t, &["list", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_safe("list --format json", &o.stdout);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let token = v["modules"][0]["slots"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|s| (s["token"]["label"] == LABEL).then(|| s["token"].clone()))
        .unwrap_or_else(|| panic!("no token labelled {LABEL:?} in {v}"));
    assert_eq!(token["manufacturer"], MANUFACTURER, "{token}");
    assert_eq!(token["model"], "x\u{9b}2J\u{202e}y", "{token}");
    assert_eq!(v["modules"][0]["library"]["manufacturer"], MANUFACTURER);
}

#[test]
fn a_run_on_a_token_with_hostile_text_prints_no_raw_control_byte() {
    let t = SoftToken::new("hostile-run");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let bench = [
        &["run", "--token-label", LABEL, "--pin", &t.pin][..],
        QUICK_SHA256,
    ]
    .concat();
    // Progress lines on stderr too (no --quiet).
    let o = through_shim(&t, &[&bench[..], &["--format", "text"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_safe("run --format text stdout", &o.stdout);
    assert_safe("run stderr", &o.stderr);
    let text = stdout(&o);
    assert!(text.contains(&format!("token '{LABEL_SHOWN}'")), "{text}");

    // The JSON keeps the label's text.
    let o = through_shim(
        &t,
        &[
            &bench[..],
            &["--quiet", "--format", "json", "-o", out.to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&out);
    assert_eq!(v["metadata"]["modules"][0]["token"]["label"], LABEL);
    assert_eq!(
        v["metadata"]["modules"][0]["token"]["manufacturer"],
        MANUFACTURER
    );
    assert_safe("the result file", &std::fs::read(&out).unwrap());
    let o = run(cmd().arg("report").arg(&out));
    assert_safe("report of the result file", &o.stdout);
    assert!(stdout(&o).contains(&format!("token '{LABEL_SHOWN}'")));

    // Key listing names the token.
    let o = through_shim(
        &t,
        &["keys", "list", "--token-label", LABEL, "--pin", &t.pin],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_safe("keys list", &o.stdout);
    assert!(
        stdout(&o).contains(&format!("on token '{LABEL_SHOWN}'")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_error_quoting_a_hostile_label_is_one_escaped_line() {
    let t = SoftToken::new("hostile-error");
    let o = through_shim(
        &t,
        &[
            "run",
            "--token-label",
            "nope",
            "--pin",
            &t.pin,
            "--ops",
            "sha256",
        ],
    );
    assert_eq!(code(&o), 2);
    assert_safe("error line", &o.stderr);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("no token labelled 'nope' (tokens: {LABEL_SHOWN}")),
        "{err}"
    );
}
