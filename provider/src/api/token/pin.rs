//! PINs (base spec §5.6 `C_Login` PIN checks, §5.5 `C_InitToken`,
//! `C_InitPIN`, `C_SetPIN`, and the token's `CKF_*_PIN_*` flags): lengths,
//! the persistent failure counter and lockout, and (re-)initialising the
//! token under a new SO PIN.

use super::state::Token;
use crate::error::{Result, err};
use crate::storage::seal::{TokenKey, WrappedKey, hex, random_bytes};
use crate::storage::{self, TokenMeta};
use cryptoki_sys::*;

/// Consecutive wrong PINs after which a PIN is locked.
pub const MAX_PIN_FAILURES: u32 = 10;
/// Shortest PIN accepted.
pub const MIN_PIN_LEN: usize = 4;
/// Longest PIN accepted.
pub const MAX_PIN_LEN: usize = 255;

fn check_pin_len(pin: &[u8]) -> Result<()> {
    if (MIN_PIN_LEN..=MAX_PIN_LEN).contains(&pin.len()) {
        Ok(())
    } else {
        Err(err(CKR_PIN_LEN_RANGE))
    }
}

fn random_hex(n: usize) -> Result<String> {
    let mut b = vec![0u8; n];
    random_bytes(&mut b)?;
    Ok(hex(&b))
}

