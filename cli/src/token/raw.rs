//! Raw PKCS#11 function list of a loaded module, used for the timed calls.
//!
//! cryptoki's high-level calls make several FFI calls per operation (a size query,
//! an allocation, then the real call). The benchmark must time exactly the calls
//! of one operation, so the timed paths go through the module's own
//! `CK_FUNCTION_LIST` (from `C_GetFunctionList`), wrapped here in small safe
//! methods; the key encapsulation calls through its 3.2 list, when it offers
//! one (`kem.rs`). Everything that needs `unsafe` for raw PKCS#11 access lives in this
//! file, `library.rs` (loading the library, checking its function list) and
//! two neighbours: parameters are owned by [`Mech`] (`mech.rs`) and
//! [`Template`] (`template.rs`), whose pointers stay valid for as long as the
//! value lives.
//!
//! The set-up calls here (slots, mechanisms, attributes, searches) replace
//! cryptoki's where a module's count reaches an allocation: cryptoki
//! allocates whatever the module reports. Bounds: `bounds.rs`.

use std::ffi::c_void;
use std::path::Path;
use std::ptr;

use cryptoki_sys::*;

pub use super::mech::Mech;
pub use super::template::Template;
use crate::token::bounds::{MAX_ATTRIBUTE_LEN, MAX_FOUND, MAX_MECHANISMS, MAX_SLOTS};
use crate::token::ckr::call_failed;
use crate::token::entries::{first_null, null_rv, overlong_rv, too_long_rv};
use crate::token::kem::KemCalls;
use crate::token::library::{self, VerifyBatchFn};
use crate::token::lists;

/// A loaded module's function list (2.40 layout), plus the library handle that
/// keeps the function pointers valid.
///
/// A NULL entry makes a call return [`null_rv`] and an output length over
/// the buffer [`overlong_rv`] (`entries.rs`), which name the call wherever
/// the return value is shown; a length on which hsm-bench would allocate is
/// bounded first (`bounds.rs`).
pub struct RawModule {
    list: CK_FUNCTION_LIST,
    kem: Option<KemCalls>,
    verify_batch: Option<VerifyBatchFn>,
    name: String,
    _lib: libloading::Library,
}

impl std::fmt::Debug for RawModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawModule")
            .field("name", &self.name)
            .field("version", &self.list.version)
            .finish()
    }
}

impl RawModule {
    /// Load `path` (before cryptoki: the dynamic loader then hands cryptoki
    /// the same instance) and copy its function list, after checking what
    /// `C_GetInterface` and `C_GetFunctionList` return (`library.rs`). `name`
    /// is the module's display name, for messages.
    pub fn load(path: &Path, name: &str) -> Result<Self, String> {
        let l = library::open(path)?;
        Ok(RawModule {
            list: l.list,
            kem: l.v3_2.as_ref().map(KemCalls::of),
            verify_batch: l.verify_batch,
            name: name.to_string(),
            _lib: l.lib,
        })
    }

    /// The module's display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// An error naming the first of `calls` whose entry in the function list
    /// is NULL (base spec §5.2: every entry must be set).
    pub fn require(&self, calls: &[&str]) -> Result<(), String> {
        first_null(&self.list, calls)
    }

    /// Whether the module offers the "PKCS 11" 3.2 interface (and with it
    /// `C_EncapsulateKey` / `C_DecapsulateKey`).
    pub fn offers_3_2(&self) -> bool {
        self.kem.is_some()
    }

    /// `C_EncapsulateKey` (`kem.rs`): return value, ciphertext length, new
    /// key. `CKR_FUNCTION_NOT_SUPPORTED` without the 3.2 interface.
    #[inline]
    pub fn encapsulate_key(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        public: CK_OBJECT_HANDLE,
        t: &mut Template,
        out: &mut [u8],
    ) -> (CK_RV, usize, CK_OBJECT_HANDLE) {
        match &self.kem {
            Some(k) => k.encapsulate(s, m, public, t, out),
            None => (CKR_FUNCTION_NOT_SUPPORTED, 0, 0),
        }
    }

