//! `hsm-bench check-floors`: a result file against portable floors.

use crate::cli::CheckFloorsArgs;
use crate::commands::output::write_or_print;
use crate::error::Result;
use crate::judge::floors::{self, Floors};
use crate::report;
use crate::report::verdict::VerdictPage;

/// `hsm-bench check-floors`: a run against portable floors.
pub fn check_floors(args: &CheckFloorsArgs) -> Result<i32> {
    let rep = report::json::load(&args.current)?;
    let mut f = Floors::load(&args.floors)?;
    if let Some(r) = &args.reference {
        f.reference = r.clone();
    }
    let c = floors::check(&rep, &f);
    write_or_print(&c.render(args.format), None)?;
    Ok(c.exit_code())
}
