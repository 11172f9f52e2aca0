//! One file per subcommand (`run`, `compare`, `list`, `keys`, `report`,
//! `check-floors`, `machine`, `ops`, `merge`, and the hidden `cold-start` probe;
//! `run_worker` is a module's worker process, `fleet` starts a module's
//! workers, one per `--processes`); each is a
//! short function that wires the folders below: `measure/` (run the
//! operations), `judge/` (compare, floors), `report/` (render), `suite/` and
//! `token/` (what to run, on which module). `output.rs` writes their output.
//! Commands read their arguments from `cli.rs`; only `main.rs` imports this
//! folder, and nothing below imports it.

pub mod apart;
pub mod check_floors;
pub mod cold_start;
pub mod compare;
pub mod fleet;
pub mod keys;
pub mod list;
pub mod machine;
pub mod merge;
pub mod ops;
pub mod output;
pub mod report;
pub mod run;
pub mod run_worker;
