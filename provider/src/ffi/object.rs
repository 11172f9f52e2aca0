//! Object management (base spec §5.7).

use super::calls::new_object;
use super::util::{attribute_array, guard, guard_hot, nested_array, out, template};
use crate::api::objects::AttrOut;
use crate::api::{module, objects};
use crate::attributes::{decode_template, is_template_attribute};
use crate::error::{Error, err};
use cryptoki_sys::*;

/// `C_CreateObject`.
///
/// # Safety
/// `pTemplate` valid for `ulCount` attributes; `phObject` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_CreateObject(
    hSession: CK_SESSION_HANDLE,
    pTemplate: *mut CK_ATTRIBUTE,
    ulCount: CK_ULONG,
    phObject: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantees.
            unsafe { new_object(pTemplate, ulCount, phObject, |t| objects::create(s, t)) }
        })
    })
}

/// `C_CopyObject`.
///
/// # Safety
/// `pTemplate` valid for `ulCount` attributes; `phNewObject` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_CopyObject(
    hSession: CK_SESSION_HANDLE,
    hObject: CK_OBJECT_HANDLE,
    pTemplate: *mut CK_ATTRIBUTE,
    ulCount: CK_ULONG,
    phNewObject: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            let copy = |t: &[_]| objects::copy(s, hObject, t);
            // SAFETY: forwarded caller guarantees.
            unsafe { new_object(pTemplate, ulCount, phNewObject, copy) }
        })
    })
}

/// `C_DestroyObject`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DestroyObject(
    hSession: CK_SESSION_HANDLE,
    hObject: CK_OBJECT_HANDLE,
) -> CK_RV {
    guard(|| module::with(|m| objects::destroy(&*m.session(hSession)?, hObject)))
}

/// `C_GetObjectSize`.
///
/// # Safety
/// `pulSize` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetObjectSize(
    hSession: CK_SESSION_HANDLE,
    hObject: CK_OBJECT_HANDLE,
    pulSize: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: caller guarantees a valid pointer if non-null.
            let out = unsafe { out(pulSize)? };
            *out = objects::size(s, hObject)? as CK_ULONG;
            Ok(())
        })
    })
}

/// `C_GetAttributeValue`, exactly as §5.7 orders it: every attribute of
/// the template is processed; unrevealable or unknown attributes get
/// `CK_UNAVAILABLE_INFORMATION`; a null `pValue` asks for the length; a
/// short buffer gets `CK_UNAVAILABLE_INFORMATION` and `CKR_BUFFER_TOO_SMALL`.
/// When several attributes fail, the first failure's code is returned.
///
/// # Safety
/// `pTemplate` valid for `ulCount` attributes, each `pValue` null or valid
/// for `ulValueLen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetAttributeValue(
    hSession: CK_SESSION_HANDLE,
    hObject: CK_OBJECT_HANDLE,
    pTemplate: *mut CK_ATTRIBUTE,
    ulCount: CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee (`ulCount` attributes).
            let attrs = unsafe { attribute_array(pTemplate, ulCount)? };
            let types: Vec<_> = attrs.iter().map(|a| a.type_).collect();
            let answers = objects::get_attributes(s, hObject, &types)?;
            let mut rv = CKR_OK;
            let mut fail = |code| {
                if rv == CKR_OK {
                    rv = code;
                }
            };
            for (a, answer) in attrs.iter_mut().zip(answers) {
                if let AttrOut::Value(v) = &answer
                    && is_template_attribute(a.type_)
                {
                    // SAFETY: forwarded caller guarantee for the nested array.
                    if let Err(code) = unsafe { write_nested(a, v) } {
                        if code != CKR_BUFFER_TOO_SMALL {
                            a.ulValueLen = CK_UNAVAILABLE_INFORMATION;
                        }
                        fail(code);
                    }
                    continue;
                }
                match answer {
                    AttrOut::Sensitive => {
                        a.ulValueLen = CK_UNAVAILABLE_INFORMATION;
                        fail(CKR_ATTRIBUTE_SENSITIVE);
                    }
                    AttrOut::Invalid => {
                        a.ulValueLen = CK_UNAVAILABLE_INFORMATION;
                        fail(CKR_ATTRIBUTE_TYPE_INVALID);
                    }
                    AttrOut::Value(v) if a.pValue.is_null() => a.ulValueLen = v.len() as CK_ULONG,
                    AttrOut::Value(v) if (a.ulValueLen as usize) >= v.len() => {
                        // SAFETY: the caller's buffer holds ulValueLen >= v.len() bytes.
                        unsafe {
                            std::ptr::copy_nonoverlapping(v.as_ptr(), a.pValue as *mut u8, v.len())
                        };
                        a.ulValueLen = v.len() as CK_ULONG;
                    }
                    AttrOut::Value(_) => {
                        a.ulValueLen = CK_UNAVAILABLE_INFORMATION;
                        fail(CKR_BUFFER_TOO_SMALL);
                    }
                }
            }
            if rv == CKR_OK {
                Ok(())
            } else {
                Err(Error::new(rv))
            }
        })
    })
}

