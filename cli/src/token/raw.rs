//! Raw PKCS#11 function list of a loaded module, used for the timed calls.
//!
//! cryptoki's high-level calls make several FFI calls per operation (a size query,
//! an allocation, then the real call). The benchmark must time exactly the calls
//! of one operation, so the timed paths go through the module's own
//! `CK_FUNCTION_LIST` (from `C_GetFunctionList`), wrapped here in small safe
//! methods. Everything that needs `unsafe` for raw PKCS#11 access lives in this
//! file and its two neighbours: parameters are owned by [`Mech`] (`mech.rs`) and
//! [`Template`] (`template.rs`), whose pointers stay valid for as long as the
//! value lives.

use std::ffi::c_void;
use std::path::Path;
use std::ptr;

use cryptoki_sys::*;

pub use super::mech::Mech;
pub use super::template::Template;

/// A loaded module's function list (2.40 layout), plus the library handle that
/// keeps the function pointers valid.
pub struct RawModule {
    list: CK_FUNCTION_LIST,
    verify_batch: Option<VerifyBatchFn>,
    _lib: libloading::Library,
}

/// `C_DalekVerifyEd25519Batch` of the "Vendor dalek-pkcs11" interface (see the
/// provider's `docs/mechanisms.md`).
pub type VerifyBatchFn = unsafe extern "C" fn(
    CK_SESSION_HANDLE,
    CK_ULONG,
    *const CK_OBJECT_HANDLE,
    *const *const CK_BYTE,
    *const CK_ULONG,
    *const *const CK_BYTE,
) -> CK_RV;

/// Layout of the vendor interface's function list.
#[repr(C)]
struct VendorList {
    version: CK_VERSION,
    verify_batch: Option<VerifyBatchFn>,
}

/// The batch-verify function of a module's vendor interface, if it has one.
fn vendor_verify_batch(lib: &libloading::Library) -> Option<VerifyBatchFn> {
    type GetInterface = unsafe extern "C" fn(
        *mut CK_UTF8CHAR,
        *mut CK_VERSION,
        *mut *mut CK_INTERFACE,
        CK_FLAGS,
    ) -> CK_RV;
    // SAFETY: the symbol, when present, has the PKCS#11 3.0 C_GetInterface signature.
    let get: libloading::Symbol<'_, GetInterface> = unsafe { lib.get(b"C_GetInterface\0") }.ok()?;
    let mut name = *b"Vendor dalek-pkcs11\0";
    let mut iface: *mut CK_INTERFACE = ptr::null_mut();
    // SAFETY: a NUL-terminated name and a valid out-pointer.
    let rv = unsafe { get(name.as_mut_ptr(), ptr::null_mut(), &mut iface, 0) };
    if rv != CKR_OK || iface.is_null() {
        return None;
    }
    // SAFETY: on CKR_OK the module returned its static interface, whose function
    // list has the layout of `VendorList` at version 1.x.
    let list = unsafe { &*((*iface).pFunctionList as *const VendorList) };
    (list.version.major == 1)
        .then_some(list.verify_batch)
        .flatten()
}

impl std::fmt::Debug for RawModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawModule")
            .field("version", &self.list.version)
            .finish()
    }
}

impl RawModule {
    /// Load `path` (the same file cryptoki loaded: the dynamic loader hands out the
    /// same instance) and copy its function list.
    pub fn load(path: &Path) -> Result<Self, String> {
        // SAFETY: loading a PKCS#11 module runs its initialisers; the user chose this
        // module to be benchmarked, and cryptoki has already loaded the same file.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
        let list = {
            // SAFETY: the symbol has the C_GetFunctionList signature defined by PKCS#11.
            let get: libloading::Symbol<
                '_,
                unsafe extern "C" fn(*mut CK_FUNCTION_LIST_PTR) -> CK_RV,
            > = unsafe { lib.get(b"C_GetFunctionList\0") }.map_err(|e| e.to_string())?;
            let mut list_ptr: CK_FUNCTION_LIST_PTR = ptr::null_mut();
            // SAFETY: we pass a valid pointer to a pointer-sized out variable.
            let rv = unsafe { get(&mut list_ptr) };
            if rv != CKR_OK || list_ptr.is_null() {
                return Err(format!(
                    "C_GetFunctionList failed: {}",
                    crate::token::ckr::ckr_name(rv)
                ));
            }
            // SAFETY: on CKR_OK the module returned a pointer to its (static) function
            // list; we copy it, and keep the library loaded as long as the copy lives.
            unsafe { *list_ptr }
        };
        let verify_batch = vendor_verify_batch(&lib);
        Ok(RawModule {
            list,
            verify_batch,
            _lib: lib,
        })
    }

