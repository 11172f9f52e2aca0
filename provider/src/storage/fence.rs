//! The epoch fence of a token's writes (issue 27's re-initialisation
//! rule, shared by the SQLite and PostgreSQL stores): a token another
//! process re-initialised since this connection's user last looked is a
//! new token, and nothing the old one's state holds (a login, its token
//! key, a PIN wrap, a sealed value, the old integrity keys) may be written
//! into it. The store checks the epoch inside the write's own transaction
//! ([`Fence::check`]), so no re-initialisation slips in between, and
//! [`Fence::finish`] makes the store reload before its next look.

use crate::error::{Result, err};
use cryptoki_sys::CKR_DEVICE_REMOVED;
use std::cell::Cell;

/// One write's fence, made from the epoch this connection accepted.
pub(crate) struct Fence {
    accepted: String,
    stale: Cell<bool>,
}

impl Fence {
    pub(crate) fn new(accepted: &str) -> Self {
        Fence {
            accepted: accepted.to_owned(),
            stale: Cell::new(false),
        }
    }

    /// `CKR_DEVICE_REMOVED` when the epoch in the transaction, `current`,
    /// is not the accepted one.
    pub(crate) fn check(&self, current: &str) -> Result<()> {
        if current == self.accepted {
            return Ok(());
        }
        self.stale.set(true);
        Err(err(CKR_DEVICE_REMOVED))
    }

    /// The write's outcome, after logging a refusal and setting `reload`.
    pub(crate) fn finish<T>(self, serial: &str, reload: &mut bool, out: Result<T>) -> Result<T> {
        if self.stale.get() {
            crate::log::warn(format_args!(
                "token {serial}: re-initialised by another process; a write of the old token refused"
            ));
            *reload = true;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_different_epoch_is_refused_and_reloads() {
        let mut reload = false;
        let fence = Fence::new("a");
        let out = fence.check("a").map(|()| 7);
        assert_eq!(fence.finish("s", &mut reload, out).unwrap(), 7);
        assert!(!reload);

        let fence = Fence::new("a");
        let out = fence.check("b");
        let rv = fence.finish("s", &mut reload, out).unwrap_err();
        assert_eq!(rv.rv(), CKR_DEVICE_REMOVED);
        assert!(reload);
    }
}
