//! Raw PKCS#11 function list of a loaded module, used for the timed calls.
//!
//! cryptoki's high-level calls make several FFI calls per operation (a size query,
//! an allocation, then the real call). The benchmark must time exactly the calls
//! of one operation, so the timed paths go through the module's own
//! `CK_FUNCTION_LIST` (from `C_GetFunctionList`), wrapped here in small safe
//! methods. Everything that needs `unsafe` for raw PKCS#11 access lives in this
//! file: parameters are owned by [`Mech`] and [`Template`], whose pointers stay
//! valid for as long as the value lives.

use std::ffi::c_void;
use std::path::Path;
use std::ptr;

use cryptoki_sys::*;

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
        let Some(f) = self.list.C_SignInit else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: `m.raw` and its parameter pointer are valid (see `Mech`).
        unsafe { f(s, &mut m.raw, key) }
    }

    /// `C_Sign` into `out`; returns the return value and the output length.
    #[inline]
    pub fn sign(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        let Some(f) = self.list.C_Sign else {
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

    /// `C_VerifyInit`.
    #[inline]
    pub fn verify_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech, key: CK_OBJECT_HANDLE) -> CK_RV {
        let Some(f) = self.list.C_VerifyInit else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: `m.raw` and its parameter pointer are valid (see `Mech`).
        unsafe { f(s, &mut m.raw, key) }
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
        let Some(f) = self.list.C_EncryptInit else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: `m.raw` and its parameter pointer are valid (see `Mech`).
        unsafe { f(s, &mut m.raw, key) }
    }

    /// `C_Encrypt` into `out`.
    #[inline]
    pub fn encrypt(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        let Some(f) = self.list.C_Encrypt else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0);
        };
        let mut len = out.len() as CK_ULONG;
        // SAFETY: data is read only; at most `len` bytes are written to `out`.
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

    /// `C_DecryptInit`.
    #[inline]
    pub fn decrypt_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech, key: CK_OBJECT_HANDLE) -> CK_RV {
        let Some(f) = self.list.C_DecryptInit else {
            return CKR_FUNCTION_NOT_SUPPORTED;
        };
        // SAFETY: `m.raw` and its parameter pointer are valid (see `Mech`).
        unsafe { f(s, &mut m.raw, key) }
    }

    /// `C_Decrypt` into `out`.
    #[inline]
    pub fn decrypt(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        let Some(f) = self.list.C_Decrypt else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0);
        };
        let mut len = out.len() as CK_ULONG;
        // SAFETY: data is read only; at most `len` bytes are written to `out`.
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
        let Some(f) = self.list.C_Digest else {
            return (CKR_FUNCTION_NOT_SUPPORTED, 0);
        };
        let mut len = out.len() as CK_ULONG;
        // SAFETY: data is read only; at most `len` bytes are written to `out`.
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
}

/// Owned mechanism parameters; boxed so that pointers into them stay put when the
/// owning [`Mech`] moves.
enum Param {
    None,
    Gcm(Box<GcmParam>),
    Pss(Box<CK_RSA_PKCS_PSS_PARAMS>),
    Oaep(Box<CK_RSA_PKCS_OAEP_PARAMS>),
    Iv(Box<[u8; 16]>),
    Ctr(Box<CK_AES_CTR_PARAMS>),
    Bytes(Box<[u8]>),
    Ecdh(Box<EcdhParam>),
}

struct EcdhParam {
    params: CK_ECDH1_DERIVE_PARAMS,
    public: Box<[u8]>,
}

struct GcmParam {
    params: CK_GCM_PARAMS,
    iv: [u8; 12],
}

/// A `CK_MECHANISM` together with the parameter structure it points to.
///
/// Invariant: `raw.pParameter` is null or points into `param`, which is heap
/// allocated and owned by this value; it is refreshed after every change.
pub struct Mech {
    raw: CK_MECHANISM,
    param: Param,
}

// SAFETY: the raw pointers in `raw` (and in a GCM parameter) point only to heap data
// owned by this value, never shared; moving the value to another thread moves that
// ownership with it.
unsafe impl Send for Mech {}

impl Mech {
    /// A mechanism without parameter.
    pub fn plain(m: CK_MECHANISM_TYPE) -> Self {
        Mech {
            raw: CK_MECHANISM {
                mechanism: m,
                pParameter: ptr::null_mut(),
                ulParameterLen: 0,
            },
            param: Param::None,
        }
    }