    /// Whether the module offers batch Ed25519 verification.
    pub fn has_verify_batch(&self) -> bool {
        self.verify_batch.is_some()
    }

    /// `C_DalekVerifyEd25519Batch` (CKR_FUNCTION_NOT_SUPPORTED without the
    /// vendor interface).
    pub fn verify_batch(
        &self,
        s: CK_SESSION_HANDLE,
        keys: &[CK_OBJECT_HANDLE],
        data: &[*const u8],
        lens: &[CK_ULONG],
        sigs: &[*const u8],
    ) -> CK_RV {
        let Some(f) = self.verify_batch else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: the four arrays have keys.len() elements (checked by the caller),
        // and the pointers point at live buffers of the stated lengths.
        unsafe {
            f(
                s,
                keys.len() as CK_ULONG,
                keys.as_ptr(),
                data.as_ptr(),
                lens.as_ptr(),
                sigs.as_ptr(),
            )
        }
    }

    /// `C_GetTokenInfo` of a slot, as the module wrote it (no field is parsed or
    /// checked here: tokens differ in padding and in `utcTime`).
    pub fn token_info(&self, slot: CK_SLOT_ID) -> Result<CK_TOKEN_INFO, CK_RV> {
        let f = self.list.C_GetTokenInfo.ok_or(CKR_FUNCTION_NOT_SUPPORTED)?;
        // SAFETY: CK_TOKEN_INFO is a C struct of byte arrays, integers and
        // versions, for which all-zero bytes are a valid value.
        let mut info: CK_TOKEN_INFO = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable out structure.
        let rv = unsafe { f(slot, &mut info) };
        if rv == CKR_OK { Ok(info) } else { Err(rv) }
    }

    /// `C_GetMechanismList` of a slot.
    pub fn mechanism_list(&self, slot: CK_SLOT_ID) -> Result<Vec<CK_MECHANISM_TYPE>, CK_RV> {
        let f = self
            .list
            .C_GetMechanismList
            .ok_or(CKR_FUNCTION_NOT_SUPPORTED)?;
        let mut n: CK_ULONG = 0;
        // SAFETY: a null list pointer asks for the count, written to `n`.
        let rv = unsafe { f(slot, ptr::null_mut(), &mut n) };
        if rv != CKR_OK {
            return Err(rv);
        }
        let mut v = vec![0 as CK_MECHANISM_TYPE; n as usize];
        // SAFETY: `v` holds `n` elements, as the module was told.
        let rv = unsafe { f(slot, v.as_mut_ptr(), &mut n) };
        if rv != CKR_OK {
            return Err(rv);
        }
        v.truncate(n as usize);
        Ok(v)
    }

    /// `C_GetMechanismInfo`.
    pub fn mechanism_info(
        &self,
        slot: CK_SLOT_ID,
        m: CK_MECHANISM_TYPE,
    ) -> Result<CK_MECHANISM_INFO, CK_RV> {
        let f = self
            .list
            .C_GetMechanismInfo
            .ok_or(CKR_FUNCTION_NOT_SUPPORTED)?;
        let mut info = CK_MECHANISM_INFO {
            ulMinKeySize: 0,
            ulMaxKeySize: 0,
            flags: 0,
        };
        // SAFETY: `info` is a valid out structure.
        let rv = unsafe { f(slot, m, &mut info) };
        if rv == CKR_OK { Ok(info) } else { Err(rv) }
    }

