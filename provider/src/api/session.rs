//! A session: its token, read/write flag, and the operations active in it
//! (at most one of each kind, §5.2 / §6.6 "Sessions"; the operation types
//! are in `operations`).

use super::operations::SessionOps;
use super::token::Token;
use cryptoki_sys::*;
use parking_lot::Mutex;
use std::sync::Arc;

/// An open session.
pub struct Session {
    /// `CK_SESSION_HANDLE`.
    pub handle: CK_SESSION_HANDLE,
    /// The token (and slot) of the session.
    pub token: Arc<Token>,
    /// `CKF_RW_SESSION`.
    pub rw: bool,
    /// Active operations; each session has its own lock.
    pub ops: Mutex<SessionOps>,
    /// False once `C_CloseSession` (or close-all, finalize) has begun: a
    /// call still running on the session may not leave anything behind.
    pub open: std::sync::atomic::AtomicBool,
    /// The token's incarnation the session was opened in
    /// (`Token::incarnation`).
    pub incarnation: u64,
}

impl Session {
    /// Opened on a token another process has since re-initialised: the
    /// session is over.
    #[inline]
    pub fn of_an_old_token(&self) -> bool {
        self.incarnation
            != self
                .token
                .incarnation
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The session state of §5.6 table "Session states", from the token's
    /// login state and the session's read/write flag.
    pub fn state(&self) -> CK_STATE {
        match (self.token.logged_in(), self.rw) {
            (Some(CKU_SO), _) => CKS_RW_SO_FUNCTIONS,
            (Some(_), true) => CKS_RW_USER_FUNCTIONS,
            (Some(_), false) => CKS_RO_USER_FUNCTIONS,
            (None, true) => CKS_RW_PUBLIC_SESSION,
            (None, false) => CKS_RO_PUBLIC_SESSION,
        }
    }

    /// `CKR_SESSION_READ_ONLY` unless the session is read/write.
    pub fn require_rw(&self) -> crate::error::Result<()> {
        if self.rw {
            Ok(())
        } else {
            Err(crate::error::err(CKR_SESSION_READ_ONLY))
        }
    }
}
