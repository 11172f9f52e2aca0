//! Names of PKCS#11 return values (`CKR_*`) and mechanisms (`CKM_*`).

use cryptoki::error::{Error, Rv, RvError};
use cryptoki::mechanism::MechanismType;
use cryptoki_sys::{CK_MECHANISM_TYPE, CK_RV};

use crate::token::entries::broken;

/// The `CKR_*` name of a return value, e.g. `CKR_PIN_INCORRECT`; for
/// hsm-bench's own return values (`entries.rs`), what the module did, e.g.
/// "C_Sign is NULL in the module's function list".
pub fn ckr_name(rv: CK_RV) -> String {
    if let Some(b) = broken(rv) {
        return b.to_string();
    }
    match Rv::from(rv) {
        Rv::Ok => "CKR_OK".to_string(),
        Rv::Error(e) => rv_error_name(&e),
    }
}

fn rv_error_name(e: &RvError) -> String {
    match e {
        RvError::VendorDefined(v) => format!("CKR_VENDOR_DEFINED(0x{v:08X})"),
        RvError::UnknownErrorCode(v) => format!("CKR_0x{v:08X}"),
        other => format!("CKR_{}", camel_to_upper_snake(&format!("{other:?}"))),
    }
}

/// "`call` failed: CKR_…", or what the module did for hsm-bench's own
/// return values ("C_Sign is NULL in the module's function list").
pub fn call_failed(call: &str, rv: CK_RV) -> String {
    match broken(rv) {
        Some(b) => b.to_string(),
        None => format!("{call} failed: {}", ckr_name(rv)),
    }
}

/// A short name for a cryptoki error: the `CKR_*` name for PKCS#11 errors,
/// the error's text otherwise.
pub fn cryptoki_error_name(e: &Error) -> String {
    match e {
        Error::Pkcs11(rv, _) => rv_error_name(rv),
        Error::NullFunctionPointer => "NULL in the module's function list".to_string(),
        other => other.to_string(),
    }
}

/// The `CKR_*` code of a cryptoki error, if it is a PKCS#11 error.
pub fn cryptoki_error_is(e: &Error, want: CK_RV) -> bool {
    matches!(e, Error::Pkcs11(rv, _) if rv_error_name(rv) == ckr_name(want))
}

/// `PinIncorrect` -> `PIN_INCORRECT`.
fn camel_to_upper_snake(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// The `CKM_*` name of a mechanism, or its hex value for unknown ones.
pub fn ckm_name(m: CK_MECHANISM_TYPE) -> String {
    match MechanismType::try_from(m) {
        Ok(t) if t.to_string().starts_with("CKM_") => t.to_string(),
        _ => crate::token::mechanism_names::MECHANISMS
            .iter()
            .find(|(_, v)| *v == m)
            .map(|(n, _)| n.to_string())
            .unwrap_or_else(|| format!("CKM_0x{m:08X}")),
    }
}

/// The `CKK_*` name of a key type (`cryptoki`'s table, PKCS#11 3.2 types
/// included), or its hex value for unknown and vendor ones.
pub fn ckk_name(k: cryptoki_sys::CK_KEY_TYPE) -> String {
    cryptoki::object::KeyType::try_from(k)
        .map(|t| t.to_string())
        .ok()
        .filter(|n| n.starts_with("CKK_"))
        .unwrap_or_else(|| format!("CKK_0x{k:X}"))
}

/// The value of the mechanism named `name` (`CKM_AES_XTS`, exact case).
pub fn ckm_value(name: &str) -> Option<CK_MECHANISM_TYPE> {
    crate::token::mechanism_names::MECHANISMS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
}

/// A cryptoki error as a usage error naming its `CKR_*` code.
impl From<cryptoki::error::Error> for crate::error::CliError {
    fn from(e: cryptoki::error::Error) -> Self {
        crate::error::CliError::usage(cryptoki_error_name(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_return_values() {
        assert_eq!(ckr_name(cryptoki_sys::CKR_OK), "CKR_OK");
        assert_eq!(
            ckr_name(cryptoki_sys::CKR_PIN_INCORRECT),
            "CKR_PIN_INCORRECT"
        );
        assert_eq!(
            ckr_name(cryptoki_sys::CKR_SLOT_ID_INVALID),
            "CKR_SLOT_ID_INVALID"
        );
        assert_eq!(
            ckr_name(cryptoki_sys::CKR_MECHANISM_PARAM_INVALID),
            "CKR_MECHANISM_PARAM_INVALID"
        );
        assert_eq!(
            ckr_name(cryptoki_sys::CKR_CRYPTOKI_ALREADY_INITIALIZED),
            "CKR_CRYPTOKI_ALREADY_INITIALIZED"
        );
        assert_eq!(ckr_name(0x0000_0FFF), "CKR_0x00000FFF");
        let null = crate::token::entries::null_rv("C_Sign");
        assert_eq!(
            ckr_name(null),
            "C_Sign is NULL in the module's function list"
        );
        assert_eq!(call_failed("C_Sign", null), ckr_name(null));
        assert_eq!(
            call_failed("C_Sign", cryptoki_sys::CKR_DEVICE_ERROR),
            "C_Sign failed: CKR_DEVICE_ERROR"
        );
        assert_eq!(
            cryptoki_error_name(&Error::NullFunctionPointer),
            "NULL in the module's function list"
        );
    }

    #[test]
    fn names_of_mechanisms() {
        assert_eq!(ckm_name(cryptoki_sys::CKM_EDDSA), "CKM_EDDSA");
        assert_eq!(ckm_name(cryptoki_sys::CKM_AES_GCM), "CKM_AES_GCM");
        assert_eq!(ckm_name(0x8000_1234), "CKM_0x80001234");
        assert_eq!(ckm_name(cryptoki_sys::CKM_AES_XTS), "CKM_AES_XTS");
        assert_eq!(ckm_value("CKM_SHA3_256"), Some(cryptoki_sys::CKM_SHA3_256));
        assert_eq!(ckm_value("CKM_NOPE"), None);
    }
}