impl Token {
    /// Changes the token's metadata in one transaction of its store (PIN
    /// failure counters, wrapped PINs); the metadata written.
    fn update_meta(
        &self,
        change: &mut dyn FnMut(&mut TokenMeta) -> Result<()>,
    ) -> Result<TokenMeta> {
        let r = {
            let mut store = self.store();
            store
                .as_mut()
                .ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))
                .and_then(|s| s.update_meta(change))
        };
        self.settle(r)
    }

    /// Checks `pin` for `user` and returns the unwrapped token key, counting
    /// failures in the store (so the count survives restarts and is shared
    /// by processes).
    ///
    /// The try is *reserved* before the key derivation runs: one transaction
    /// refuses a locked PIN and counts this attempt as a failure. Only then is
    /// the PIN evaluated (slowly, with no lock held), and the outcome settled:
    /// a right PIN clears the count, a wrong one leaves it counted, anything
    /// else gives the try back. So at most [`MAX_PIN_FAILURES`] wrong PINs are
    /// ever evaluated between two right ones, whatever the number of threads
    /// or processes trying at once (PKCS#11 3.0 §5.6 `C_Login` and the token's
    /// `CKF_USER_PIN_*` flags); and when the attempt cannot be recorded (full
    /// disk, read-only file) the PIN is not evaluated at all. The threads of
    /// one process check PINs one at a time (`pin_checks`): reserved tries
    /// of right PINs in flight at once would otherwise count as failures
    /// and refuse a right PIN with `CKR_PIN_LOCKED` (100 threads logging in
    /// at once, as cryptoki's `login_feast` test does).
    pub(super) fn verify_pin(&self, user: CK_USER_TYPE, pin: &[u8]) -> Result<TokenKey> {
        let _checking = self.pin_checks.lock();
        self.verify_pin_checking(user, pin)
    }

    /// [`Token::verify_pin`] for a caller that holds `pin_checks`.
    pub(super) fn verify_pin_checking(&self, user: CK_USER_TYPE, pin: &[u8]) -> Result<TokenKey> {
        fn counter(m: &mut TokenMeta, user: CK_USER_TYPE) -> &mut u32 {
            if user == CKU_SO {
                &mut m.so_failures
            } else {
                &mut m.user_failures
            }
        }
        fn wrapped_pin(m: &TokenMeta, user: CK_USER_TYPE) -> Result<&WrappedKey> {
            match user {
                CKU_SO => m.so_pin.as_ref().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED)),
                _ => m.user_pin.as_ref().ok_or(err(CKR_USER_PIN_NOT_INITIALIZED)),
            }
        }
        let slot = usize::from(user != CKU_SO);
        // A write-protected token cannot record tries: they are counted in
        // this process's memory, on top of the stored count.
        let volatile = self.write_protected();
        let settle = |change: &mut dyn FnMut(&mut u32)| -> Result<()> {
            if volatile {
                change(&mut self.volatile_failures.lock()[slot]);
                return Ok(());
            }
            self.update_meta(&mut |m| {
                change(counter(m, user));
                Ok(())
            })
            .map(drop)
        };
        let reserved = {
            let mut store = self.store();
            let s = store.as_mut().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
            if volatile {
                let mut m = s.meta()?;
                wrapped_pin(&m, user)?;
                let mut failures = self.volatile_failures.lock();
                if counter(&mut m, user).saturating_add(failures[slot]) >= MAX_PIN_FAILURES {
                    return Err(err(CKR_PIN_LOCKED));
                }
                failures[slot] += 1;
                m
            } else {
                s.update_meta(&mut |m| {
                    wrapped_pin(m, user)?;
                    let c = counter(m, user);
                    if *c >= MAX_PIN_FAILURES {
                        return Err(err(CKR_PIN_LOCKED));
                    }
                    *c += 1;
                    Ok(())
                })?
            }
        };
        let wrapped = wrapped_pin(&reserved, user)?;
        // The key derivation is slow by design: no lock is held during it.
        let outcome = if check_pin_len(pin).is_ok() {
            wrapped.unwrap(pin)
        } else {
            Err(err(CKR_PIN_INCORRECT))
        };
        match outcome {
            Ok(key) => {
                settle(&mut |c| *c = 0)?;
                Ok(key)
            }
            Err(e) if e.rv() == CKR_PIN_INCORRECT => Err(e),
            Err(e) => {
                // Not a verdict on the PIN (e.g. a damaged wrapped key): the
                // try is given back if that can be recorded.
                let _ = settle(&mut |c| *c = c.saturating_sub(1));
                Err(e)
            }
        }
    }

    /// `C_InitToken` (§5.5): creates the token in a free slot, or erases an
    /// existing one after checking the SO PIN. The caller checked that no
    /// session is open.
    pub fn init_token(&self, so_pin: &[u8], label: &str) -> Result<()> {
        if self.write_protected() {
            return Err(err(CKR_TOKEN_WRITE_PROTECTED));
        }
        check_pin_len(so_pin)?;
        let existing = self.initialized();
        if existing {
            self.verify_pin(CKU_SO, so_pin)?;
        }
        let key = TokenKey::generate()?;
        let so_wrap = key.wrap(so_pin, self.config.pin_kdf_iterations)?;
        let mut store = self.store();
        let meta = TokenMeta {
            label: label.to_string(),
            serial: match store.as_mut() {
                Some(s) => s.meta()?.serial,
                None => random_hex(8)?,
            },
            epoch: random_hex(16)?,
            so_pin: Some(so_wrap),
            user_pin: None,
            so_failures: 0,
            user_failures: 0,
            integrity: Some(random_hex(32)?),
        };
        match store.as_mut() {
            Some(s) => s.reinitialize(&meta)?,
            None => *store = Some(storage::create(&self.config, &meta)?),
        }
        self.note_public_seal(store.as_deref());
        drop(store);
        let mut login = self.login.write();
        login.user = None;
        login.key = None;
        drop(login);
        {
            let mut t = self.objects.write();
            t.take_where(|_| true);
            t.epoch.clear();
        }
        self.refresh()
    }

    /// `C_InitPIN`: the SO sets the user PIN (re-wrapping the token key) and
    /// clears the user's failure count.
    pub fn init_pin(&self, pin: &[u8]) -> Result<()> {
        if self.logged_in() != Some(CKU_SO) {
            return Err(err(CKR_USER_NOT_LOGGED_IN));
        }
        check_pin_len(pin)?;
        let key = self.token_key().ok_or(err(CKR_USER_NOT_LOGGED_IN))?;
        let wrapped = key.wrap(pin, self.config.pin_kdf_iterations)?;
        self.update_meta(&mut |m| {
            m.user_pin = Some(wrapped.clone());
            m.user_failures = 0;
            Ok(())
        })?;
        Ok(())
    }

    /// `C_SetPIN`: changes the SO PIN if the SO is logged in, else the user PIN.
    pub fn set_pin(&self, old: &[u8], new: &[u8]) -> Result<()> {
        let user = if self.logged_in() == Some(CKU_SO) {
            CKU_SO
        } else {
            CKU_USER
        };
        check_pin_len(new)?;
        let key = self.verify_pin(user, old)?;
        let wrapped = key.wrap(new, self.config.pin_kdf_iterations)?;
        self.update_meta(&mut |m| {
            if user == CKU_SO {
                m.so_pin = Some(wrapped.clone());
            } else {
                m.user_pin = Some(wrapped.clone());
            }
            Ok(())
        })?;
        Ok(())
    }
}
