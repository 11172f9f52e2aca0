//! An attribute template that owns its values, for the raw calls of `raw.rs`.

use std::ffi::c_void;
use std::ptr;

use cryptoki_sys::*;

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

    pub(super) fn as_mut_ptr(&mut self) -> *mut CK_ATTRIBUTE {
        self.attrs.as_mut_ptr()
    }

    pub(super) fn len(&self) -> CK_ULONG {
        self.attrs.len() as CK_ULONG
    }
}
