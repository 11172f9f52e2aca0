//! The entries of a 2.40 `CK_FUNCTION_LIST` (PKCS#11 base spec §5.2), by
//! name, and the position of a name in a list of names: the index the shims'
//! per-function tables use.

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

/// Whether `a` and `b` are the same string (`==` is not `const`).
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

/// The index of the first `name` in `list`; `None` when it is not there.
/// Usable in constants.
pub const fn position(list: &[&str], name: &str) -> Option<usize> {
    let mut i = 0;
    while i < list.len() {
        if str_eq(list[i], name) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The index of `name` in `list`, for a constant: a name not in the list
/// does not compile (and panics at run time).
pub const fn index_in(list: &[&str], name: &str) -> usize {
    match position(list, name) {
        Some(i) => i,
        None => panic!("the name is not in the list"),
    }
}

/// The index of `name` in [`FUNCTIONS`].
pub fn find(name: &str) -> Option<usize> {
    position(FUNCTIONS, name)
}

/// The index of `name` in [`FUNCTIONS`], at compile time (a wrong name does
/// not compile).
pub const fn index(name: &str) -> usize {
    index_in(FUNCTIONS, name)
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
        assert_eq!(find("C_Nope"), None);
    }

    #[test]
    fn positions_in_any_list() {
        const LIST: &[&str] = &["C_Sign", "C_Digest", "C_Sign"];
        const DIGEST: usize = index_in(LIST, "C_Digest");
        assert_eq!(DIGEST, 1);
        assert_eq!(position(LIST, "C_Sign"), Some(0));
        assert_eq!(position(LIST, "C_Sig"), None);
        assert_eq!(position(LIST, "C_SignX"), None);
        assert_eq!(position(&[], "C_Sign"), None);
    }

    #[test]
    #[should_panic(expected = "not in the list")]
    fn an_unknown_name_has_no_index() {
        index_in(&["C_Sign"], std::hint::black_box("C_Nope"));
    }
}
