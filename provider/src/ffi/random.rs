//! Random number generation (base spec §5.17).

use super::util::{bytes, guard_hot};
use crate::api::{crypto, module};
use crate::error::err;
use cryptoki_sys::*;

/// `C_SeedRandom` (base spec §5.17): the seed is mixed into the generator
/// (never used in place of the OS entropy; see `mechanisms::random`).
///
/// # Safety
/// `pSeed` valid for `ulSeedLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SeedRandom(
    hSession: CK_SESSION_HANDLE,
    pSeed: *mut CK_BYTE,
    ulSeedLen: CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with(|m| {
            m.session(hSession)?;
            // SAFETY: forwarded caller guarantee.
            let seed = unsafe { bytes(pSeed, ulSeedLen)? };
            crate::mechanisms::random::mix_seed(seed);
            Ok(())
        })
    })
}

/// `C_GenerateRandom`.
///
/// # Safety
/// `RandomData` valid for `ulRandomLen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GenerateRandom(
    hSession: CK_SESSION_HANDLE,
    RandomData: *mut CK_BYTE,
    ulRandomLen: CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            if ulRandomLen == 0 {
                return Ok(());
            }
            if RandomData.is_null() || ulRandomLen as u128 > isize::MAX as u128 {
                return Err(err(CKR_ARGUMENTS_BAD));
            }
            // SAFETY: non-null; caller guarantees ulRandomLen writable bytes.
            let buf = unsafe { std::slice::from_raw_parts_mut(RandomData, ulRandomLen as usize) };
            crypto::generate_random(s, buf)
        })
    })
}
