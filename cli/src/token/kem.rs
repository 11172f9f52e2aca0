//! The key encapsulation calls of a module's PKCS#11 3.2 function list
//! (base spec 3.2 §5.18 `C_EncapsulateKey`, `C_DecapsulateKey`), taken from
//! the list of its "PKCS 11" 3.2 interface (`library.rs`) and wrapped with
//! the guards of the other raw calls (`raw.rs`): a NULL entry returns
//! [`null_rv`], a ciphertext claimed longer than its buffer after `CKR_OK`
//! [`overlong_rv`] (§5.2, output in a variable-length buffer), both naming
//! the call.

use cryptoki_sys::*;

use crate::token::entries::{null_rv, overlong_rv};
use crate::token::mech::Mech;
use crate::token::template::Template;

/// `C_EncapsulateKey` and `C_DecapsulateKey` of a module's 3.2 list.
#[derive(Clone, Copy)]
pub struct KemCalls {
    encapsulate: CK_C_EncapsulateKey,
    decapsulate: CK_C_DecapsulateKey,
}

impl KemCalls {
    /// The two calls of `list` (either may be NULL; calling it then
    /// returns [`null_rv`]).
    pub fn of(list: &CK_FUNCTION_LIST_3_2) -> Self {
        KemCalls {
            encapsulate: list.C_EncapsulateKey,
            decapsulate: list.C_DecapsulateKey,
        }
    }

    /// `C_EncapsulateKey` with the public key `public`: the new secret key
    /// is made from `t`, the ciphertext written to `out`. Returns the
    /// return value, the ciphertext's length and the new key's handle.
    #[inline]
    pub fn encapsulate(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        public: CK_OBJECT_HANDLE,
        t: &mut Template,
        out: &mut [u8],
    ) -> (CK_RV, usize, CK_OBJECT_HANDLE) {
        const CALL: &str = "C_EncapsulateKey";
        let Some(f) = self.encapsulate else {
            return (null_rv(CALL), 0, 0);
        };
        let mut n = out.len() as CK_ULONG;
        let mut h: CK_OBJECT_HANDLE = 0;
        // SAFETY: the mechanism and template pointers are valid (see `Mech`,
        // `Template`); `out` is writable for `n` bytes; `n` and `h` are
        // valid out variables.
        let rv = unsafe {
            f(
                s,
                &mut m.raw,
                public,
                t.as_mut_ptr(),
                t.len(),
                out.as_mut_ptr(),
                &mut n,
                &mut h,
            )
        };
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if rv == CKR_OK && n > out.len() {
            return (overlong_rv(CALL), n, h);
        }
        (rv, n, h)
    }

    /// `C_DecapsulateKey` of `ciphertext` with the private key `private`:
    /// the new secret key is made from `t`. Returns the return value and
    /// the new key's handle.
    #[inline]
    pub fn decapsulate(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        private: CK_OBJECT_HANDLE,
        t: &mut Template,
        ciphertext: &[u8],
    ) -> (CK_RV, CK_OBJECT_HANDLE) {
        let Some(f) = self.decapsulate else {
            return (null_rv("C_DecapsulateKey"), 0);
        };
        let mut h: CK_OBJECT_HANDLE = 0;
        // SAFETY: `ciphertext` is read-only input of its length (non-const
        // by the C signature only); the mechanism and template pointers are
        // valid; `h` is a valid out variable.
        let rv = unsafe {
            f(
                s,
                &mut m.raw,
                private,
                t.as_mut_ptr(),
                t.len(),
                ciphertext.as_ptr() as *mut u8,
                ciphertext.len() as CK_ULONG,
                &mut h,
            )
        };
        (rv, h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::entries::{Broken, broken};

    /// A `C_EncapsulateKey` that writes 4 bytes and claims 5000.
    unsafe extern "C" fn overlong(
        _: CK_SESSION_HANDLE,
        _: *mut CK_MECHANISM,
        _: CK_OBJECT_HANDLE,
        _: *mut CK_ATTRIBUTE,
        _: CK_ULONG,
        out: *mut CK_BYTE,
        len: *mut CK_ULONG,
        key: *mut CK_OBJECT_HANDLE,
    ) -> CK_RV {
        // SAFETY: the caller passes a buffer of at least 4 bytes and valid
        // out pointers (the test below).
        unsafe {
            std::ptr::write_bytes(out, 7, 4);
            *len = 5000;
            *key = 9;
        }
        CKR_OK
    }

    /// A `C_EncapsulateKey` that writes 4 bytes and says so.
    unsafe extern "C" fn honest(
        _: CK_SESSION_HANDLE,
        _: *mut CK_MECHANISM,
        _: CK_OBJECT_HANDLE,
        _: *mut CK_ATTRIBUTE,
        _: CK_ULONG,
        out: *mut CK_BYTE,
        len: *mut CK_ULONG,
        key: *mut CK_OBJECT_HANDLE,
    ) -> CK_RV {
        // SAFETY: as for `overlong`.
        unsafe {
            std::ptr::write_bytes(out, 7, 4);
            *len = 4;
            *key = 9;
        }
        CKR_OK
    }

    fn calls(f: CK_C_EncapsulateKey) -> KemCalls {
        // SAFETY: all-zero is a valid CK_FUNCTION_LIST_3_2 (every entry None).
        let mut list: CK_FUNCTION_LIST_3_2 = unsafe { std::mem::zeroed() };
        list.C_EncapsulateKey = f;
        KemCalls::of(&list)
    }

    #[test]
    fn null_entries_and_overlong_ciphertexts_name_the_call() {
        let mut m = Mech::plain(CKM_ML_KEM);
        let mut t = Template::new();
        let mut out = [0u8; 16];
        let none = calls(None);
        let (rv, _, _) = none.encapsulate(1, &mut m, 2, &mut t, &mut out);
        assert_eq!(broken(rv), Some(Broken::Null("C_EncapsulateKey")));
        let (rv, _) = none.decapsulate(1, &mut m, 3, &mut t, &[0; 4]);
        assert_eq!(broken(rv), Some(Broken::Null("C_DecapsulateKey")));
        let (rv, n, _) = calls(Some(overlong)).encapsulate(1, &mut m, 2, &mut t, &mut out);
        assert_eq!(
            (broken(rv), n),
            (Some(Broken::Overlong("C_EncapsulateKey")), 5000)
        );
        let (rv, n, h) = calls(Some(honest)).encapsulate(1, &mut m, 2, &mut t, &mut out);
        assert_eq!((rv, n, h), (CKR_OK, 4, 9));
        assert_eq!(out[..5], [7, 7, 7, 7, 0]);
    }
}
