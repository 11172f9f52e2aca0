//! `hsm-bench ops`: the operations hsm-bench can measure.

use crate::commands::output::out;
use crate::error::{EXIT_OK, Result};
use crate::report;
use crate::report::format::fmt_size;
use crate::suite::catalogue::catalogue;
use crate::suite::op::DataSpec;

/// `hsm-bench ops`: the catalogue.
pub fn ops() -> Result<i32> {
    let headers: Vec<String> = ["op", "mechanism", "key", "input", "title"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let rows: Vec<Vec<String>> = catalogue()
        .iter()
        .map(|o| {
            vec![
                o.id.clone(),
                o.mechanism_name(),
                o.key.map(|k| k.name()).unwrap_or_else(|| "-".into()),
                match o.data {
                    DataSpec::Fixed(0) => "-".into(),
                    DataSpec::Fixed(n) => fmt_size(n as u64),
                    DataSpec::Variable { default, .. } => {
                        format!("{} (--data-sizes)", fmt_size(default as u64))
                    }
                },
                o.title.clone(),
            ]
        })
        .collect();
    out(&report::text::table(&headers, &rows, 5))?;
    Ok(EXIT_OK)
}
