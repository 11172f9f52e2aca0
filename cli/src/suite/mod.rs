//! The operations hsm-bench measures, one file per operation family: its
//! mechanism, its key, inputs prepared outside the timer, and the check of
//! every result.
//!
//! A family exports constructors of [`op::OpDef`]s and builds the workers for
//! its [`op::OpKind`]s. To add an operation: add an `OpKind` variant (or reuse
//! one with new parameters), an entry to [`catalogue::catalogue`], and the
//! worker in the family file. Vendor interfaces (e.g. a batch verify) get their
//! own family file the same way.
//!
//! Inside the folder, arrows run one way: `catalogue` and `support` → the
//! family files → `keys`, `role_separated`, `check` → `op` → `keyset`, `alg`,
//! `failure`. This file only declares the files. The folder may import
//! `token/` and the root files, never `measure/`, `judge/`, `report/` or
//! `commands/`.

pub mod alg;
pub mod catalogue;
pub mod check;
pub mod cipher;
pub mod derive;
pub mod digest;
pub mod existing;
pub mod failure;
pub mod generic;
pub mod kem;
pub mod keygen;
pub mod keys;
pub mod keyset;
pub mod mac;
pub mod objects;
pub mod op;
pub mod population;
pub mod random;
pub mod role_separated;
pub mod sign;
pub mod support;
pub mod vendor;
pub mod wrap;
