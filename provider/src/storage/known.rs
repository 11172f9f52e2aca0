//! What a store's connection knows of the stored records' MACs: each
//! record's, their XOR (compared with the stored object-set digest, see
//! `integrity`), and the records that failed authentication. Shared by the
//! SQLite and PostgreSQL stores.

use super::integrity::{MAC_LEN, Tag, toggle};
use super::store::Uid;
use std::collections::{BTreeSet, HashMap};

/// The stored MACs of the records a connection knows of.
#[derive(Default)]
pub(crate) struct Known {
    /// Stored MAC of every record, and their XOR.
    pub(crate) macs: HashMap<Uid, Tag>,
    pub(crate) xor: Tag,
    /// Records whose MAC did not match: refused, never served.
    pub(crate) damaged: BTreeSet<Uid>,
    /// False when the known records do not add up to the stored digest.
    pub(crate) digest_off: bool,
}

impl Known {
    /// Records the stored MAC of a record.
    pub(crate) fn learn(&mut self, uid: Uid, stored: &[u8]) {
        let mut tag = [0u8; MAC_LEN];
        let n = stored.len().min(MAC_LEN);
        tag[..n].copy_from_slice(&stored[..n]);
        if let Some(old) = self.macs.insert(uid, tag) {
            toggle(&mut self.xor, &old);
        }
        toggle(&mut self.xor, &tag);
    }

    /// Forgets a record that no longer exists.
    pub(crate) fn forget(&mut self, uid: &Uid) {
        if let Some(old) = self.macs.remove(uid) {
            toggle(&mut self.xor, &old);
        }
        self.damaged.remove(uid);
    }

    /// What is wrong with the records of token `serial`, as of the last
    /// look (`TokenStore::damage`).
    pub(crate) fn damage(&self, serial: &str) -> Option<String> {
        match (self.damaged.len(), self.digest_off) {
            (0, false) => None,
            (0, true) => Some(format!(
                "token {serial}: objects were deleted or added outside the module"
            )),
            (n, _) => Some(format!(
                "token {serial}: {n} object record(s) failed authentication"
            )),
        }
    }
}
