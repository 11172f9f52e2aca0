//! Running the operations and timing them: settings and named profiles (`bench-
//! profiles/*.toml`), the checks flags and profiles share, the runner (warmup,
//! iterations or duration, threads or processes started together at a barrier,
//! open-loop rate, mixes), the measurement loop over modules and ops
//! (`bench.rs`), live progress and interrupts. May import `report/` (the result
//! model it fills in), `suite/`, `token/` and the root files (`stats`,
//! `sysinfo`, `machine`, `error`); never `judge/`, `commands/` or `cli.rs`.

pub mod bench;
pub mod checks;
pub mod interrupt;
pub mod ipc;
pub mod job;
pub mod mode;
pub mod module_bench;
pub mod profiles;
pub mod progress;
pub mod rate;
pub mod remote;
pub mod runner;
pub mod settings;
