//! What a token declares that decides which ops it can run (checked by
//! `suite/support.rs`).

use std::collections::BTreeMap;

use cryptoki_sys::{CK_MECHANISM_INFO, CK_MECHANISM_TYPE};

/// What a token declares that decides which ops it can run.
pub struct TokenCaps<'a> {
    /// The token's mechanisms with their info.
    pub mechanisms: &'a BTreeMap<CK_MECHANISM_TYPE, CK_MECHANISM_INFO>,
    /// Whether the module offers the vendor batch-verify interface.
    pub verify_batch: bool,
    /// Whether the module offers the "PKCS 11" 3.2 interface (key
    /// encapsulation).
    pub interface_3_2: bool,
}
