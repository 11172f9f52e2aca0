//! `CKM_DH_PKCS_DERIVE` (mechanisms spec 3.0 §2.5.7): the PKCS #3 shared
//! secret of a private key and the other party's public value.

use super::key::PrivateKey;
use crate::error::{Result, err};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// The shared secret z = y^x mod p as the PKCS #3 octet string of p's
/// length (§8.2; leading zeros kept), then truncated to `len` bytes by
/// removing bytes from its leading end, as §2.5.7 asks. The peer's value
/// `peer` (big-endian, leading zeros allowed) must have no more bits than
/// p and lie in the order-q subgroup (1 < y < p − 1, y^q = 1: SP 800-56A
/// Rev. 3 §5.6.2.3.1, decided by the Legendre symbol (y|p) = 1 as p is a
/// safe prime), else `CKR_MECHANISM_PARAM_INVALID`; the check runs before
/// the private key is used. A `len` above p's length is
/// `CKR_TEMPLATE_INCONSISTENT`.
pub fn derive(key: &PrivateKey, peer: &[u8], len: Option<usize>) -> Result<Zeroizing<Vec<u8>>> {
    let group = key.group();
    let y = group
        .integer(peer)
        .filter(|y| group.in_subgroup(y))
        .ok_or(err(CKR_MECHANISM_PARAM_INVALID))?;
    let z = Zeroizing::new(group.pow_secret(&y, key.x()));
    let z = group.fixed_bytes(&z);
    match len {
        None => Ok(z),
        Some(l) if l > z.len() => Err(err(CKR_TEMPLATE_INCONSISTENT)),
        Some(l) => Ok(Zeroizing::new(z[z.len() - l..].to_vec())),
    }
}