    /// `C_DecapsulateKey` (`kem.rs`): return value, new key.
    /// `CKR_FUNCTION_NOT_SUPPORTED` without the 3.2 interface.
    #[inline]
    pub fn decapsulate_key(
        &self,
        s: CK_SESSION_HANDLE,
        m: &mut Mech,
        private: CK_OBJECT_HANDLE,
        t: &mut Template,
        ciphertext: &[u8],
    ) -> (CK_RV, CK_OBJECT_HANDLE) {
        match &self.kem {
            Some(k) => k.decapsulate(s, m, private, t, ciphertext),
            None => (CKR_FUNCTION_NOT_SUPPORTED, 0),
        }
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

    /// `C_GetSlotList`: the slots (with a token present, or all), at most
    /// [`MAX_SLOTS`]; an error names the call.
    pub fn slot_list(&self, token_present: bool) -> Result<Vec<CK_SLOT_ID>, String> {
        let f = self
            .list
            .C_GetSlotList
            .ok_or_else(|| call_failed("", null_rv("C_GetSlotList")))?;
        let present = if token_present { CK_TRUE } else { CK_FALSE };
        lists::fetch("C_GetSlotList", "slots", MAX_SLOTS, |list, n| {
            // SAFETY: `list` is null (a size query) or holds `*n` slots
            // (`lists::fetch`); `n` is a valid CK_ULONG.
            unsafe { f(present, list, n) }
        })
    }

    /// `C_GetTokenInfo` of a slot, as the module wrote it (no field is parsed or
    /// checked here: tokens differ in padding and in `utcTime`).
    pub fn token_info(&self, slot: CK_SLOT_ID) -> Result<CK_TOKEN_INFO, CK_RV> {
        let f = self.list.C_GetTokenInfo.ok_or(null_rv("C_GetTokenInfo"))?;
        // SAFETY: CK_TOKEN_INFO is a C struct of byte arrays, integers and
        // versions, for which all-zero bytes are a valid value.
        let mut info: CK_TOKEN_INFO = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable out structure.
        let rv = unsafe { f(slot, &mut info) };
        if rv == CKR_OK { Ok(info) } else { Err(rv) }
    }

    /// `C_GetMechanismList` of a slot, at most [`MAX_MECHANISMS`]; an error
    /// names the call.
    pub fn mechanism_list(&self, slot: CK_SLOT_ID) -> Result<Vec<CK_MECHANISM_TYPE>, String> {
        let f = self
            .list
            .C_GetMechanismList
            .ok_or_else(|| call_failed("", null_rv("C_GetMechanismList")))?;
        lists::fetch(
            "C_GetMechanismList",
            "mechanisms",
            MAX_MECHANISMS,
            |list, n| {
                // SAFETY: `list` is null (a size query) or holds `*n` mechanisms
                // (`lists::fetch`); `n` is a valid CK_ULONG.
                unsafe { f(slot, list, n) }
            },
        )
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
            .ok_or(null_rv("C_GetMechanismInfo"))?;
        let mut info = CK_MECHANISM_INFO {
            ulMinKeySize: 0,
            ulMaxKeySize: 0,
            flags: 0,
        };
        // SAFETY: `info` is a valid out structure.
        let rv = unsafe { f(slot, m, &mut info) };
        if rv == CKR_OK { Ok(info) } else { Err(rv) }
    }

    /// `C_GetAttributeValue` of one attribute (size query then value); set-up
    /// only. A length over [`MAX_ATTRIBUTE_LEN`] is [`too_long_rv`], a value
    /// claimed longer than the buffer [`overlong_rv`].
    pub fn attribute(
        &self,
        s: CK_SESSION_HANDLE,
        obj: CK_OBJECT_HANDLE,
        t: CK_ATTRIBUTE_TYPE,
    ) -> Result<Vec<u8>, CK_RV> {
        const CALL: &str = "C_GetAttributeValue";
        let f = self.list.C_GetAttributeValue.ok_or(null_rv(CALL))?;
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
        let len = usize::try_from(a.ulValueLen)
            .ok()
            .filter(|&n| n <= MAX_ATTRIBUTE_LEN)
            .ok_or(too_long_rv(CALL))?;
        let mut buf = vec![0u8; len];
        a.pValue = buf.as_mut_ptr() as *mut c_void;
        // SAFETY: pValue points to `ulValueLen` writable bytes owned by `buf`.
        let rv = unsafe { f(s, obj, &mut a, 1) };
        if rv != CKR_OK {
            return Err(rv);
        }
        match usize::try_from(a.ulValueLen) {
            Ok(n) if n <= len => buf.truncate(n),
            _ => return Err(overlong_rv(CALL)),
        }
        Ok(buf)
    }

    /// Every object matching `t` (`C_FindObjectsInit`, `C_FindObjects` in
    /// batches, `C_FindObjectsFinal`), at most [`MAX_FOUND`]; set-up only. An
    /// error names the call.
    pub fn find_all(
        &self,
        s: CK_SESSION_HANDLE,
        t: &mut Template,
    ) -> Result<Vec<CK_OBJECT_HANDLE>, String> {
        let rv = self.find_objects_init(s, t);
        if rv != CKR_OK {
            return Err(call_failed("C_FindObjectsInit", rv));
        }
        let mut found = Vec::new();
        let mut batch = [0 as CK_OBJECT_HANDLE; 64];
        let result = loop {
            let (rv, n) = self.find_objects(s, &mut batch);
            if rv == overlong_rv("C_FindObjects") {
                break Err(format!(
                    "C_FindObjects returned CKR_OK claiming {n} objects, but the buffer holds {}",
                    batch.len()
                ));
            }
            if rv != CKR_OK {
                break Err(call_failed("C_FindObjects", rv));
            }
            if n == 0 {
                break Ok(found);
            }
            if found.len() + n > MAX_FOUND {
                break Err(format!(
                    "C_FindObjects reports more than {MAX_FOUND} objects, more than \
                     hsm-bench accepts"
                ));
            }
            found.extend_from_slice(&batch[..n]);
        };
        let rv = self.find_objects_final(s);
        match result {
            Ok(found) if rv != CKR_OK => Err(format!(
                "{} (after {} objects)",
                call_failed("C_FindObjectsFinal", rv),
                found.len()
            )),
            r => r,
        }
    }

    /// `C_GetSessionInfo` (the cheapest call there is; used to measure harness overhead).
    #[inline]
    pub fn session_info(&self, s: CK_SESSION_HANDLE, out: &mut CK_SESSION_INFO) -> CK_RV {
        let Some(f) = self.list.C_GetSessionInfo else {
            return null_rv("C_GetSessionInfo");
        };
        // SAFETY: `out` is a valid, writable CK_SESSION_INFO.
        unsafe { f(s, out) }
    }

    /// `C_SignInit`.
    #[inline]
    pub fn sign_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech, key: CK_OBJECT_HANDLE) -> CK_RV {
        key_init(self.list.C_SignInit, "C_SignInit", s, m, key)
    }

