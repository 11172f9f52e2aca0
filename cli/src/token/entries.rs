//! The entries of a module's 2.40 function list by name (and the two key
//! encapsulation calls of the 3.2 list, `kem.rs`), and the return values
//! hsm-bench gives itself when a module breaks the function-list or
//! output-length rules, so that every report names the call.
//!
//! PKCS#11 base spec §5.2 (`CK_FUNCTION_LIST`): every function MUST have an
//! entry; a function a library does not support points to a stub returning
//! `CKR_FUNCTION_NOT_SUPPORTED`. A NULL entry is therefore the module's fault,
//! reported as "C_Sign is NULL in the module's function list" rather than as
//! `CKR_FUNCTION_NOT_SUPPORTED`. §5.2 "Conventions for functions returning
//! output in a variable-length buffer": on `CKR_OK` `*pulLen` holds the
//! number of bytes written, which cannot exceed the buffer; a module claiming
//! more gets [`overlong_rv`].
//!
//! A length over hsm-bench's own bound (`bounds.rs`) gets [`too_long_rv`].
//!
//! The three kinds are vendor-defined return values in a range hsm-bench
//! reserves for itself (`0x8048_4200..=0x8048_44FF`, "HB"); the low byte is the
//! call's index in [`NAMES`]. A module that returns one of these values
//! itself is reported as if it had broken the rule.

use cryptoki_sys::{CK_FUNCTION_LIST, CK_RV, CKR_VENDOR_DEFINED};

use crate::token::bounds::bound_of;

macro_rules! entries {
    ($($name:ident),* $(,)?; $($v32:ident),* $(,)?) => {
        /// The functions of the 2.40 list, in its order, then the 3.2
        /// functions hsm-bench calls (PKCS#11 3.2 §5.18).
        pub const NAMES: &[&str] = &[$(stringify!($name),)* $(stringify!($v32)),*];

        /// Whether `list`'s entry `name` is NULL (`None` for an unknown name).
        pub fn is_null(list: &CK_FUNCTION_LIST, name: &str) -> Option<bool> {
            match name {
                $(stringify!($name) => Some(list.$name.is_none()),)*
                _ => None,
            }
        }
    };
}

entries! {
    C_Initialize, C_Finalize, C_GetInfo, C_GetFunctionList, C_GetSlotList, C_GetSlotInfo,
    C_GetTokenInfo, C_GetMechanismList, C_GetMechanismInfo, C_InitToken, C_InitPIN, C_SetPIN,
    C_OpenSession, C_CloseSession, C_CloseAllSessions, C_GetSessionInfo, C_GetOperationState,
    C_SetOperationState, C_Login, C_Logout, C_CreateObject, C_CopyObject, C_DestroyObject,
    C_GetObjectSize, C_GetAttributeValue, C_SetAttributeValue, C_FindObjectsInit, C_FindObjects,
    C_FindObjectsFinal, C_EncryptInit, C_Encrypt, C_EncryptUpdate, C_EncryptFinal, C_DecryptInit,
    C_Decrypt, C_DecryptUpdate, C_DecryptFinal, C_DigestInit, C_Digest, C_DigestUpdate,
    C_DigestKey, C_DigestFinal, C_SignInit, C_Sign, C_SignUpdate, C_SignFinal, C_SignRecoverInit,
    C_SignRecover, C_VerifyInit, C_Verify, C_VerifyUpdate, C_VerifyFinal, C_VerifyRecoverInit,
    C_VerifyRecover, C_DigestEncryptUpdate, C_DecryptDigestUpdate, C_SignEncryptUpdate,
    C_DecryptVerifyUpdate, C_GenerateKey, C_GenerateKeyPair, C_WrapKey, C_UnwrapKey, C_DeriveKey,
    C_SeedRandom, C_GenerateRandom, C_GetFunctionStatus, C_CancelFunction, C_WaitForSlotEvent;
    C_EncapsulateKey, C_DecapsulateKey,
}

/// Base of the "entry is NULL" return values.
const NULL_BASE: CK_RV = CKR_VENDOR_DEFINED | 0x0048_4200;
/// Base of the "claimed more output than its buffer" return values.
const OVERLONG_BASE: CK_RV = CKR_VENDOR_DEFINED | 0x0048_4300;
/// Base of the "length over hsm-bench's bound" return values.
const TOO_LONG_BASE: CK_RV = CKR_VENDOR_DEFINED | 0x0048_4400;

