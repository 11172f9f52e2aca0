//! The PKCS#11 module under test: loading it (cryptoki for set-up, the raw
//! function list for timed calls), slots, tokens and login, what the token
//! offers, and the names of CKR/CKM codes. Every count and length a module
//! reports is bounded (`bounds.rs`, `lists.rs`) and every NULL it hands out
//! checked (`library.rs`, `entries.rs`) before use. The bottom folder:
//! imports only the root files (`error`), never a folder above it.

pub mod bounds;
pub mod caps;
pub mod choice;
pub mod ckr;
pub mod entries;
pub mod info;
pub mod kem;
pub mod library;
pub mod lists;
pub mod locate;
pub mod mech;
pub mod mechanism_names;
pub mod module;
pub mod population;
pub mod random;
pub mod raw;
pub mod temp_token;
pub mod template;
