//! dalek-pkcs11: a PKCS#11 3.0 software token with a persistent, encrypted
//! keystore.
//!
//! Layers, arrows pointing down only (see `docs/ARCHITECTURE.md`):
//! `ffi` (the C ABI) → `api` (safe model: module, tokens, sessions,
//! objects, attribute policy) → `mechanisms` (crypto, one file per family)
//! and `storage` (SQLite or memory, encryption at rest).

pub mod api;
pub mod attributes;
pub mod config;
pub mod error;
pub mod ffi;
pub mod hygiene;
pub mod log;
pub mod mechanisms;
pub mod storage;
