//! Judging results: comparing a run with a baseline (noise-aware deltas and
//! the exit code of the regression gate) and checking a run against portable
//! floors. May import `report/` (the result model and the verdict page),
//! `suite/` and the root files; never `measure/` or `commands/`.

pub mod compare;
pub mod floors;