    /// `C_Sign` into `out`; returns the return value and the output length.
    #[inline]
    pub fn sign(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        single_part(self.list.C_Sign, "C_Sign", s, data, out)
    }

    /// `C_VerifyInit`.
    #[inline]
    pub fn verify_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech, key: CK_OBJECT_HANDLE) -> CK_RV {
        key_init(self.list.C_VerifyInit, "C_VerifyInit", s, m, key)
    }

    /// `C_Verify`.
    #[inline]
    pub fn verify(&self, s: CK_SESSION_HANDLE, data: &[u8], sig: &[u8]) -> CK_RV {
        let Some(f) = self.list.C_Verify else {
            return null_rv("C_Verify");
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
        key_init(self.list.C_EncryptInit, "C_EncryptInit", s, m, key)
    }

    /// `C_Encrypt` into `out`.
    #[inline]
    pub fn encrypt(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        single_part(self.list.C_Encrypt, "C_Encrypt", s, data, out)
    }

    /// `C_DecryptInit`.
    #[inline]
    pub fn decrypt_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech, key: CK_OBJECT_HANDLE) -> CK_RV {
        key_init(self.list.C_DecryptInit, "C_DecryptInit", s, m, key)
    }

    /// `C_Decrypt` into `out`.
    #[inline]
    pub fn decrypt(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        single_part(self.list.C_Decrypt, "C_Decrypt", s, data, out)
    }

    /// `C_DigestInit`.
    #[inline]
    pub fn digest_init(&self, s: CK_SESSION_HANDLE, m: &mut Mech) -> CK_RV {
        let Some(f) = self.list.C_DigestInit else {
            return null_rv("C_DigestInit");
        };
        // SAFETY: `m.raw` is valid (see `Mech`).
        unsafe { f(s, &mut m.raw) }
    }

    /// `C_Digest` into `out`.
    #[inline]
    pub fn digest(&self, s: CK_SESSION_HANDLE, data: &[u8], out: &mut [u8]) -> (CK_RV, usize) {
        single_part(self.list.C_Digest, "C_Digest", s, data, out)
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
        let (init_name, name) = call.names();
        then_single_part(key_init(init, init_name, s, m, key), f, name, s, data, out)
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
        then_single_part(rv, self.list.C_Digest, "C_Digest", s, data, out)
    }

    /// `C_GenerateRandom` filling `out`.
    #[inline]
    pub fn generate_random(&self, s: CK_SESSION_HANDLE, out: &mut [u8]) -> CK_RV {
        let Some(f) = self.list.C_GenerateRandom else {
            return null_rv("C_GenerateRandom");
        };
        // SAFETY: `out` is writable for its length.
        unsafe { f(s, out.as_mut_ptr(), out.len() as CK_ULONG) }
    }

    /// `C_SeedRandom` with `seed`.
    #[inline]
    pub fn seed_random(&self, s: CK_SESSION_HANDLE, seed: &mut [u8]) -> CK_RV {
        let Some(f) = self.list.C_SeedRandom else {
            return null_rv("C_SeedRandom");
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
            return (null_rv("C_GenerateKey"), 0);
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
            return (null_rv("C_GenerateKeyPair"), 0, 0);
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
            return (null_rv("C_CreateObject"), 0);
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
            return null_rv("C_SetAttributeValue");
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
            return (null_rv("C_DeriveKey"), 0);
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
            return (null_rv("C_WrapKey"), 0);
        };
        let mut n = out.len() as CK_ULONG;
        // SAFETY: `out` is valid for `n` bytes; the mechanism pointers are valid.
        let rv = unsafe { f(s, &mut m.raw, wrapping, key, out.as_mut_ptr(), &mut n) };
        checked_len(rv, "C_WrapKey", n, out.len())
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
            return (null_rv("C_UnwrapKey"), 0);
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
            return null_rv("C_DestroyObject");
        };
        // SAFETY: plain values only.
        unsafe { f(s, h) }
    }

    /// `C_FindObjectsInit`.
    #[inline]
    pub fn find_objects_init(&self, s: CK_SESSION_HANDLE, t: &mut Template) -> CK_RV {
        let Some(f) = self.list.C_FindObjectsInit else {
            return null_rv("C_FindObjectsInit");
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
            return (null_rv("C_FindObjects"), 0);
        };
        let mut n: CK_ULONG = 0;
        // SAFETY: `out` is writable for `out.len()` handles.
        let rv = unsafe { f(s, out.as_mut_ptr(), out.len() as CK_ULONG, &mut n) };
        checked_len(rv, "C_FindObjects", n, out.len())
    }

    /// `C_FindObjectsFinal`.
    #[inline]
    pub fn find_objects_final(&self, s: CK_SESSION_HANDLE) -> CK_RV {
        let Some(f) = self.list.C_FindObjectsFinal else {
            return null_rv("C_FindObjectsFinal");
        };
        // SAFETY: plain value only.
        unsafe { f(s) }
    }

    /// `C_GetInfo`, as the module wrote it (nothing parsed or checked; cryptoki's
    /// own call refuses a structure whose reserved `flags` are not 0).
    pub fn library_info(&self) -> Result<CK_INFO, CK_RV> {
        let f = self.list.C_GetInfo.ok_or(null_rv("C_GetInfo"))?;
        // SAFETY: CK_INFO is a C struct of byte arrays, integers and versions,
        // for which all-zero bytes are a valid value.
        let mut info: CK_INFO = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable out structure.
        let rv = unsafe { f(&mut info) };
        if rv == CKR_OK { Ok(info) } else { Err(rv) }
    }

    /// `C_GetSlotInfo` of a slot, as the module wrote it.
    pub fn slot_info(&self, slot: CK_SLOT_ID) -> Result<CK_SLOT_INFO, CK_RV> {
        let f = self.list.C_GetSlotInfo.ok_or(null_rv("C_GetSlotInfo"))?;
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

impl KeyCall {
    /// The names of the `*Init` call and of the single-part call.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            KeyCall::Sign => ("C_SignInit", "C_Sign"),
            KeyCall::Encrypt => ("C_EncryptInit", "C_Encrypt"),
            KeyCall::Decrypt => ("C_DecryptInit", "C_Decrypt"),
        }
    }
}

