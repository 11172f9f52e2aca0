//! Judging results: comparing a run with a baseline (noise-aware deltas and
//! the exit code of the regression gate) and checking a run against portable
//! floors. May import `report/` (the result model and the verdict page),
//! `suite/` and the root files; never `measure/` or `commands/`. The machine
//! class a baseline is refused by lives in the root `machine.rs`, beside
//! `sysinfo.rs` that records it in every result.

pub mod compare;
pub mod floors;
