//! `hsm-bench compare`: two result files, noise-aware deltas, an exit code.

use crate::cli::CompareArgs;
use crate::commands::output::write_or_print;
use crate::error::{CliError, Result};
use crate::judge::compare;
use crate::report;
use crate::report::result::Report;
use crate::report::verdict::VerdictPage;

/// `hsm-bench compare`.
pub fn compare(args: &CompareArgs) -> Result<i32> {
    if !(args.threshold >= 0.0 && args.threshold.is_finite()) {
        return Err(CliError::usage(
            "--threshold must be a non-negative percentage",
        ));
    }
    let cur = report::json::load(&args.current)?;
    let base = report::json::load(&args.baseline)?;
    if let Some(r) = &args.reference {
        let has = |rep: &Report| rep.results.iter().any(|x| &x.module == r);
        if !has(&cur) || !has(&base) {
            return Err(CliError::inconclusive(format!(
                "reference module '{r}' is not in both result files"
            )));
        }
    }
    if !args.allow_class_mismatch
        && let Some(why) = compare::class_mismatch(&cur, &base, args.reference.as_deref())
    {
        return Err(CliError::inconclusive(why));
    }
    let c = compare::compare(&cur, &base, args.threshold, args.reference.as_deref());
    if let Some(p) = &args.html {
        let page = report::html::render_compare(&c).map_err(CliError::usage)?;
        write_or_print(&page, Some(p))?;
    }
    write_or_print(&c.render(args.format), None)?;
    Ok(c.exit_code(args.fail_on_regression))
}
