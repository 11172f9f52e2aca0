//! What a command prints: its result as one JSON document (`--json`, for
//! scripts) or as text for a person, and the progress bar of a long
//! command (drawn on standard error; none under `--json`).

use std::fmt::Display;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

/// Prints a command's result on standard output: `doc` under `--json`,
/// else the line `text`.
pub fn result(json: bool, doc: Value, text: impl Display) {
    if json {
        println!("{doc}");
    } else {
        println!("{text}");
    }
}

/// A progress bar of `len` steps (0: set later) drawn with `template`
/// (indicatif's syntax); hidden under `--json`.
pub fn progress_bar(len: u64, template: &str, json: bool) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(ProgressStyle::with_template(template).expect("a valid template"));
    if json {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}