    /// `C_GetAttributeValue` of one attribute (size query then value); set-up only.
    pub fn attribute(
        &self,
        s: CK_SESSION_HANDLE,
        obj: CK_OBJECT_HANDLE,
        t: CK_ATTRIBUTE_TYPE,
    ) -> Result<Vec<u8>, CK_RV> {
        let f = self
            .list
            .C_GetAttributeValue
            .ok_or(CKR_FUNCTION_NOT_SUPPORTED)?;
        let mut a = CK_ATTRIBUTE {
            type_: t,
            pValue: ptr::null_mut(),
            ulValueLen: 0,
        };
        // SAFETY: a null pValue asks for the length only.
        let rv = unsafe { f(s, obj, &mut a, 1) };
        if rv != CKR_OK {
            return Err(rv);
        }
        if a.ulValueLen == CK_UNAVAILABLE_INFORMATION {
            return Err(CKR_ATTRIBUTE_TYPE_INVALID);
        }
        let mut buf = vec![0u8; a.ulValueLen as usize];
        a.pValue = buf.as_mut_ptr() as *mut c_void;
        // SAFETY: pValue points to `ulValueLen` writable bytes owned by `buf`.
        let rv = unsafe { f(s, obj, &mut a, 1) };
        if rv != CKR_OK {
            return Err(rv);
        }
        buf.truncate(a.ulValueLen as usize);
        Ok(buf)
    }

    /// `C_GetSessionInfo` (the cheapest call there is; used to measure harness overhead).
    #[inline]
    pub fn session_info(&self, s: CK_SESSION_HANDLE, out: &mut CK_SESSION_INFO) -> CK_RV {
        let Some(f) = self.list.C_GetSessionInfo else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: `out` is a valid, writable CK_SESSION_INFO.
        unsafe { f(s, out) }
    }

