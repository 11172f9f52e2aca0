//! The entries of a 2.40 `CK_FUNCTION_LIST` (PKCS#11 base spec §5.2), by
//! name: the index every per-function table of the shim uses, and setting an
//! entry to NULL (`null_fn=C_Fn`).

use cryptoki_sys::CK_FUNCTION_LIST;

macro_rules! functions {
    ($($name:ident),* $(,)?) => {
        /// Every function of the 2.40 list, in the list's order.
        pub const FUNCTIONS: &[&str] = &[$(stringify!($name)),*];

        /// Set the entry `name` of `list` to NULL; false for an unknown name.
        pub fn set_null(list: &mut CK_FUNCTION_LIST, name: &str) -> bool {
            match name {
                $(stringify!($name) => {
                    list.$name = None;
                    true
                })*
                _ => false,
            }
        }
    };
}

functions! {
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
    C_SeedRandom, C_GenerateRandom, C_GetFunctionStatus, C_CancelFunction, C_WaitForSlotEvent,
}

/// Functions that write an output buffer and its length through a
/// `CK_ULONG_PTR` (base spec §5.2, "Conventions for functions returning
/// output in a variable-length buffer"): the ones `overlong=C_Fn` accepts.
pub const OUTPUT_FUNCTIONS: &[&str] = &[
    "C_GetOperationState",
    "C_Encrypt",
    "C_EncryptUpdate",
    "C_EncryptFinal",
    "C_Decrypt",
    "C_DecryptUpdate",
    "C_DecryptFinal",
    "C_Digest",
    "C_DigestFinal",
    "C_Sign",
    "C_SignFinal",
    "C_SignRecover",
    "C_VerifyRecover",
    "C_DigestEncryptUpdate",
    "C_DecryptDigestUpdate",
    "C_SignEncryptUpdate",
    "C_DecryptVerifyUpdate",
    "C_WrapKey",
];

/// The index of `name` in [`FUNCTIONS`].
pub fn find(name: &str) -> Option<usize> {
    FUNCTIONS.iter().position(|f| *f == name)
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The index of `name` in [`FUNCTIONS`], at compile time (a wrong name does
/// not compile).
pub const fn index(name: &str) -> usize {
    let mut i = 0;
    while i < FUNCTIONS.len() {
        if str_eq(FUNCTIONS[i], name) {
            return i;
        }
        i += 1;
    }
    panic!("not a function of CK_FUNCTION_LIST");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_has_an_index_and_can_be_nulled() {
        assert_eq!(FUNCTIONS.len(), 68);
        // SAFETY: a C struct of a version and nullable function pointers; all
        // zero is a valid value (every entry None).
        let mut list: CK_FUNCTION_LIST = unsafe { std::mem::zeroed() };
        for (i, f) in FUNCTIONS.iter().enumerate() {
            assert_eq!(find(f), Some(i));
            assert_eq!(index(f), i);
            assert!(set_null(&mut list, f));
        }
        assert!(!set_null(&mut list, "C_Nope"));
        for f in OUTPUT_FUNCTIONS {
            assert!(find(f).is_some(), "{f}");
        }
    }
}
