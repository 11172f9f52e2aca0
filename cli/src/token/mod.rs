//! The PKCS#11 module under test: loading it (cryptoki for set-up, the raw
//! function list for timed calls), slots, tokens and login, what the token
//! offers, and the names of CKR/CKM codes. The bottom folder: imports only the
//! root files (`error`), never a folder above it.

pub mod caps;
pub mod choice;
pub mod ckr;
pub mod info;
pub mod locate;
pub mod mech;
pub mod mechanism_names;
pub mod module;
pub mod population;
pub mod random;
pub mod raw;
pub mod temp_token;
pub mod template;