    /// Mechanism `m` whose parameter is the caller's bytes as they are
    /// (`--mech-param-hex` of the generic op); none when `param` is empty.
    pub fn with_bytes(m: CK_MECHANISM_TYPE, param: &[u8]) -> Self {
        let mut mech = Mech {
            raw: CK_MECHANISM {
                mechanism: m,
                pParameter: ptr::null_mut(),
                ulParameterLen: param.len() as CK_ULONG,
            },
            param: Param::Bytes(param.into()),
        };
        mech.refresh();
        mech
    }

    /// `CKM_ECDH1_DERIVE` (also X25519, whose keys are Montgomery keys) with
    /// no KDF and no shared data, against the peer's public value `public`.
    pub fn ecdh(public: &[u8]) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_ECDH1_DERIVE,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_ECDH1_DERIVE_PARAMS>() as CK_ULONG,
            },
            param: Param::Ecdh(Box::new(EcdhParam {
                params: CK_ECDH1_DERIVE_PARAMS {
                    kdf: CKD_NULL,
                    ulSharedDataLen: 0,
                    pSharedData: ptr::null_mut(),
                    ulPublicDataLen: public.len() as CK_ULONG,
                    pPublicData: ptr::null_mut(),
                },
                public: public.into(),
            })),
        };
        m.refresh();
        m
    }

    /// AES-GCM with a 96-bit IV, no AAD and a 128-bit tag.
    pub fn aes_gcm(iv: [u8; 12]) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_AES_GCM,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_GCM_PARAMS>() as CK_ULONG,
            },
            param: Param::Gcm(Box::new(GcmParam {
                params: CK_GCM_PARAMS {
                    pIv: ptr::null_mut(),
                    ulIvLen: 12,
                    ulIvBits: 96,
                    pAAD: ptr::null_mut(),
                    ulAADLen: 0,
                    ulTagBits: 128,
                },
                iv,
            })),
        };
        m.refresh();
        m
    }

    /// The IV of an AES-GCM or AES-CBC mechanism.
    #[cfg(test)]
    pub fn iv(&self) -> Option<&[u8]> {
        match &self.param {
            Param::Gcm(g) => Some(&g.iv),
            Param::Iv(b) => Some(&b[..]),
            Param::Ctr(c) => Some(&c.cb[..]),
            Param::Bytes(b) => Some(&b[..]),
            _ => None,
        }
    }

    /// A mechanism whose parameter is a 16-byte IV (`CKM_AES_CBC`,
    /// `CKM_AES_CBC_PAD`).
    pub fn with_iv16(mech: CK_MECHANISM_TYPE, iv: [u8; 16]) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: mech,
                pParameter: ptr::null_mut(),
                ulParameterLen: 16,
            },
            param: Param::Iv(Box::new(iv)),
        };
        m.refresh();
        m
    }

    /// AES-CTR with the initial counter block `block`, whose last
    /// `counter_bits` bits are the counter.
    pub fn aes_ctr(block: [u8; 16], counter_bits: CK_ULONG) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_AES_CTR,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_AES_CTR_PARAMS>() as CK_ULONG,
            },
            param: Param::Ctr(Box::new(CK_AES_CTR_PARAMS {
                ulCounterBits: counter_bits,
                cb: block,
            })),
        };
        m.refresh();
        m
    }

    /// Replace the IV (GCM: 12 bytes; CBC, CBC-PAD: 16 bytes; CTR: the
    /// 16-byte counter block; a byte parameter of the IV's length, e.g. the
    /// 8-byte IV of DES3-CBC) outside the timed region. An IV of another
    /// length, or a mechanism without IV, is left alone.
    pub fn set_iv(&mut self, iv: &[u8]) {
        match &mut self.param {
            Param::Gcm(g) => {
                if let Ok(v) = iv.try_into() {
                    g.iv = v;
                }
            }
            Param::Iv(b) => {
                if let Ok(v) = iv.try_into() {
                    **b = v;
                }
            }
            Param::Ctr(c) => {
                if let Ok(v) = iv.try_into() {
                    c.cb = v;
                }
            }
            Param::Bytes(b) if b.len() == iv.len() => b.copy_from_slice(iv),
            _ => {}
        }
        self.refresh();
    }

    /// RSA-PSS (`mech` is e.g. CKM_SHA256_RSA_PKCS_PSS) with the given hash, MGF and salt.
    pub fn rsa_pss(
        mech: CK_MECHANISM_TYPE,
        hash: CK_MECHANISM_TYPE,
        mgf: CK_ULONG,
        salt: CK_ULONG,
    ) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: mech,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_RSA_PKCS_PSS_PARAMS>() as CK_ULONG,
            },
            param: Param::Pss(Box::new(CK_RSA_PKCS_PSS_PARAMS {
                hashAlg: hash,
                mgf,
                sLen: salt,
            })),
        };
        m.refresh();
        m
    }

    /// RSA-OAEP with the given hash and MGF, no label.
    pub fn rsa_oaep(hash: CK_MECHANISM_TYPE, mgf: CK_ULONG) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_RSA_PKCS_OAEP,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_RSA_PKCS_OAEP_PARAMS>() as CK_ULONG,
            },
            param: Param::Oaep(Box::new(CK_RSA_PKCS_OAEP_PARAMS {
                hashAlg: hash,
                mgf,
                source: CKZ_DATA_SPECIFIED,
                pSourceData: ptr::null_mut(),
                ulSourceDataLen: 0,
            })),
        };
        m.refresh();
        m
    }

    /// Re-derive the parameter pointers from the owned boxes.
    fn refresh(&mut self) {
        self.raw.pParameter = match &mut self.param {
            Param::None => ptr::null_mut(),
            Param::Gcm(g) => {
                g.params.pIv = g.iv.as_mut_ptr();
                &mut g.params as *mut CK_GCM_PARAMS as *mut c_void
            }
            Param::Pss(p) => &mut **p as *mut CK_RSA_PKCS_PSS_PARAMS as *mut c_void,
            Param::Oaep(p) => &mut **p as *mut CK_RSA_PKCS_OAEP_PARAMS as *mut c_void,
            Param::Iv(b) => b.as_mut_ptr() as *mut c_void,
            Param::Ctr(c) => &mut **c as *mut CK_AES_CTR_PARAMS as *mut c_void,
            Param::Ecdh(e) => {
                e.params.pPublicData = e.public.as_mut_ptr();
                &mut e.params as *mut CK_ECDH1_DERIVE_PARAMS as *mut c_void
            }
            Param::Bytes(b) if b.is_empty() => ptr::null_mut(),
            Param::Bytes(b) => b.as_mut_ptr() as *mut c_void,
        };
    }
}

