//! `hsm-bench report`: re-render a saved result file.

use crate::cli::{ReportArgs, ReportFormat};
use crate::commands::output::{check_output, write_or_print};
use crate::error::{CliError, EXIT_OK, Result};
use crate::report;

/// `hsm-bench report`: re-render a saved result file.
pub fn report(args: &ReportArgs) -> Result<i32> {
    if let Some(p) = &args.output {
        check_output(p, "--output")?;
    }
    let rep = report::json::load(&args.file)?;
    if let Some(p) = &args.html {
        let page = report::html::render(&rep).map_err(CliError::usage)?;
        write_or_print(&page, Some(p))?;
        if args.output.is_none() {
            return Ok(EXIT_OK);
        }
    }
    let text = match args.format {
        ReportFormat::Text => report::text::render(&rep),
        ReportFormat::Json => report::json::to_string(&rep),
        ReportFormat::Csv => report::csv::to_string(&rep.results),
        ReportFormat::GhBench => report::gh::to_string(&rep),
    };
    write_or_print(&text, args.output.as_deref())?;
    Ok(EXIT_OK)
}
