//! JSON output (`hsm-bench/1`) and loading of saved result files.

use std::path::Path;

use crate::error::{CliError, Result};
use crate::report::result::Report;
use crate::report::result::SCHEMA;

/// Serialise a report, pretty-printed (the controls serde_json leaves raw as
/// `\u` escapes, [`crate::safe_text::json`]: the text reads back unchanged).
pub fn to_string(r: &Report) -> String {
    crate::safe_text::json(serde_json::to_string_pretty(r).expect("reports serialise"))
}

/// Load a result file, checking its schema id.
pub fn load(path: &Path) -> Result<Report> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    parse(&text).map_err(|e| e.context(&path.display().to_string()))
}

/// Parse a result file's text.
pub fn parse(text: &str) -> Result<Report> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| CliError::usage(format!("not JSON: {e}")))?;
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(CliError::usage(format!(
                "schema '{other}' is not supported (this hsm-bench reads {SCHEMA})"
            )));
        }
        None => {
            return Err(CliError::usage(
                "not an hsm-bench result file (no \"schema\")",
            ));
        }
    }
    serde_json::from_value(v).map_err(|e| CliError::usage(format!("invalid {SCHEMA} file: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::report;
    use crate::report::fixtures::result;
    use crate::report::fixtures::sized;
    use crate::report::result::Status;

    /// Schema violations of every result of `v` (against `$defs/result`).
    fn violations(v: &serde_json::Value) -> Vec<String> {
        let full: serde_json::Value =
            serde_json::from_str(include_str!("../../schema/hsm-bench-1.schema.json")).unwrap();
        let schema = serde_json::json!({
            "$schema": full["$schema"],
            "$defs": full["$defs"],
            "$ref": "#/$defs/result",
        });
        let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| {
                validator
                    .iter_errors(r)
                    .map(|e| format!("{e} at {}", e.instance_path))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn schema_accepts_throughput_and_rejects_it_where_meaningless() {
        let sha = sized(1000.0, 1024);
        let sign = result("m", "p256-sign", 500.0, 0.01);
        let v = serde_json::to_value(report(vec![sha, sign])).unwrap();
        assert_eq!(v["results"][0]["bytes_per_sec"], 1_024_000.0);
        assert!(v["results"][1]["bytes_per_sec"].is_null());
        assert_eq!(violations(&v), Vec::<String>::new());
        // Older files have no bytes_per_sec: still valid.
        let mut old = v.clone();
        old["results"][0]
            .as_object_mut()
            .unwrap()
            .remove("bytes_per_sec");
        assert_eq!(violations(&old), Vec::<String>::new());
        // Zero, negative or a string is not a throughput.
        for bad in [
            serde_json::json!(0.0),
            serde_json::json!(-5.0),
            serde_json::json!("1 MB/s"),
        ] {
            let mut b = v.clone();
            b["results"][0]["bytes_per_sec"] = bad.clone();
            assert!(!violations(&b).is_empty(), "{bad} accepted");
        }
        // Unmeasured (no ops/s, e.g. unsupported) results have no throughput.
        let mut b = v.clone();
        b["results"][1]["ops_per_sec"] = serde_json::Value::Null;
        b["results"][1]["bytes_per_sec"] = serde_json::json!(100.0);
        assert!(!violations(&b).is_empty());
        // And parsing the rendered file keeps the field.
        let back = parse(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back.results[0].bytes_per_sec, Some(1_024_000.0));
        assert_eq!(back.results[1].status, Status::Ok);
    }
}
