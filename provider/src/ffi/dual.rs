//! Dual-function cryptographic operations (base spec §5.16); the logic is
//! in `api::dual`. An error other than `CKR_BUFFER_TOO_SMALL` ends both
//! operations of the pair, except `CKR_OPERATION_NOT_INITIALIZED` (the
//! pair was not active: the operation that was is left alone).

use super::util::{bytes, finish_output, guard_hot, out_buffer};
use crate::api::crypto::{self, OpKind};
use crate::api::dual::{self, Pair};
use crate::api::module;
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
            guard_hot(|| {
                module::with_session(hSession, |s| {
                    ending_both(s, [OpKind::$first, OpKind::$second], || {
                        // SAFETY: forwarded caller guarantees.
                        let (data, (buf, len)) = unsafe {
                            (bytes(pInput, ulInputLen)?, out_buffer(pOutput, pulOutputLen)?)
                        };
                        finish_output(dual::update(s, Pair::$pair, data, buf), len)
                    })
                })
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

/// Runs `body` (catching a panic); an error other than
/// `CKR_BUFFER_TOO_SMALL` or `CKR_OPERATION_NOT_INITIALIZED` ends both
/// operations of the pair.
fn ending_both(
    session: &Session,
    kinds: [OpKind; 2],
    body: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .unwrap_or_else(|_| Err(crate::error::err(CKR_GENERAL_ERROR)));
    if let Err(e) = &r
        && !matches!(e.rv(), CKR_BUFFER_TOO_SMALL | CKR_OPERATION_NOT_INITIALIZED)
    {
        for kind in kinds {
            crypto::end(session, kind);
        }
    }
    r
}
