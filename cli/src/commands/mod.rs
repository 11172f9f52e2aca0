//! One file per subcommand (`run`, `compare`, `list`, `keys`, `report`,
//! `check-floors`, `machine`, `ops`); each is a short function that wires the
//! folders below: `measure/` (run the operations), `judge/` (compare, floors),
//! `report/` (render), `suite/` and `token/` (what to run, on which module).
//! `output.rs` writes their output. Only `main.rs` imports this folder; nothing
//! here is imported by the folders below. Commands read their arguments from
//! `cli.rs`.

pub mod check_floors;
pub mod compare;
pub mod keys;
pub mod list;
pub mod machine;
pub mod ops;
pub mod output;
pub mod report;
pub mod run;
