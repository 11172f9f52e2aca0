//! `hsm-bench merge`: result files of runs made at the same time on several
//! hosts (one token, several clients) as one report: per result (module,
//! op, data size, threads, processes), each host's row and a merged row
//! whose latency histogram is the hosts' added (`report/merge.rs`). Files
//! that cannot be merged are refused with one line: unreadable ones, ones
//! without histograms (written before results carried them), and ones run
//! with other settings.

use std::path::Path;

use crate::cli::{MergeArgs, MergeFormat};
use crate::commands::output::{check_output, write_or_print};
use crate::error::{CliError, EXIT_OK, Result};
use crate::report;
use crate::report::merge::{combine, mismatch};
use crate::report::result::{BenchResult, MergedInput, PartRow, Report};

/// The file's name, for messages.
fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// `hsm-bench merge A.json B.json …`.
pub fn merge(args: &MergeArgs) -> Result<i32> {
    for (p, flag) in [(&args.output, "--output"), (&args.html, "--html")] {
        if let Some(p) = p {
            check_output(p, flag)?;
        }
    }
    let mut inputs: Vec<(String, Report)> = Vec::new();
    for f in &args.files {
        let rep = report::json::load(f)?;
        if let Some(r) = rep
            .results
            .iter()
            .find(|r| r.iterations > r.errors && r.latency_hdr.is_none())
        {
            return Err(CliError::usage(format!(
                "{}: result {} [{}] carries no latency histogram (latency_hdr): \
                 written by an older hsm-bench; run it again with this one",
                shown(f),
                r.op,
                r.module
            )));
        }
        inputs.push((shown(f), rep));
    }
    let (first_name, first) = &inputs[0];
    for (name, rep) in &inputs[1..] {
        if let Some(why) = mismatch(first, first_name, rep, name) {
            return Err(CliError::usage(format!("cannot merge: {why}")));
        }
    }
    let hosts = host_names(&args.files, &inputs);
    // Every result key, in the order the files first show it.
    let mut keys = Vec::new();
    for (_, rep) in &inputs {
        for r in &rep.results {
            if !keys.contains(&r.key()) {
                keys.push(r.key());
            }
        }
    }
    let mut merged = Vec::new();
    let mut csv_rows: Vec<(String, BenchResult)> = Vec::new();
    for k in &keys {
        let (parts, rows): (Vec<BenchResult>, Vec<PartRow>) = inputs
            .iter()
            .zip(&hosts)
            .filter_map(|((_, rep), host)| {
                let r = rep.results.iter().find(|r| &r.key() == k)?;
                let row = PartRow {
                    host: Some(host.clone()),
                    ..PartRow::of(r)
                };
                Some((r.clone(), row))
            })
            .unzip();
        let (mut m, rows) = combine(&parts, &rows, &first.metadata.percentiles)
            .map_err(|e| CliError::usage(format!("cannot merge: {e}")))?;
        m.hosts = Some(rows);
        for (p, host) in parts.into_iter().zip(m.hosts.iter().flatten()) {
            csv_rows.push((host.host.clone().unwrap_or_default(), p));
        }
        csv_rows.push(("merged".into(), m.clone()));
        merged.push(m);
    }
    let mut metadata = first.metadata.clone();
    metadata.command_line = std::env::args().collect();
    metadata.merged_from = Some(
        inputs
            .iter()
            .zip(&hosts)
            .map(|((file, rep), host)| MergedInput {
                host: host.clone(),
                file: file.clone(),
                timestamp: rep.metadata.timestamp.clone(),
            })
            .collect(),
    );
    for (_, rep) in &inputs[1..] {
        for m in &rep.metadata.modules {
            if !metadata.modules.iter().any(|x| x.name == m.name) {
                metadata.modules.push(m.clone());
            }
        }
    }
    let rep = Report {
        schema: report::result::SCHEMA.into(),
        metadata,
        results: merged,
        ratios: None,
    };
    let text = match args.format {
        MergeFormat::Text => report::text::render(&rep),
        MergeFormat::Json => report::json::to_string(&rep),
        MergeFormat::Csv => report::csv::with_hosts(csv_rows.iter().map(|(h, r)| (h.as_str(), r))),
    };
    write_or_print(&text, args.output.as_deref())?;
    if let Some(p) = &args.html {
        let page = report::html::render(&rep).map_err(CliError::usage)?;
        write_or_print(&page, Some(p))?;
    }
    Ok(EXIT_OK)
}

/// Each input's host: its `system.hostname`, else its file name; a host
/// named twice gets its file name added.
fn host_names(files: &[std::path::PathBuf], inputs: &[(String, Report)]) -> Vec<String> {
    let stem = |f: &std::path::PathBuf| {
        f.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| shown(f))
    };
    let base: Vec<String> = inputs
        .iter()
        .zip(files)
        .map(|((_, rep), f)| {
            rep.metadata
                .system
                .hostname
                .clone()
                .unwrap_or_else(|| stem(f))
        })
        .collect();
    base.iter()
        .zip(files)
        .map(|(h, f)| {
            if base.iter().filter(|x| *x == h).count() > 1 {
                format!("{h} ({})", shown(f))
            } else {
                h.clone()
            }
        })
        .collect()
}
