//! hsm-bench: benchmark any PKCS#11 module (ours, SoftHSM2, or a hardware token).
//!
//! `cli.rs` holds the command-line definition; this file parses it, hands each
//! subcommand to its file under `commands/` and turns an error into one line
//! and an exit code (see `docs/benchmarking.md` for the user guide).

mod cli;
mod commands;
mod error;
mod judge;
mod machine;
mod measure;
mod report;
mod safe_text;
mod stats;
mod suite;
mod sysinfo;
mod token;

use clap::Parser;

use cli::{Cli, Command};

fn main() {
    // Internal errors get one line too, never a trace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        eprintln!("hsm-bench: internal error: {}", safe_text::escape(&msg));
    }));
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            let text = e.to_string();
            let line = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ");
            eprintln!("hsm-bench: error: {}", safe_text::escape(line));
            std::process::exit(error::EXIT_USAGE);
        }
    };
    let result = match &cli.command {
        None => match Cli::try_parse_from(["hsm-bench", "run", "--profile", "quick"]) {
            Ok(Cli {
                command: Some(Command::Run(a)),
            }) => run_or_serve(&a),
            _ => unreachable!("the default command line parses"),
        },
        Some(Command::Run(a)) => run_or_serve(a),
        Some(Command::Compare(a)) => commands::compare::compare(a),
        Some(Command::List(a)) => commands::list::list(a),
        Some(Command::Keys(k)) => commands::keys::run(k),
        Some(Command::CheckFloors(a)) => commands::check_floors::check_floors(a),
        Some(Command::Machine(a)) => commands::machine::machine(a),
        Some(Command::Ops) => commands::ops::ops(),
        Some(Command::Report(a)) => commands::report::report(a),
        Some(Command::Merge(a)) => commands::merge::merge(a),
        Some(Command::ColdStart(a)) => commands::cold_start::run(a),
    };
    // Everything (modules, temporary tokens) has been dropped by now.
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            // An empty message ends quietly (stdout closed by the reader). The
            // message may quote what a module said (a label, a description):
            // its control characters are shown escaped, never sent raw.
            if !e.message.is_empty() {
                eprintln!("hsm-bench: error: {}", safe_text::escape(&e.message));
            }
            e.code
        }
    };
    std::process::exit(code);
}

/// `run`, or a module's worker for the `run` that started this process
/// (`measure/remote.rs`).
fn run_or_serve(a: &cli::RunArgs) -> error::Result<i32> {
    match commands::run_worker::endpoint() {
        Some(ep) => commands::run_worker::serve(a, ep),
        None => commands::run::run(a),
    }
}
