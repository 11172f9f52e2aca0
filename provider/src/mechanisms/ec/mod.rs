//! ECDSA and ECDH (mechanisms spec §2.3) on the Weierstrass curves P-192
//! (legacy), P-224, P-256, P-384, P-521 and secp256k1, with the RustCrypto
//! curve crates (with the `aws-lc` feature, P-256 / P-384 / P-521 ECDSA
//! goes through aws-lc).
//!
//! `CKA_EC_PARAMS` is the named-curve OID in DER, or (accepted on input) a
//! DER PrintableString of a curve name such as "prime256v1" or "P-384".
//! `CKA_EC_POINT` is returned as a DER OCTET STRING holding the
//! uncompressed point and accepted raw or DER, compressed or not, on input;
//! the public data of `CKM_ECDH1_DERIVE` likewise. Signatures are r ‖ s,
//! each the size of the field.
//!
//! One job per file: `curves` (names, key types, encodings), `keys`
//! (building, importing, generating and wrapping keys), `ecdsa` (signing
//! and verification), `ecdh` (derivation). This file only declares the
//! parts and re-exports them.

pub(super) mod curves;
mod ecdh;
mod ecdsa;
mod keys;

pub use curves::{
    Curve, EcPrivateKey, EcPublicKey, OID_K256, OID_P192, OID_P224, OID_P256, OID_P384, OID_P521,
    curve_of, der_point, parse_point,
};
pub use ecdh::ecdh_derive;
pub use ecdsa::{EcdsaSign, EcdsaVerify};
pub use keys::{complete_import, from_pkcs8, generate, load_private, load_public, to_pkcs8};
