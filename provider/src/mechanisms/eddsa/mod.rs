//! Ed25519 (mechanisms spec §2.3.5–2.3.6 "EdDSA" and §2.3.14 key pair
//! generation) with ed25519-dalek.
//!
//! `CKA_EC_PARAMS` may be the OID 1.3.101.112, the printable string
//! "edwards25519" (the spec's form), or the GnuPG OID 1.3.6.1.4.1.11591.15.1
//! (older OpenSC). `CKA_EC_POINT` is returned as a DER OCTET STRING holding
//! the 32-byte point and accepted raw or DER on import. `CKM_EDDSA` runs
//! Ed25519, Ed25519ph or Ed25519ctx (RFC 8032 §5.1) as its
//! `CK_EDDSA_PARAMS` selects (see `Variant`); Ed25519ctx is built on
//! curve25519-dalek in `ctx.rs`, batch verification lives in `batch.rs`.
//!
//! Ed448 (RFC 8032 §5.2, "edwards448", OID 1.3.101.113) is in `ed448.rs`
//! on ed448-goldilocks; the same `CKM_EDDSA` operations run it.
//!
//! One job per file: `keys` (parameters, loading, import, encodings,
//! generation), `sign` (the signature operations), `ctx` (Ed25519ctx),
//! `batch` (batch verification). This file only declares the parts and
//! re-exports them.

mod batch;
mod ctx;
pub mod ed448;
mod keys;
mod sign;

pub use crate::mechanisms::rfc8410::{der_point, parse_point};
pub use batch::verify_batch;
pub use keys::*;
pub use sign::*;
