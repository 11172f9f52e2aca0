//! The operation states a session holds (base spec §5.2: at most one
//! active operation of each kind per session; §5.6 "Session states"): the
//! single- and multi-part operations of §5.8–5.15 (`Active`), a
//! `C_FindObjects` search (§5.7, `Find`), and the message-based operations
//! of §5.19–5.22 (`MessageCipher`, `MessageSign`), which have slots of their
//! own next to `C_EncryptInit`'s. Plain data: the functions that start,
//! continue and end them are in `crypto`, `objects`, `message` and `dual`.

use super::ivcounter::KeyCounter;
use crate::error::{Result, err};
use crate::mechanisms::digest::DigestOp;
use crate::mechanisms::keys::KeyMaterial;
use crate::mechanisms::{CipherOp, Direction, Mechanism, Param, SignOp, VerifyOp};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroizing;

/// An operation plus whether it has gone multi-part.
pub struct Active<T> {
    /// The operation.
    pub op: T,
    /// True after the first `*Update` call: a single-part call may no longer finish it.
    pub multipart: bool,
    /// True once a single-part call (`C_Encrypt`, `C_Digest`, `C_Sign`, …)
    /// has claimed the operation and kept it alive (a size query or
    /// `CKR_BUFFER_TOO_SMALL`): a multi-part call may no longer continue it.
    pub single: bool,
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
            single: false,
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

/// A verification whose signature was given when it began (PKCS#11 3.2
/// `C_VerifySignatureInit`): the mechanism's verification and that
/// signature.
pub struct SignatureCheck {
    /// The verification.
    pub op: VerifyOp,
    /// The signature to check the data against.
    pub signature: Vec<u8>,
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
    /// Verification of a signature given at initialisation (3.2
    /// `C_VerifySignatureInit`); excludes `verify` and is excluded by it.
    pub verify_signature: Option<Active<SignatureCheck>>,
    /// Encryption.
    pub encrypt: Option<Active<CipherOp>>,
    /// Decryption.
    pub decrypt: Option<Active<CipherOp>>,
    /// Signature with recovery.
    pub sign_recover: Option<Active<SignOp>>,
    /// Verification with recovery.
    pub verify_recover: Option<Active<CipherOp>>,
    /// Message-based encryption (§5.19), independent of `encrypt`.
    pub message_encrypt: Option<MessageCipher>,
    /// Message-based decryption (§5.20), independent of `decrypt`.
    pub message_decrypt: Option<MessageCipher>,
    /// Message-based signing (§5.21), independent of `sign`.
    pub message_sign: Option<MessageSign>,
    /// Message-based verification (§5.22), independent of `verify`.
    pub message_verify: Option<MessageSign>,
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

    /// The encryption or decryption operation.
    pub fn cipher(&mut self, direction: Direction) -> &mut Option<Active<CipherOp>> {
        match direction {
            Direction::Encrypt => &mut self.encrypt,
            Direction::Decrypt => &mut self.decrypt,
        }
    }

    /// The message-based encryption or decryption operation.
    pub fn message_cipher(&mut self, direction: Direction) -> &mut Option<MessageCipher> {
        match direction {
            Direction::Encrypt => &mut self.message_encrypt,
            Direction::Decrypt => &mut self.message_decrypt,
        }
    }

