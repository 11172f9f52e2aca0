//! JSON output (`hsm-bench/1`) and loading of saved result files.

use std::path::Path;

use super::{Report, SCHEMA};
use crate::error::{CliError, Result};

/// Serialise a report, pretty-printed.
pub fn to_string(r: &Report) -> String {
    serde_json::to_string_pretty(r).expect("reports serialise")
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
