//! Dual-function cryptographic operations (base spec §5.16); the logic is
//! in `api::dual`. An error other than `CKR_BUFFER_TOO_SMALL` ends both
//! operations of the pair, except `CKR_OPERATION_NOT_INITIALIZED` (the
//! pair was not active: the operation that was is left alone).

use super::calls::{Ending, data_in_out};
use super::util::{ending, guard_hot};
use crate::api::crypto::{self, OpKind};
use crate::api::dual::{self, Pair};
use crate::api::session::Session;
use crate::error::Result;
use cryptoki_sys::*;

/// One exported dual-function call: `$name(session, input, inputLen,
/// output, pOutputLen)` continuing the pair `$pair` (`$kinds`).
macro_rules! dual_function {
    ($($(#[$doc:meta])* $name:ident => $pair:ident, [$first:ident, $second:ident];)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// The input valid for its length; the output null or valid for
        /// the length its length pointer holds.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            hSession: CK_SESSION_HANDLE,
            pInput: *mut CK_BYTE,
            ulInputLen: CK_ULONG,
            pOutput: *mut CK_BYTE,
            pulOutputLen: *mut CK_ULONG,
        ) -> CK_RV {
            // SAFETY: forwarded caller guarantees.
            guard_hot(|| unsafe {
                data_in_out(
                    hSession,
                    Both([OpKind::$first, OpKind::$second]),
                    pInput,
                    ulInputLen,
                    pOutput,
                    pulOutputLen,
                    |s, data, buf| dual::update(s, Pair::$pair, data, buf),
                )
            })
        }
    )*};
}

dual_function! {
    /// `C_DigestEncryptUpdate` (§5.16): digests a part of plaintext and encrypts it.
    C_DigestEncryptUpdate => DigestEncrypt, [Encrypt, Digest];
    /// `C_DecryptDigestUpdate` (§5.16): decrypts a part and digests the plaintext.
    C_DecryptDigestUpdate => DecryptDigest, [Decrypt, Digest];
    /// `C_SignEncryptUpdate` (§5.16): signs (MACs) a part of plaintext and encrypts it.
    C_SignEncryptUpdate => SignEncrypt, [Encrypt, Sign];
    /// `C_DecryptVerifyUpdate` (§5.16): decrypts a part and verifies the plaintext.
    C_DecryptVerifyUpdate => DecryptVerify, [Decrypt, Verify];
}

/// The two operations of a pair: a failure other than
/// `CKR_BUFFER_TOO_SMALL` or `CKR_OPERATION_NOT_INITIALIZED` ends both (a
/// panic too, then `CKR_GENERAL_ERROR`).
struct Both([OpKind; 2]);

impl Ending for Both {
    fn run(self, session: &Session, body: impl FnOnce() -> Result<()>) -> Result<()> {
        let keeps = [CKR_BUFFER_TOO_SMALL, CKR_OPERATION_NOT_INITIALIZED];
        let end = || {
            for kind in self.0 {
                crypto::end(session, kind);
            }
        };
        ending(&keeps, end, body)
    }
}