    /// The message-based signing (`sign`) or verification operation.
    pub fn message_signer(&mut self, sign: bool) -> &mut Option<MessageSign> {
        if sign {
            &mut self.message_sign
        } else {
            &mut self.message_verify
        }
    }
}

/// A session's [`Operations`] in a heap block of their own, which
/// [`SessionOps::cancel_all`] replaces rather than clears.
///
/// Moving an operation into its slot copies the whole size of the slot's
/// type from the stack, the bytes its variant leaves unused included: stale
/// stack contents, which can hold a key parsed earlier in the same call. A
/// slot set back to `None` keeps those bytes. Replacing the block at logout
/// hands the old one to the allocator, which zeroes it as it frees it
/// (`ffi::alloc`), so no such copy outlives the login (docs/SECURITY.md,
/// "Memory hygiene").
#[derive(Default)]
pub struct SessionOps(Box<Operations>);

impl SessionOps {
    /// Ends every operation (logout, token re-initialisation, a restored
    /// state): a fresh block; the old one goes back zeroed.
    // A new allocation on purpose: writing into the old box would keep its
    // block, and with it the bytes this replacement exists to free.
    #[allow(clippy::replace_box)]
    pub fn cancel_all(&mut self) {
        let inits = self.0.inits;
        self.0 = Box::new(Operations {
            inits,
            ..Operations::default()
        });
    }
}

impl std::ops::Deref for SessionOps {
    type Target = Operations;
    fn deref(&self) -> &Operations {
        &self.0
    }
}

impl std::ops::DerefMut for SessionOps {
    fn deref_mut(&mut self) -> &mut Operations {
        &mut self.0
    }
}

/// A message-based AES-GCM operation: its key, and the IV counter of its
/// key value once a message asked for one.
pub struct MessageCipher {
    /// `CKM_AES_GCM`, `CKM_AES_CCM` or `CKM_CHACHA20_POLY1305`.
    pub(super) mechanism: CK_MECHANISM_TYPE,
    pub(super) key: Arc<KeyMaterial>,
    pub(super) counter: Option<Arc<KeyCounter>>,
    /// The multi-part message in progress (`*MessageBegin` .. the last
    /// `*MessageNext`).
    pub(super) pending: Option<Pending>,
}

/// A multi-part message: what its `Begin` fixed, and the parts so far.
pub(super) struct Pending {
    pub(super) iv: Vec<u8>,
    pub(super) aad: Vec<u8>,
    /// The tag length in bytes (GCM `ulTagBits / 8`, CCM `ulMACLen`).
    pub(super) tag_len: usize,
    /// CCM's `ulDataLen`: the message's length, declared at `Begin`.
    pub(super) data_len: Option<usize>,
    pub(super) data: Zeroizing<Vec<u8>>,
}

/// The mechanism of a message signing/verification, kept owned so each
/// message can start a fresh `SignOp` / `VerifyOp` (§5.21–5.22).
pub struct MessageSign {
    pub(super) key: Arc<KeyMaterial>,
    pub(super) ty: CK_MECHANISM_TYPE,
    pub(super) mac_len: Option<CK_ULONG>,
    pub(super) eddsa: Option<(bool, Option<Vec<u8>>)>,
    /// A `CK_SIGN_ADDITIONAL_CONTEXT` (ML-DSA): hedge variant and context.
    pub(super) sign_context: Option<(CK_HEDGE_TYPE, Vec<u8>)>,
    /// The multi-part message being signed (`C_SignMessageBegin` .. `Next`).
    pub(super) signing: Option<SignOp>,
    /// The multi-part message being verified (`C_VerifyMessageBegin` .. `Next`).
    pub(super) verifying: Option<VerifyOp>,
}

impl MessageSign {
    /// The mechanism of each message: the init's type and parameter.
    pub(super) fn mechanism(&self) -> Mechanism<'_> {
        let param = match (&self.mac_len, &self.eddsa, &self.sign_context) {
            (Some(n), ..) => Param::MacLength(*n),
            (None, Some((prehash, context)), _) => Param::EdDsa {
                prehash: *prehash,
                context: context.as_deref(),
            },
            (None, None, Some((hedge, context))) => Param::SignContext {
                hedge: *hedge,
                context,
            },
            (None, None, None) => Param::None,
        };
        Mechanism { ty: self.ty, param }
    }
}

/// Ends the message-based operation in `slot` (the `*Final` calls);
/// `CKR_OPERATION_NOT_INITIALIZED` if there is none.
pub(super) fn end_operation<T>(slot: &mut Option<T>) -> Result<()> {
    slot.take()
        .map(drop)
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cancel_all` gives the operations a new block (the old one is
    /// freed, so zeroed by the module's allocator) and keeps the count of
    /// initialisations, so a context login still finds the latest.
    #[test]
    fn cancel_all_replaces_the_block_and_keeps_the_init_count() {
        let mut ops = SessionOps::default();
        ops.next_init();
        ops.digest = Some(Active::new(
            crate::mechanisms::digest::DigestOp::new(cryptoki_sys::CKM_SHA256).unwrap(),
        ));
        let before: *const Operations = &*ops;
        ops.cancel_all();
        let after: *const Operations = &*ops;
        assert_ne!(before, after, "the slots were cleared in place");
        assert!(ops.digest.is_none());
        assert_eq!(ops.next_init(), 2);
    }
}
