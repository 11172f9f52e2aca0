//! A failed operation (found outside the timed region) and the turning of a
//! `CK_RV` into a result.

use cryptoki_sys::CK_RV;

use crate::token::ckr::ckr_name;

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
}

impl Failure {
    /// Name used in reports: `CKR_*` or `CHECK: <what>`.
    pub fn name(&self) -> String {
        match self {
            Failure::Rv(rv) => ckr_name(*rv),
            Failure::Check(what) => format!("CHECK_FAILED({what})"),
            Failure::Unsupported(why) => format!("UNSUPPORTED({why})"),
        }
    }
}

/// Turn a return value into a result.
pub fn ck(rv: CK_RV) -> Result<(), Failure> {
    if rv == cryptoki_sys::CKR_OK {
        Ok(())
    } else {
        Err(Failure::Rv(rv))
    }
}
