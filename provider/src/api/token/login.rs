//! The login state machine of a token in this process (base spec §5.6
//! `C_Login`, `C_Logout`, and the session states of §5.6 table "Session
//! states"; `CKU_CONTEXT_SPECIFIC` re-authentication, §4.9
//! `CKA_ALWAYS_AUTHENTICATE`). The PIN itself is checked by `pin`.

use super::state::Token;
use crate::error::{Result, err};
use crate::storage::seal::TokenKey;
use cryptoki_sys::*;
use std::sync::Arc;
use std::sync::atomic::Ordering;

impl Token {
    /// Who is logged in (in this process).
    pub fn logged_in(&self) -> Option<CK_USER_TYPE> {
        self.login.read().user
    }

    /// True if the normal user is logged in.
    pub fn user_logged_in(&self) -> bool {
        self.logged_in() == Some(CKU_USER)
    }

    /// The unwrapped token key, while someone is logged in.
    pub fn token_key(&self) -> Option<Arc<TokenKey>> {
        self.login.read().key.clone()
    }

    /// `C_Login` for the SO or the user (§5.6). `ro_sessions` is the number
    /// of read-only sessions open on this token.
    pub fn login(&self, user: CK_USER_TYPE, pin: &[u8]) -> Result<()> {
        if user != CKU_SO && user != CKU_USER {
            return Err(err(CKR_USER_TYPE_INVALID));
        }
        let check = |current: Option<CK_USER_TYPE>| match current {
            Some(u) if u == user => Err(err(CKR_USER_ALREADY_LOGGED_IN)),
            Some(_) => Err(err(CKR_USER_ANOTHER_ALREADY_LOGGED_IN)),
            None => Ok(()),
        };
        check(self.logged_in())?;
        // One PIN check at a time; threads that waited for another's login
        // find it done and answer CKR_USER_ALREADY_LOGGED_IN at once.
        let _checking = self.pin_checks.lock();
        check(self.logged_in())?;
        if user == CKU_SO
            && self.sessions.load(Ordering::SeqCst) > self.rw_sessions.load(Ordering::SeqCst)
        {
            return Err(err(CKR_SESSION_READ_ONLY_EXISTS));
        }
        self.refresh()?;
        let key = self.verify_pin_checking(user, pin)?;
        let mut login = self.login.write();
        check(login.user)?;
        // The last session may have closed during the PIN check: its close
        // logged nobody out (nobody was in yet), so logging in now would
        // leave the token logged in with no session (§5.6). Closing
        // decrements the count before it takes this lock to log out.
        if self.sessions.load(Ordering::SeqCst) == 0 {
            return Err(err(CKR_SESSION_CLOSED));
        }
        login.user = Some(user);
        login.key = Some(Arc::new(key));
        Ok(())
    }

    /// Checks the user's PIN again (`CKU_CONTEXT_SPECIFIC`).
    pub fn reauthenticate(&self, pin: &[u8]) -> Result<()> {
        if !self.user_logged_in() {
            return Err(err(CKR_USER_NOT_LOGGED_IN));
        }
        self.verify_pin(CKU_USER, pin).map(drop)
    }

    /// `C_Logout`: forgets the token key and every cached key, and destroys
    /// private session objects (§5.6).
    pub fn logout(&self) -> Result<()> {
        let mut login = self.login.write();
        if login.user.is_none() {
            return Err(err(CKR_USER_NOT_LOGGED_IN));
        }
        login.user = None;
        login.key = None;
        drop(login);
        for o in self.objects.read().by_handle.values() {
            o.forget_key();
        }
        self.iv_counters.forget_parsed_keys();
        // The blocks of the key and of every parsed key are zeroed as they
        // are freed (`ffi::alloc`); what sealing and unsealing left on this
        // thread's stack was wiped as each call returned (`crate::hygiene`).
        self.drop_session_objects(None, true);
        Ok(())
    }

    /// Logs out without error if nobody is logged in (last session closed).
    pub fn logout_quietly(&self) {
        let _ = self.logout();
    }
}