    /// `C_SignInit`.
    #[inline]
    pub fn sign_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech, key: CK_OBJECT_HANDLE) -> CK_RV {
        key_init(self.list.C_SignInit, s, m, key)
    }

    /// `C_Sign` into `out`; returns the return value and the output length.
    #[inline]
    pub fn sign(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        single_part(self.list.C_Sign, s, data, out)
    }

    /// `C_VerifyInit`.
    #[inline]
    pub fn verify_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech, key: CK_OBJECT_HANDLE) -> CK_RV {
        key_init(self.list.C_VerifyInit, s, m, key)
    }

    /// `C_Verify`.
    #[inline]
    pub fn verify(&self, s: CK_SESSION_HANDLE, data: &[u8], sig: &[u8]) -> CK_RV {
        let Some(f) = self.list.C_Verify else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: both buffers are valid for reading for their lengths; not written.
        unsafe {
            f(
                s,
                data.as_ptr() as *mut u8,
                data.len() as CK_ULONG,
                sig.as_ptr() as *mut u8,
                sig.len() as CK_ULONG,
            )
        }
    }

    /// `C_EncryptInit`.
    #[inline]
    pub fn encrypt_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech, key: CK_OBJECT_HANDLE) -> CK_RV {
        key_init(self.list.C_EncryptInit, s, m, key)
    }

    /// `C_Encrypt` into `out`.
    #[inline]
    pub fn encrypt(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        single_part(self.list.C_Encrypt, s, data, out)
    }

    /// `C_DecryptInit`.
    #[inline]
    pub fn decrypt_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech, key: CK_OBJECT_HANDLE) -> CK_RV {
        key_init(self.list.C_DecryptInit, s, m, key)
    }

    /// `C_Decrypt` into `out`.
    #[inline]
    pub fn decrypt(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        single_part(self.list.C_Decrypt, s, data, out)
    }

    /// `C_DigestInit`.
    #[inline]
    pub fn digest_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech) -> CK_RV {
        let Some(f) = self.list.C_DigestInit else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: `m.raw` is valid (see `Mech`).
        unsafe { f(s, &mut m.raw) }
    }

    /// `C_Digest` into `out`.
    #[inline]
    pub fn digest(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        single_part(self.list.C_Digest, s, data, out)
    }

    /// `C_SignInit`, `C_EncryptInit` or `C_DecryptInit` (as `call` says)
    /// then, if it succeeded, the single-part call into `out` (one signature
    /// or MAC, one ciphertext, one plaintext); returns the return value and
    /// the output length. `call` is a constant at every call site, so the
    /// choice is made at compile time.
    #[inline]
    pub fn key_single(
        &self,
        call: KeyCall,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        key: CK_OBJECT_HANDLE,
        data: &[u8],
        out: &mut [u8],
    ) -> (CK_RV, usize) {
        let (init, f) = match call {
            KeyCall::Sign => (self.list.C_SignInit, self.list.C_Sign),
            KeyCall::Encrypt => (self.list.C_EncryptInit, self.list.C_Encrypt),
            KeyCall::Decrypt => (self.list.C_DecryptInit, self.list.C_Decrypt),
        };
        then_single_part(key_init(init, s, m, key), f, s, data, out)
    }

    /// `C_DigestInit` then, if it succeeded, `C_Digest` into `out`.
    #[inline]
    pub fn digest_single(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        data: &[u8],
        out: &mut [u8],
    ) -> (CK_RV, usize) {
        let rv = self.digest_init(s, m);
        then_single_part(rv, self.list.C_Digest, s, data, out)
    }

    /// `C_GenerateRandom` filling `out`.
    #[inline]
    pub fn generate_random(&self, s: CK_SESSION_HANDLE, out: &mut [u8]) -> CK_RV {
        let Some(f) = self.list.C_GenerateRandom else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: `out` is writable for its length.
        unsafe { f(s, out.as_mut_ptr(), out.len() as CK_ULONG) }
    }

    /// `C_SeedRandom` with `seed`.
    #[inline]
    pub fn seed_random(&self, s: CK_SESSION_HANDLE, seed: &mut [u8]) -> CK_RV {
        let Some(f) = self.list.C_SeedRandom else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: `seed` is readable for its length (the module only reads it).
        unsafe { f(s, seed.as_mut_ptr(), seed.len() as CK_ULONG) }
    }

    /// `C_GenerateKey`.
    #[inline]
    pub fn generate_key(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        t: &mut Template,
    ) -> (CK_RV, CK_OBJECT_HANDLE) {
        let Some(f) = self.list.C_GenerateKey else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0);
        };
        let mut h: CK_OBJECT_HANDLE = 0;
        // SAFETY: mechanism and template pointers are valid (see `Mech`, `Template`).
        let rv = unsafe { f(s, &mut m.raw, t.as_mut_ptr(), t.len(), &mut h) };
        (rv, h)
    }

    /// `C_GenerateKeyPair`; returns (rv, public, private).
    #[inline]
    pub fn generate_key_pair(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        public: &mut Template,
        private: &mut Template,
    ) -> (CK_RV, CK_OBJECT_HANDLE, CK_OBJECT_HANDLE) {
        let Some(f) = self.list.C_GenerateKeyPair else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0, 0);
        };
        let (mut hp, mut hs): (CK_OBJECT_HANDLE, CK_OBJECT_HANDLE) = (0, 0);
        // SAFETY: mechanism and template pointers are valid (see `Mech`, `Template`).
        let rv = unsafe {
            f(
                s,
                &mut m.raw,
                public.as_mut_ptr(),
                public.len(),
                private.as_mut_ptr(),
                private.len(),
                &mut hp,
                &mut hs,
            )
        };
        (rv, hp, hs)
    }

    /// `C_CreateObject`.
    pub fn create_object(
        &self,
        s: CK_SESSION_HANDLE,
        t: &mut Template,
    ) -> (CK_RV, CK_OBJECT_HANDLE) {
        let Some(f) = self.list.C_CreateObject else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0);
        };
        let mut h: CK_OBJECT_HANDLE = 0;
        // SAFETY: the template pointers are valid (see `Template`).
        let rv = unsafe { f(s, t.as_mut_ptr(), t.len(), &mut h) };
        (rv, h)
    }

    /// `C_SetAttributeValue` of the attributes in `t`; set-up only.
    pub fn set_attributes(
        &self,
        s: CK_SESSION_HANDLE,
        obj: CK_OBJECT_HANDLE,
        t: &mut Template,
    ) -> CK_RV {
        let Some(f) = self.list.C_SetAttributeValue else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: the template pointers are valid (see `Template`).
        unsafe { f(s, obj, t.as_mut_ptr(), t.len()) }
    }

    /// `C_DeriveKey` from `base` with template `t`.
    #[inline]
    pub fn derive_key(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        base: CK_OBJECT_HANDLE,
        t: &mut Template,
    ) -> (CK_RV, CK_OBJECT_HANDLE) {
        let Some(f) = self.list.C_DeriveKey else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0);
        };
        let mut h: CK_OBJECT_HANDLE = 0;
        // SAFETY: mechanism and template pointers are valid (see `Mech`, `Template`).
        let rv = unsafe { f(s, &mut m.raw, base, t.as_mut_ptr(), t.len(), &mut h) };
        (rv, h)
    }

    /// `C_WrapKey` of `key` under `wrapping` into `out`: the return value and
    /// the wrapped length.
    #[inline]
    pub fn wrap_key(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        wrapping: CK_OBJECT_HANDLE,
        key: CK_OBJECT_HANDLE,
        out: &mut [u8],
    ) -> (CK_RV, usize) {
        let Some(f) = self.list.C_WrapKey else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0);
        };
        let mut n = out.len() as CK_ULONG;
        // SAFETY: `out` is valid for `n` bytes; the mechanism pointers are valid.
        let rv = unsafe { f(s, &mut m.raw, wrapping, key, out.as_mut_ptr(), &mut n) };
        (rv, (n as usize).min(out.len()))
    }

    /// `C_UnwrapKey` of `wrapped` under `unwrapping` with template `t`.
    #[inline]
    pub fn unwrap_key(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        unwrapping: CK_OBJECT_HANDLE,
        wrapped: &[u8],
        t: &mut Template,
    ) -> (CK_RV, CK_OBJECT_HANDLE) {
        let Some(f) = self.list.C_UnwrapKey else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0);
        };
        let mut h: CK_OBJECT_HANDLE = 0;
        // SAFETY: `wrapped` is read-only input of its length (the module
        // takes it as non-const by the C signature only); the mechanism and
        // template pointers are valid.
        let rv = unsafe {
            f(
                s,
                &mut m.raw,
                unwrapping,
                wrapped.as_ptr() as *mut u8,
                wrapped.len() as CK_ULONG,
                t.as_mut_ptr(),
                t.len(),
                &mut h,
            )
        };
        (rv, h)
    }

    /// `C_DestroyObject`.
    #[inline]
    pub fn destroy_object(&self, s: CK_SESSION_HANDLE, h: CK_OBJECT_HANDLE) -> CK_RV {
        let Some(f) = self.list.C_DestroyObject else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: plain values only.
        unsafe { f(s, h) }
    }

    /// `C_FindObjectsInit`.
    #[inline]
    pub fn find_objects_init(&self, s: CK_SESSION_HANDLE, t: &mut Template) -> CK_RV {
        let Some(f) = self.list.C_FindObjectsInit else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: the template pointers are valid (see `Template`).
        unsafe { f(s, t.as_mut_ptr(), t.len()) }
    }

    /// `C_FindObjects` into `out`; returns (rv, count).
    #[inline]
    pub fn find_objects(
        &self,
        s: CK_SESSION_HANDLE,
        out: &mut [CK_OBJECT_HANDLE],
    ) -> (CK_RV, usize) {
        let Some(f) = self.list.C_FindObjects else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0);
        };
        let mut n: CK_ULONG = 0;
        // SAFETY: `out` is writable for `out.len()` handles.
        let rv = unsafe { f(s, out.as_mut_ptr(), out.len() as CK_ULONG, &mut n) };
        (rv, n as usize)
    }

    /// `C_FindObjectsFinal`.
    #[inline]
    pub fn find_objects_final(&self, s: CK_SESSION_HANDLE) -> CK_RV {
        let Some(f) = self.list.C_FindObjectsFinal else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: plain value only.
        unsafe { f(s) }
    }

    /// `C_GetInfo`, as the module wrote it (nothing parsed or checked; cryptoki's
    /// own call refuses a structure whose reserved `flags` are not 0).
    pub fn library_info(&self) -> Result<CK_INFO, CK_RV> {
        let f = self.list.C_GetInfo.ok_or(CKR_FUNCTION_NOT_SUPPORTED)?;
        // SAFETY: CK_INFO is a C struct of byte arrays, integers and versions,
        // for which all-zero bytes are a valid value.
        let mut info: CK_INFO = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable out structure.
        let rv = unsafe { f(&mut info) };
        if rv == CKR_OK { Ok(info) } else { Err(rv) }
    }

    /// `C_GetSlotInfo` of a slot, as the module wrote it.
    pub fn slot_info(&self, slot: CK_SLOT_ID) -> Result<CK_SLOT_INFO, CK_RV> {
        let f = self.list.C_GetSlotInfo.ok_or(CKR_FUNCTION_NOT_SUPPORTED)?;
        // SAFETY: CK_SLOT_INFO is a C struct of byte arrays, integers and
        // versions, for which all-zero bytes are a valid value.
        let mut info: CK_SLOT_INFO = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable out structure.
        let rv = unsafe { f(slot, &mut info) };
        if rv == CKR_OK { Ok(info) } else { Err(rv) }
    }
}