/// The index of `name` in [`NAMES`], at compile time (a wrong name does not
/// compile where the result is a constant).
pub const fn index(name: &str) -> usize {
    let mut i = 0;
    'names: while i < NAMES.len() {
        let (a, b) = (NAMES[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut k = 0;
            while k < a.len() {
                if a[k] != b[k] {
                    i += 1;
                    continue 'names;
                }
                k += 1;
            }
            return i;
        }
        i += 1;
    }
    panic!("not a function hsm-bench names");
}

/// The return value of a call whose entry in the function list is NULL.
pub const fn null_rv(name: &str) -> CK_RV {
    NULL_BASE | index(name) as CK_RV
}

/// The return value of a call that returned `CKR_OK` claiming more output
/// than its buffer holds.
pub const fn overlong_rv(name: &str) -> CK_RV {
    OVERLONG_BASE | index(name) as CK_RV
}

/// The return value of a call that reported a length over hsm-bench's bound
/// for it (`bounds::bound_of`).
pub const fn too_long_rv(name: &str) -> CK_RV {
    TOO_LONG_BASE | index(name) as CK_RV
}

/// What one of hsm-bench's own return values means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// The call's entry is NULL.
    Null(&'static str),
    /// The call claimed more output than its buffer holds.
    Overlong(&'static str),
    /// The call reported a length over hsm-bench's bound.
    TooLong(&'static str),
}

/// Decode hsm-bench's own return values; `None` for any other.
pub fn broken(rv: CK_RV) -> Option<Broken> {
    let name = |base: CK_RV| {
        (rv & !0xff == base)
            .then(|| NAMES.get((rv & 0xff) as usize).copied())
            .flatten()
    };
    name(NULL_BASE)
        .map(Broken::Null)
        .or_else(|| name(OVERLONG_BASE).map(Broken::Overlong))
        .or_else(|| name(TOO_LONG_BASE).map(Broken::TooLong))
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::Null(call) => write!(f, "{call} is NULL in the module's function list"),
            Broken::Overlong(call) => write!(
                f,
                "{call} returned CKR_OK claiming more output than the buffer holds"
            ),
            Broken::TooLong(call) => write!(
                f,
                "{call} reports a length over hsm-bench's bound ({})",
                bound_of(call)
            ),
        }
    }
}

/// The first of `calls` whose entry in `list` is NULL, as an error message.
pub fn first_null(list: &CK_FUNCTION_LIST, calls: &[&str]) -> Result<(), String> {
    match calls.iter().find(|c| is_null(list, c) == Some(true)) {
        Some(c) => Err(format!("{c} is NULL in its function list")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_return_values_name_their_call() {
        assert_eq!(NAMES.len(), 70);
        assert_eq!(index("C_DecapsulateKey"), 69);
        for (i, n) in NAMES.iter().enumerate() {
            assert_eq!(index(n), i);
            assert_eq!(broken(null_rv(n)), Some(Broken::Null(n)));
            assert_eq!(broken(overlong_rv(n)), Some(Broken::Overlong(n)));
            assert_eq!(broken(too_long_rv(n)), Some(Broken::TooLong(n)));
        }
        assert_eq!(broken(cryptoki_sys::CKR_FUNCTION_NOT_SUPPORTED), None);
        assert_eq!(broken(CKR_VENDOR_DEFINED), None);
        assert_eq!(broken(NULL_BASE | 0xff), None);
        assert_eq!(
            Broken::Null("C_Sign").to_string(),
            "C_Sign is NULL in the module's function list"
        );
        assert_eq!(
            Broken::TooLong("C_GetAttributeValue").to_string(),
            "C_GetAttributeValue reports a length over hsm-bench's bound (1048576 bytes)"
        );
    }

    #[test]
    fn null_entries_are_found_by_name() {
        // SAFETY: all-zero is a valid CK_FUNCTION_LIST (every entry None).
        let list: CK_FUNCTION_LIST = unsafe { std::mem::zeroed() };
        assert_eq!(is_null(&list, "C_Sign"), Some(true));
        assert_eq!(is_null(&list, "C_Nope"), None);
        // The 3.2 calls are not entries of the 2.40 list.
        assert_eq!(is_null(&list, "C_EncapsulateKey"), None);
        assert_eq!(
            first_null(&list, &["C_Login"]).unwrap_err(),
            "C_Login is NULL in its function list"
        );
        assert_eq!(first_null(&list, &[]), Ok(()));
    }
}
