//! A failed operation (found outside the timed region) and the turning of a
//! `CK_RV` (and an output length) into a result.

use cryptoki_sys::CK_RV;

use crate::token::ckr::ckr_name;
use crate::token::entries::{Broken, broken};
use crate::token::raw::RawModule;

/// A failed operation, found outside the timed region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A PKCS#11 call returned this code.
    Rv(CK_RV),
    /// The call succeeded but its result was wrong (e.g. decrypt output differs).
    Check(String),
    /// The token refused the op while preparing in a way that means it does
    /// not offer it (e.g. C_SeedRandom returning CKR_RANDOM_SEED_NOT_SUPPORTED):
    /// the op is reported unsupported with this reason.
    Unsupported(String),
    /// The module broke the interface's rules (e.g. returned `CKR_OK`
    /// claiming more output than the buffer holds): what it did, naming the
    /// module and the call.
    Module(String),
}

impl Failure {
    /// Name used in reports: `CKR_*` or `CHECK: <what>`.
    pub fn name(&self) -> String {
        match self {
            Failure::Rv(rv) => ckr_name(*rv),
            Failure::Check(what) => format!("CHECK_FAILED({what})"),
            Failure::Unsupported(why) => format!("UNSUPPORTED({why})"),
            Failure::Module(what) => format!("MODULE_FAULT({what})"),
        }
    }
}

/// The output of a call that returned `rv` and the length `len` into `out`:
/// `out[..len]` on `CKR_OK`. A module that returned `CKR_OK` claiming more
/// than `out` holds (the raw call gives `overlong_rv` for it, base spec §5.2)
/// is a [`Failure::Module`] naming the module, the call, the length claimed
/// and the buffer's size; any other error is [`ck`]'s.
pub fn written<'a>(
    raw: &RawModule,
    rv: CK_RV,
    out: &'a [u8],
    len: usize,
) -> Result<&'a [u8], Failure> {
    if let Some(Broken::Overlong(call)) = broken(rv) {
        return Err(overlong(raw, call, len, out.len(), "bytes of output"));
    }
    ck(rv)?;
    // The raw calls never return CKR_OK with a length over the buffer.
    out.get(..len)
        .ok_or_else(|| overlong(raw, "the call", len, out.len(), "bytes of output"))
}

/// "module M: C_X returned CKR_OK claiming N bytes of output, but the
/// buffer holds B" (`what` names the unit: "bytes of output", "objects").
pub fn overlong(raw: &RawModule, call: &str, claimed: usize, room: usize, what: &str) -> Failure {
    Failure::Module(format!(
        "module {}: {call} returned CKR_OK claiming {claimed} {what}, but the buffer holds {room}",
        raw.name()
    ))
}

/// Turn a return value into a result.
pub fn ck(rv: CK_RV) -> Result<(), Failure> {
    if rv == cryptoki_sys::CKR_OK {
        Ok(())
    } else {
        Err(Failure::Rv(rv))
    }
}