/// Writes a nested template (§5.7.5 `C_GetAttributeValue`, array
/// attributes): with `pValue` null, its size in bytes; with room for every
/// entry, each entry's type and, by the same rules one level down, its length
/// (entry `pValue` null) or value. A short outer or inner buffer sets that
/// length to `CK_UNAVAILABLE_INFORMATION` and gives `CKR_BUFFER_TOO_SMALL`.
///
/// # Safety
/// `a.pValue` null or valid for `a.ulValueLen` bytes of `CK_ATTRIBUTE`s,
/// whose `pValue`s are null or valid for their `ulValueLen`.
unsafe fn write_nested(a: &mut CK_ATTRIBUTE, encoded: &[u8]) -> Result<(), CK_RV> {
    let inner = decode_template(encoded).map_err(|e| e.rv())?;
    let need = inner.iter().count() * std::mem::size_of::<CK_ATTRIBUTE>();
    if a.pValue.is_null() {
        a.ulValueLen = need as CK_ULONG;
        return Ok(());
    }
    if (a.ulValueLen as usize) < need {
        a.ulValueLen = CK_UNAVAILABLE_INFORMATION;
        return Err(CKR_BUFFER_TOO_SMALL);
    }
    let limited = CK_ATTRIBUTE {
        ulValueLen: need as CK_ULONG,
        ..*a
    };
    // SAFETY: the caller's array holds at least `need` bytes of entries.
    let entries = unsafe { nested_array(&limited) }.map_err(|e| e.rv())?;
    let mut result = Ok(());
    for (e, (ty, value)) in entries.iter_mut().zip(inner.iter()) {
        let v = value.as_plain().unwrap_or_default();
        e.type_ = *ty;
        if e.pValue.is_null() {
            e.ulValueLen = v.len() as CK_ULONG;
        } else if (e.ulValueLen as usize) >= v.len() {
            // SAFETY: the entry's buffer holds ulValueLen >= v.len() bytes.
            unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), e.pValue as *mut u8, v.len()) };
            e.ulValueLen = v.len() as CK_ULONG;
        } else {
            e.ulValueLen = CK_UNAVAILABLE_INFORMATION;
            result = Err(CKR_BUFFER_TOO_SMALL);
        }
    }
    a.ulValueLen = need as CK_ULONG;
    result
}

/// `C_SetAttributeValue`.
///
/// # Safety
/// `pTemplate` valid for `ulCount` attributes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SetAttributeValue(
    hSession: CK_SESSION_HANDLE,
    hObject: CK_OBJECT_HANDLE,
    pTemplate: *mut CK_ATTRIBUTE,
    ulCount: CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let t = unsafe { template(pTemplate, ulCount)? };
            objects::set_attributes(s, hObject, &t)
        })
    })
}

/// `C_FindObjectsInit`.
///
/// # Safety
/// `pTemplate` valid for `ulCount` attributes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_FindObjectsInit(
    hSession: CK_SESSION_HANDLE,
    pTemplate: *mut CK_ATTRIBUTE,
    ulCount: CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let t = unsafe { template(pTemplate, ulCount)? };
            objects::find_init(s, &t)
        })
    })
}

/// `C_FindObjects`.
///
/// # Safety
/// `phObject` valid for `ulMaxObjectCount` handles; `pulObjectCount` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_FindObjects(
    hSession: CK_SESSION_HANDLE,
    phObject: *mut CK_OBJECT_HANDLE,
    ulMaxObjectCount: CK_ULONG,
    pulObjectCount: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: caller guarantees a valid count pointer if non-null.
            let count = unsafe { out(pulObjectCount)? };
            if phObject.is_null() || ulMaxObjectCount as u128 > isize::MAX as u128 / 8 {
                return Err(err(CKR_ARGUMENTS_BAD));
            }
            // SAFETY: non-null; the caller guarantees room for ulMaxObjectCount handles.
            let buf =
                unsafe { std::slice::from_raw_parts_mut(phObject, ulMaxObjectCount as usize) };
            *count = objects::find_next(s, buf)? as CK_ULONG;
            Ok(())
        })
    })
}

/// `C_FindObjectsFinal`.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_FindObjectsFinal(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard_hot(|| module::with(|m| objects::find_final(&*m.session(hSession)?)))
}
