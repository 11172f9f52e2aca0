//! Rendering results: the result model every format shares (`result.rs`,
//! `notes.rs`, `comparison.rs`), text, JSON (versioned schema, full metadata),
//! CSV, gh-bench, HTML/SVG charts and the verdict pages of `compare` and
//! `check-floors`. May import `suite/`, `token/` and the root files; never
//! `measure/`, `judge/` or `commands/` (judge/ fills in `comparison.rs` and
//! implements `verdict::VerdictPage`; the arrow runs judge → report only).

pub mod axis;
pub mod charts;
pub mod comparison;
pub mod csv;
#[cfg(test)]
pub mod fixtures;
pub mod format;
pub mod gh;
pub mod html;
pub mod json;
pub mod merge;
pub mod notes;
pub mod result;
pub mod text;
pub mod verdict;
