//! The parsed Diffie-Hellman keys the key material holds.

use super::groups::Group;
use crypto_bigint::BoxedUint;
use std::sync::Arc;
use zeroize::Zeroizing;

/// A private key: its group and x, 1 ≤ x < q (never printed).
pub struct PrivateKey {
    group: Arc<Group>,
    x: Zeroizing<BoxedUint>,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateKey")
            .field("bits", &self.group.bits())
            .finish_non_exhaustive()
    }
}

impl PrivateKey {
    /// A key of `group` with a checked x.
    pub(super) fn new(group: Arc<Group>, x: Zeroizing<BoxedUint>) -> PrivateKey {
        PrivateKey { group, x }
    }

    /// The key's group.
    pub fn group(&self) -> &Group {
        &self.group
    }

    /// x.
    pub fn x(&self) -> &BoxedUint {
        &self.x
    }
}

/// A public key: its group and y, checked to lie in the order-q subgroup.
#[derive(Debug)]
pub struct PublicKey {
    group: Arc<Group>,
}

impl PublicKey {
    /// A key of `group` whose y was checked.
    pub(super) fn new(group: Arc<Group>) -> PublicKey {
        PublicKey { group }
    }

    /// The key's group.
    pub fn group(&self) -> &Group {
        &self.group
    }
}
