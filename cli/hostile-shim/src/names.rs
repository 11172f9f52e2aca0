//! The entries of a 2.40 `CK_FUNCTION_LIST` (PKCS#11 base spec §5.2), by
//! name (from `p11-shim-common`): the index every per-function table of the
//! shim uses, and setting an entry to NULL (`null_fn=C_Fn`); and the
//! functions `overlong=C_Fn` accepts.

pub use p11_shim_common::names::{FUNCTIONS, find, index, set_null};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_output_function_is_a_function_of_the_list() {
        for f in OUTPUT_FUNCTIONS {
            assert!(find(f).is_some(), "{f}");
        }
    }
}