/// The length a call returned with `rv`, checked against the `room` of its
/// buffer: a module that returns `CKR_OK` claiming more than `room` gets
/// [`overlong_rv`] for `call`, with the length it claimed (so that no caller
/// can slice with it after `CKR_OK`).
#[inline(always)]
fn checked_len(rv: CK_RV, call: &str, len: CK_ULONG, room: usize) -> (CK_RV, usize) {
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    if rv == CKR_OK && len > room {
        (overlong_rv(call), len)
    } else {
        (rv, len)
    }
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
    call: &str,
    s: CK_SESSION_HANDLE,
    m: &mut Mech,
    key: CK_OBJECT_HANDLE,
) -> CK_RV {
    let Some(f) = f else {
        return null_rv(call);
    };
    // SAFETY: `m.raw` and its parameter pointer are valid (see `Mech`).
    unsafe { f(s, &mut m.raw, key) }
}

/// A single-part call (`call` names it) from `data` into `out`; returns the
/// return value and the output length (see [`checked_len`]).
#[inline(always)]
fn single_part(
    f: Option<SinglePartFn>,
    call: &str,
    s: CK_SESSION_HANDLE,
    data: &[u8],
    out: &mut [u8],
) -> (CK_RV, usize) {
    let Some(f) = f else {
        return (null_rv(call), 0);
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
    checked_len(rv, call, len, out.len())
}

/// The single-part call after an `*Init` that returned `init`; an `*Init`
/// that failed is the result (with no output).
#[inline(always)]
fn then_single_part(
    init: CK_RV,
    f: Option<SinglePartFn>,
    call: &str,
    s: CK_SESSION_HANDLE,
    data: &[u8],
    out: &mut [u8],
) -> (CK_RV, usize) {
    if init != CKR_OK {
        return (init, 0);
    }
    single_part(f, call, s, data, out)
}
