//! Reading `CK_MECHANISM` and its parameter structures (§5.2 `CK_MECHANISM`;
//! mechanisms spec for each parameter struct).

use super::util::bytes;
use crate::error::{Result, err};
use crate::mechanisms::{self, Mechanism, Param, ParamKind};
use cryptoki_sys::*;

/// Reads the caller's mechanism. Unknown mechanisms are
/// `CKR_MECHANISM_INVALID`; malformed parameters `CKR_MECHANISM_PARAM_INVALID`.
///
/// # Safety
/// `ptr` null or a valid `CK_MECHANISM` whose parameter is valid for its length.
pub unsafe fn read<'a>(ptr: *const CK_MECHANISM) -> Result<Mechanism<'a>> {
    // SAFETY: caller guarantees validity when non-null.
    let m = unsafe { ptr.as_ref() }.ok_or(err(CKR_ARGUMENTS_BAD))?;
    let descriptor = mechanisms::lookup(m.mechanism)?;
    let absent = m.pParameter.is_null() || m.ulParameterLen == 0;
    let param = match descriptor.param {
        ParamKind::None if absent => Param::None,
        ParamKind::None => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
        ParamKind::EdDsa if absent => Param::None,
        ParamKind::EdDsa => {
            // SAFETY: checked length, caller guarantees validity.
            let p: &CK_EDDSA_PARAMS = unsafe { param_struct(m)? };
            let context = if p.ulContextDataLen == 0 {
                None
            } else {
                // SAFETY: caller guarantees pContextData holds ulContextDataLen bytes.
                Some(
                    unsafe { bytes(p.pContextData, p.ulContextDataLen) }
                        .map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?,
                )
            };
            Param::EdDsa {
                prehash: p.phFlag != 0,
                context,
            }
        }
    };
    Ok(Mechanism {
        ty: m.mechanism,
        param,
    })
}

/// The parameter as a `T`, if its length is exactly `size_of::<T>()`.
///
/// # Safety
/// `m.pParameter` must be valid for `m.ulParameterLen` bytes.
unsafe fn param_struct<'a, T>(m: &CK_MECHANISM) -> Result<&'a T> {
    if m.ulParameterLen as usize != std::mem::size_of::<T>() || m.pParameter.is_null() {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    if !(m.pParameter as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    // SAFETY: non-null, aligned, and exactly one `T` long per the caller.
    Ok(unsafe { &*(m.pParameter as *const T) })
}