/// An attribute template owning its values.
///
/// Invariant: every `pValue` points into a boxed slice in `values`, which is never
/// changed after it was added.
#[derive(Default)]
pub struct Template {
    attrs: Vec<CK_ATTRIBUTE>,
    values: Vec<Box<[u8]>>,
}

// SAFETY: the attribute pointers point only to heap data owned by this value and
// never shared.
unsafe impl Send for Template {}

impl Template {
    /// An empty template.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add an attribute with a byte value.
    pub fn bytes(mut self, t: CK_ATTRIBUTE_TYPE, v: &[u8]) -> Self {
        let mut b: Box<[u8]> = v.into();
        let p = if b.is_empty() {
            ptr::null_mut()
        } else {
            b.as_mut_ptr() as *mut c_void
        };
        self.attrs.push(CK_ATTRIBUTE {
            type_: t,
            pValue: p,
            ulValueLen: v.len() as CK_ULONG,
        });
        self.values.push(b);
        self
    }

    /// Add a CK_BBOOL attribute.
    pub fn bool(self, t: CK_ATTRIBUTE_TYPE, v: bool) -> Self {
        self.bytes(t, &[if v { CK_TRUE } else { CK_FALSE }])
    }

    /// Add a CK_ULONG attribute.
    pub fn ulong(self, t: CK_ATTRIBUTE_TYPE, v: CK_ULONG) -> Self {
        self.bytes(t, &v.to_ne_bytes())
    }

    fn as_mut_ptr(&mut self) -> *mut CK_ATTRIBUTE {
        self.attrs.as_mut_ptr()
    }

    fn len(&self) -> CK_ULONG {
        self.attrs.len() as CK_ULONG
    }
}