/// The `*Init` + single-part pairs of [`RawModule::key_single`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCall {
    /// `C_SignInit` + `C_Sign`.
    Sign,
    /// `C_EncryptInit` + `C_Encrypt`.
    Encrypt,
    /// `C_DecryptInit` + `C_Decrypt`.
    Decrypt,
}

/// The signature `C_SignInit`, `C_VerifyInit`, `C_EncryptInit` and
/// `C_DecryptInit` share.
type KeyInitFn =
    unsafe extern "C" fn(CK_SESSION_HANDLE, *mut CK_MECHANISM, CK_OBJECT_HANDLE) -> CK_RV;

/// The signature `C_Sign`, `C_Encrypt`, `C_Decrypt` and `C_Digest` share.
type SinglePartFn =
    unsafe extern "C" fn(CK_SESSION_HANDLE, *mut u8, CK_ULONG, *mut u8, *mut CK_ULONG) -> CK_RV;

/// An `*Init` call with a mechanism and a key.
#[inline(always)]
fn key_init(
    f: Option<KeyInitFn>,
    s: CK_SESSION_HANDLE,
    m: &mut Mech,
    key: CK_OBJECT_HANDLE,
) -> CK_RV {
    let Some(f) = f else {
        return CKR_FUNCTION_NOT_SUPPORTED;
    };
    // SAFETY: `m.raw` and its parameter pointer are valid (see `Mech`).
    unsafe { f(s, &mut m.raw, key) }
}

/// A single-part call from `data` into `out`; returns the return value and
/// the output length.
#[inline(always)]
fn single_part(
    f: Option<SinglePartFn>,
    s: CK_SESSION_HANDLE,
    data: &[u8],
    out: &mut [u8],
) -> (CK_RV, usize) {
    let Some(f) = f else {
        return (CKR_FUNCTION_NOT_SUPPORTED, 0);
    };
    let mut len = out.len() as CK_ULONG;
    // SAFETY: data and out are valid for their lengths; the module reads `data` only
    // and writes at most `len` bytes to `out`.
    let rv = unsafe {
        f(
            s,
            data.as_ptr() as *mut u8,
            data.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        )
    };
    (rv, len as usize)
}

/// The single-part call after an `*Init` that returned `init`; an `*Init`
/// that failed is the result (with no output).
#[inline(always)]
fn then_single_part(
    init: CK_RV,
    f: Option<SinglePartFn>,
    s: CK_SESSION_HANDLE,
    data: &[u8],
    out: &mut [u8],
) -> (CK_RV, usize) {
    if init != CKR_OK {
        return (init, 0);
    }
    single_part(f, s, data, out)
}
