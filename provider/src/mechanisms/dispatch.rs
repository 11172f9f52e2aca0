//! The enums a session holds operations in, which dispatch statically to
//! the families (no allocation to start an operation), and MAC
//! verification over a MAC computation.

use super::material::KeyMaterial;
use super::operation::{CipherOperation, OutputLen, SignOperation, VerifyOperation};
use super::{aes, chacha, cmac, des, dsa, ec, eddsa, hmac, kdf, mldsa, otp, rsa, slhdsa};
use crate::error::{Result, err};
use cryptoki_sys::*;

macro_rules! dispatch_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident($ty:ty)),* $(,)? }) => {
        $(#[$doc])*
        pub enum $name {
            $(
                #[allow(missing_docs)]
                $variant($ty),
            )*
        }
        macro_rules! $name {
            ($self:ident, $op:ident => $e:expr) => {
                match $self { $($name::$variant($op) => $e,)* }
            };
        }
    };
}

dispatch_enum!(
    /// Static dispatch over the families that sign or MAC.
    SignOp {
        EdDsa(eddsa::EdDsaSign),
        Ecdsa(ec::EcdsaSign),
        Dsa(dsa::DsaSign),
        MlDsa(Box<mldsa::MlDsaSign>),
        SlhDsa(Box<slhdsa::SlhDsaSign>),
        Rsa(rsa::RsaSign),
        Hmac(hmac::HmacSign),
        Cmac(cmac::CmacSign),
        DesMac(des::mac::DesMac),
        TlsMac(kdf::tls::TlsMacSign),
        Hotp(otp::HotpSign),
    }
);

impl SignOp {
    /// A copy of this MAC computation in its current state, for
    /// `C_GetOperationState`; `None` for signatures (their state is not
    /// saved: `CKR_STATE_UNSAVEABLE`).
    pub fn try_clone(&self) -> Option<SignOp> {
        match self {
            SignOp::Hmac(h) => Some(SignOp::Hmac(h.clone())),
            SignOp::Cmac(c) => Some(SignOp::Cmac(c.clone())),
            SignOp::DesMac(c) => Some(SignOp::DesMac(c.clone())),
            SignOp::TlsMac(c) => Some(SignOp::TlsMac(c.clone())),
            _ => None,
        }
    }
}

impl VerifyOp {
    /// As [`SignOp::try_clone`], for MAC verification.
    pub fn try_clone(&self) -> Option<VerifyOp> {
        match self {
            VerifyOp::Mac(MacVerify(mac)) => mac.try_clone().map(|m| VerifyOp::Mac(MacVerify(m))),
            _ => None,
        }
    }
}

impl SignOperation for SignOp {
    fn output_len(&self) -> usize {
        SignOp!(self, op => op.output_len())
    }
    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        SignOp!(self, op => op.sign(data, out))
    }
    fn update(&mut self, data: &[u8]) -> Result<()> {
        SignOp!(self, op => op.update(data))
    }
    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        SignOp!(self, op => op.finish(out))
    }
}

dispatch_enum!(
    /// Static dispatch over the families that verify.
    VerifyOp {
        EdDsa(eddsa::EdDsaVerify),
        Ecdsa(ec::EcdsaVerify),
        Dsa(dsa::DsaVerify),
        MlDsa(Box<mldsa::MlDsaVerify>),
        SlhDsa(Box<slhdsa::SlhDsaVerify>),
        Rsa(rsa::RsaVerify),
        Mac(MacVerify),
        Hotp(otp::HotpVerify),
    }
);

impl VerifyOperation for VerifyOp {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        VerifyOp!(self, op => op.verify(data, signature))
    }
    fn update(&mut self, data: &[u8]) -> Result<()> {
        VerifyOp!(self, op => op.update(data))
    }
    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        VerifyOp!(self, op => op.finish(signature))
    }
}

/// MAC verification: compute the MAC and compare in constant time.
pub struct MacVerify(pub(super) SignOp);

impl VerifyOperation for MacVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        let mut mac = [0u8; 64];
        let n = self.0.output_len();
        if signature.len() != n {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        self.0.sign(data, &mut mac[..n])?;
        constant_time_eq(&mac[..n], signature)
    }
    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.0.update(data)
    }
    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        let mut mac = [0u8; 64];
        let n = self.0.output_len();
        if signature.len() != n {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        self.0.finish(&mut mac[..n])?;
        constant_time_eq(&mac[..n], signature)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> Result<()> {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    if a.len() == b.len() && std::hint::black_box(diff) == 0 {
        Ok(())
    } else {
        Err(err(CKR_SIGNATURE_INVALID))
    }
}

dispatch_enum!(
    /// Static dispatch over the families that encrypt or decrypt.
    CipherOp {
        Aes(aes::AesCipher),
        ChaCha(chacha::ChaChaCipher),
        Des(des::cipher::DesCipher),
        Rsa(rsa::RsaCipher),
        RsaRecover(rsa::RsaRecover),
    }
);

impl CipherOp {
    /// A copy of a symmetric encryption or decryption in progress (AES
    /// ECB, CBC, CBC-PAD, CTR; DES and Triple-DES ECB, CBC, CBC-PAD), for
    /// `C_GetOperationState`; `None` for the others (AES-GCM, the key
    /// wraps, RSA), whose state is not saved.
    pub fn try_clone(&self) -> Option<CipherOp> {
        match self {
            CipherOp::Aes(a) => a.try_clone().map(CipherOp::Aes),
            CipherOp::Des(d) => Some(CipherOp::Des(d.clone())),
            _ => None,
        }
    }

    /// True when `other` is the same secret key value as the operation's
    /// (compared in constant time): a restored state continues only under
    /// the key it was saved with.
    pub fn same_key(&self, other: &KeyMaterial) -> bool {
        let ours = match self {
            CipherOp::Aes(a) => a.key(),
            CipherOp::Des(d) => d.key(),
            _ => return false,
        };
        match (ours, other) {
            (KeyMaterial::Aes(a), KeyMaterial::Aes(b)) => {
                constant_time_eq(a.bytes(), b.bytes()).is_ok()
            }
            (KeyMaterial::Des(a), KeyMaterial::Des(b)) => {
                a.key_type() == b.key_type() && constant_time_eq(a.bytes(), b.bytes()).is_ok()
            }
            _ => false,
        }
    }
}

impl CipherOperation for CipherOp {
    fn output_len(&self, input_len: usize) -> OutputLen {
        CipherOp!(self, op => op.output_len(input_len))
    }
    fn process(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        CipherOp!(self, op => op.process(data, out))
    }
    fn update_len(&self, input_len: usize) -> OutputLen {
        CipherOp!(self, op => op.update_len(input_len))
    }
    fn update(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        CipherOp!(self, op => op.update(data, out))
    }
    fn final_len(&self) -> OutputLen {
        CipherOp!(self, op => op.final_len())
    }
    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        CipherOp!(self, op => op.finish(out))
    }
}
