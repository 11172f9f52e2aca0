//! Key encapsulation (PKCS#11 3.2 base spec §5.18 `C_EncapsulateKey` /
//! `C_DecapsulateKey`): the mechanisms that offer `CKF_ENCAPSULATE` /
//! `CKF_DECAPSULATE` and the key each one takes. Today `CKM_ML_KEM`
//! (mechanisms spec 3.2, ML-KEM; no parameter).

use super::material::KeyMaterial;
use super::mlkem::SharedSecret;
use super::params::{Mechanism, Param};
use super::registry::require;
use crate::error::{Result, err};
use cryptoki_sys::*;

/// Checks `mech` for `function` (`CKF_ENCAPSULATE` or `CKF_DECAPSULATE`):
/// known, offering it, without a parameter.
fn check(mech: &Mechanism<'_>, function: CK_FLAGS) -> Result<()> {
    require(mech, function)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    Ok(())
}

/// The ciphertext length `C_EncapsulateKey` writes for `key`.
pub fn ciphertext_len(mech: &Mechanism<'_>, key: &KeyMaterial) -> Result<usize> {
    check(mech, CKF_ENCAPSULATE)?;
    match key {
        KeyMaterial::MlKemPublic(k) => Ok(k.set().ciphertext_len()),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// Encapsulates to the public `key` (ML-KEM.Encaps, FIPS 203 Algorithm
/// 20, m fresh from the RNG): the ciphertext and the shared secret.
pub fn encapsulate(mech: &Mechanism<'_>, key: &KeyMaterial) -> Result<(Vec<u8>, SharedSecret)> {
    check(mech, CKF_ENCAPSULATE)?;
    let KeyMaterial::MlKemPublic(k) = key else {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    };
    k.encapsulate()
}

/// Decapsulates `ciphertext` with the private `key` (ML-KEM.Decaps, FIPS
/// 203 Algorithm 21).
pub fn decapsulate(
    mech: &Mechanism<'_>,
    key: &KeyMaterial,
    ciphertext: &[u8],
) -> Result<SharedSecret> {
    check(mech, CKF_DECAPSULATE)?;
    let KeyMaterial::MlKemPrivate(k) = key else {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    };
    k.decapsulate(ciphertext)
}
