//! A session: its token, read/write flag, and the operations active in it
//! (at most one of each kind, §5.2 / §6.6 "Sessions").

use super::token::Token;
use crate::mechanisms::digest::DigestOp;
use crate::mechanisms::{CipherOp, SignOp, VerifyOp};
use cryptoki_sys::*;
use parking_lot::Mutex;
use std::sync::Arc;
use zeroize::Zeroizing;

/// An operation plus whether it has gone multi-part.
pub struct Active<T> {
    /// The operation.
    pub op: T,
    /// True after the first `*Update` call: a single-part call may no longer finish it.
    pub multipart: bool,
    /// Output computed by a call that then returned `CKR_BUFFER_TOO_SMALL`
    /// (its exact length was only known after computing it); the next call
    /// returns it.
    pub pending: Option<Zeroizing<Vec<u8>>>,
    /// The key has `CKA_ALWAYS_AUTHENTICATE` and the operation still awaits
    /// its `C_Login(CKU_CONTEXT_SPECIFIC)`: the session's initialisation
    /// number of the operation ([`Operations::next_init`]), so a context
    /// login goes to the operation initialised last.
    pub awaits_login: Option<u64>,
    /// The key's handle (for `C_SetOperationState`'s key checks), if any.
    pub key: Option<CK_OBJECT_HANDLE>,
    /// The mechanism the key was checked for at initialisation (for
    /// `C_SetOperationState`, which checks the key again), if any.
    pub mechanism: Option<CK_MECHANISM_TYPE>,
}

impl<T> Active<T> {
    /// A freshly initialised operation.
    pub fn new(op: T) -> Self {
        Active {
            op,
            multipart: false,
            pending: None,
            awaits_login: None,
            key: None,
            mechanism: None,
        }
    }
}

/// State of a `C_FindObjects` search: the matching handles, and how many
/// were returned already.
pub struct Find {
    /// Matches, ascending handles.
    pub handles: Vec<CK_OBJECT_HANDLE>,
    /// Next index to return.
    pub next: usize,
}

/// The active operations of a session.
#[derive(Default)]
pub struct Operations {
    /// Object search.
    pub find: Option<Find>,
    /// Digest.
    pub digest: Option<Active<DigestOp>>,
    /// Signature or MAC.
    pub sign: Option<Active<SignOp>>,
    /// Verification.
    pub verify: Option<Active<VerifyOp>>,
    /// Encryption.
    pub encrypt: Option<Active<CipherOp>>,
    /// Decryption.
    pub decrypt: Option<Active<CipherOp>>,
    /// Signature with recovery.
    pub sign_recover: Option<Active<SignOp>>,
    /// Verification with recovery.
    pub verify_recover: Option<Active<CipherOp>>,
    /// Message-based encryption (§5.19), independent of `encrypt`.
    pub message_encrypt: Option<super::message::MessageCipher>,
    /// Message-based decryption (§5.20), independent of `decrypt`.
    pub message_decrypt: Option<super::message::MessageCipher>,
    /// Message-based signing (§5.21), independent of `sign`.
    pub message_sign: Option<super::message::MessageSign>,
    /// Message-based verification (§5.22), independent of `verify`.
    pub message_verify: Option<super::message::MessageSign>,
    /// Initialisations of operations awaiting a context login so far.
    inits: u64,
}

impl Operations {
    /// The number of a new initialisation of an operation that awaits its
    /// `C_Login(CKU_CONTEXT_SPECIFIC)`; later ones get larger numbers.
    pub fn next_init(&mut self) -> u64 {
        self.inits += 1;
        self.inits
    }

    /// Ends every operation (logout, token re-initialisation).
    pub fn cancel_all(&mut self) {
        let inits = self.inits;
        *self = Operations::default();
        self.inits = inits;
    }
}

/// An open session.
pub struct Session {
    /// `CK_SESSION_HANDLE`.
    pub handle: CK_SESSION_HANDLE,
    /// The token (and slot) of the session.
    pub token: Arc<Token>,
    /// `CKF_RW_SESSION`.
    pub rw: bool,
    /// Active operations; each session has its own lock.
    pub ops: Mutex<Operations>,
    /// False once `C_CloseSession` (or close-all, finalize) has begun: a
    /// call still running on the session may not leave anything behind.
    pub open: std::sync::atomic::AtomicBool,
}

impl Session {
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
