//! The operation traits the families implement (one for each kind of
//! operation, both cipher directions in one), the output length they
//! report and the cipher direction. The enums a session holds them in are
//! in `dispatch`.

use crate::error::Result;

/// The length of an output: exact, or only bounded until computed (RSA
/// decryption, padded CBC decryption).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputLen {
    /// Exactly this many bytes.
    Exact(usize),
    /// At most this many bytes.
    AtMost(usize),
}

impl OutputLen {
    /// The bound, exact or not.
    pub fn bound(self) -> usize {
        match self {
            OutputLen::Exact(n) | OutputLen::AtMost(n) => n,
        }
    }
}

/// An encryption or decryption in progress (one trait for both directions).
pub trait CipherOperation {
    /// Output length of a single-part call on `input_len` bytes.
    fn output_len(&self, input_len: usize) -> OutputLen;
    /// Single-part: processes `data` into `out` (`out.len() >= output_len().bound()`).
    fn process(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize>;
    /// Output length of an update on `input_len` more bytes.
    fn update_len(&self, input_len: usize) -> OutputLen;
    /// Multi-part: processes more data (`out.len() >= update_len().bound()`).
    fn update(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize>;
    /// Output length of the final call.
    fn final_len(&self) -> OutputLen;
    /// Multi-part: finishes (`out.len() >= final_len().bound()`).
    fn finish(&mut self, out: &mut [u8]) -> Result<usize>;
}

/// The multi-part half of a [`CipherOperation`] that is single-part only
/// (the RSA ciphers, verification with recovery): no update or final
/// output, and `C_*Update` / `C_*Final` refused with
/// `CKR_FUNCTION_NOT_SUPPORTED` (which ends the operation). Expands to the
/// four methods inside the `impl`.
macro_rules! single_part_cipher {
    () => {
        fn update_len(&self, _input_len: usize) -> $crate::mechanisms::operation::OutputLen {
            $crate::mechanisms::operation::OutputLen::Exact(0)
        }
        /// Single-part only: `CKR_FUNCTION_NOT_SUPPORTED`.
        fn update(&mut self, _data: &[u8], _out: &mut [u8]) -> $crate::error::Result<usize> {
            Err($crate::error::err(
                ::cryptoki_sys::CKR_FUNCTION_NOT_SUPPORTED,
            ))
        }
        fn final_len(&self) -> $crate::mechanisms::operation::OutputLen {
            $crate::mechanisms::operation::OutputLen::Exact(0)
        }
        /// Single-part only: `CKR_FUNCTION_NOT_SUPPORTED`.
        fn finish(&mut self, _out: &mut [u8]) -> $crate::error::Result<usize> {
            Err($crate::error::err(
                ::cryptoki_sys::CKR_FUNCTION_NOT_SUPPORTED,
            ))
        }
    };
}
pub(crate) use single_part_cipher;

/// A signature (or MAC) being computed.
pub trait SignOperation {
    /// Length of the output (exact for every supported mechanism so far).
    fn output_len(&self) -> usize;
    /// Single-part: signs `data` into `out` (`out.len() >= output_len()`).
    /// By default the multi-part calls in a row (the MACs); signatures
    /// with a single-part form of their own override it.
    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        self.update(data)?;
        self.finish(out)
    }
    /// Multi-part: adds data.
    fn update(&mut self, data: &[u8]) -> Result<()>;
    /// Multi-part: writes the signature (`out.len() >= output_len()`).
    fn finish(&mut self, out: &mut [u8]) -> Result<usize>;
}

/// A signature (or MAC) being checked.
pub trait VerifyOperation {
    /// Single-part verification.
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()>;
    /// Multi-part: adds data.
    fn update(&mut self, data: &[u8]) -> Result<()>;
    /// Multi-part: checks the signature.
    fn finish(&mut self, signature: &[u8]) -> Result<()>;
}

/// A message digest being computed.
pub trait DigestOperation {
    /// Digest length.
    fn output_len(&self) -> usize;
    /// Adds data.
    fn update(&mut self, data: &[u8]);
    /// Writes the digest into `out` (`out.len() >= output_len()`) and resets.
    fn finish(&mut self, out: &mut [u8]) -> usize;
}

/// Direction of a cipher operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `C_EncryptInit` (and `C_WrapKey`).
    Encrypt,
    /// `C_DecryptInit` (and `C_UnwrapKey`).
    Decrypt,
}
