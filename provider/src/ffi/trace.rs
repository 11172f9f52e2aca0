//! `debug` lines for the calls that start a derivation or a MAC (`C_DeriveKey`,
//! `C_SignInit`): the mechanism number, the return value and, for the
//! TLS 1.2 mechanisms, the public handshake data of the parameter (the client
//! random, the Finished side) — never key bytes. They let a test tie a
//! handshake seen on the wire (the `CLIENT_RANDOM` of a key log) to the
//! token's calls. When `debug` is off a call costs one atomic load.

use crate::log::{self, Level};
use cryptoki_sys::*;
use std::fmt::Write;

/// The longest random printed; TLS randoms are 32 bytes.
const MAX_RANDOM: CK_ULONG = 64;

/// Logs `call` with the caller's mechanism and the call's result.
///
/// # Safety
/// `pMechanism` null or a valid `CK_MECHANISM` whose parameter is valid for
/// its length (the call's own precondition).
pub unsafe fn call(call: &str, pMechanism: *const CK_MECHANISM, rv: CK_RV) {
    if !log::enabled(Level::Debug) {
        return;
    }
    // SAFETY: caller guarantees validity when non-null.
    let Some(m) = (unsafe { pMechanism.as_ref() }) else {
        return log::debug(format_args!("{call} mechanism NULL -> {}", rv_name(rv)));
    };
    // SAFETY: forwarded caller guarantee.
    let detail = unsafe { tls_detail(m) }.unwrap_or_default();
    log::debug(format_args!(
        "{call} mechanism 0x{:x}{detail} -> {}",
        m.mechanism,
        rv_name(rv)
    ));
}

fn rv_name(rv: CK_RV) -> String {
    format!("{} (0x{rv:x})", crate::error::rv_name(rv))
}

/// The public part of a TLS 1.2 mechanism's parameter, or `None`.
///
/// # Safety
/// As [`call`].
unsafe fn tls_detail(m: &CK_MECHANISM) -> Option<String> {
    match m.mechanism {
        CKM_TLS12_MASTER_KEY_DERIVE | CKM_TLS12_MASTER_KEY_DERIVE_DH => {
            // SAFETY: forwarded caller guarantee.
            let p: &CK_TLS12_MASTER_KEY_DERIVE_PARAMS = unsafe { param(m)? };
            // SAFETY: forwarded caller guarantee.
            let random = unsafe { client_random(&p.RandomInfo) };
            Some(format!(
                " prf 0x{:x} client_random {random}",
                p.prfHashMechanism
            ))
        }
        CKM_TLS12_KEY_AND_MAC_DERIVE | CKM_TLS12_KEY_SAFE_DERIVE => {
            // SAFETY: forwarded caller guarantee.
            let p: &CK_TLS12_KEY_MAT_PARAMS = unsafe { param(m)? };
            // SAFETY: forwarded caller guarantee.
            let random = unsafe { client_random(&p.RandomInfo) };
            Some(format!(
                " prf 0x{:x} mac_bits {} key_bits {} iv_bits {} client_random {random}",
                p.prfHashMechanism, p.ulMacSizeInBits, p.ulKeySizeInBits, p.ulIVSizeInBits
            ))
        }
        CKM_TLS_MAC | CKM_TLS12_MAC => {
            // SAFETY: forwarded caller guarantee.
            let p: &CK_TLS_MAC_PARAMS = unsafe { param(m)? };
            let side = match p.ulServerOrClient {
                1 => "server",
                2 => "client",
                _ => "invalid",
            };
            Some(format!(
                " prf 0x{:x} mac_len {} side {side}",
                p.prfHashMechanism, p.ulMacLength
            ))
        }
        _ => None,
    }
}

/// The parameter as a `T` when its length and alignment fit.
///
/// # Safety
/// As [`call`].
unsafe fn param<'a, T>(m: &CK_MECHANISM) -> Option<&'a T> {
    let fits = m.ulParameterLen as usize == std::mem::size_of::<T>()
        && !m.pParameter.is_null()
        && (m.pParameter as usize).is_multiple_of(std::mem::align_of::<T>());
    // SAFETY: non-null, aligned, and exactly one `T` long per the caller.
    fits.then(|| unsafe { &*(m.pParameter as *const T) })
}

/// The client random in hex (public: it goes over the wire in ClientHello).
///
/// # Safety
/// `pClientRandom` null or valid for `ulClientRandomLen` bytes.
unsafe fn client_random(r: &CK_SSL3_RANDOM_DATA) -> String {
    if r.pClientRandom.is_null() || r.ulClientRandomLen == 0 {
        return "none".into();
    }
    if r.ulClientRandomLen > MAX_RANDOM {
        return format!("({} bytes)", r.ulClientRandomLen);
    }
    // SAFETY: non-null and at most MAX_RANDOM bytes, valid per the caller.
    let bytes =
        unsafe { std::slice::from_raw_parts(r.pClientRandom, r.ulClientRandomLen as usize) };
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mechanism<T>(ty: CK_MECHANISM_TYPE, p: &mut T) -> CK_MECHANISM {
        CK_MECHANISM {
            mechanism: ty,
            pParameter: p as *mut T as *mut _,
            ulParameterLen: std::mem::size_of::<T>() as CK_ULONG,
        }
    }

    fn randoms(client: &mut [u8], server: &mut [u8]) -> CK_SSL3_RANDOM_DATA {
        CK_SSL3_RANDOM_DATA {
            pClientRandom: client.as_mut_ptr(),
            ulClientRandomLen: client.len() as CK_ULONG,
            pServerRandom: server.as_mut_ptr(),
            ulServerRandomLen: server.len() as CK_ULONG,
        }
    }

    #[test]
    fn master_derive_shows_the_client_random_only() {
        let (mut cr, mut sr) = ([0xabu8; 32], [0x11u8; 32]);
        let mut p = CK_TLS12_MASTER_KEY_DERIVE_PARAMS {
            RandomInfo: randoms(&mut cr, &mut sr),
            pVersion: std::ptr::null_mut(),
            prfHashMechanism: CKM_SHA256,
        };
        let m = mechanism(CKM_TLS12_MASTER_KEY_DERIVE_DH, &mut p);
        // SAFETY: `m` points at `p`, which points at live randoms.
        let line = unsafe { tls_detail(&m) }.unwrap();
        assert_eq!(
            line,
            format!(" prf 0x250 client_random {}", "ab".repeat(32))
        );
        assert!(!line.contains("11"));
    }

    #[test]
    fn key_and_mac_shows_sizes_and_bounds_the_random() {
        let (mut cr, mut sr) = ([7u8; 65], [0u8; 32]);
        let mut p = CK_TLS12_KEY_MAT_PARAMS {
            ulMacSizeInBits: 0,
            ulKeySizeInBits: 128,
            ulIVSizeInBits: 32,
            bIsExport: 0,
            RandomInfo: randoms(&mut cr, &mut sr),
            pReturnedKeyMaterial: std::ptr::null_mut(),
            prfHashMechanism: CKM_SHA256,
        };
        let m = mechanism(CKM_TLS12_KEY_AND_MAC_DERIVE, &mut p);
        // SAFETY: as above.
        let line = unsafe { tls_detail(&m) }.unwrap();
        assert_eq!(
            line,
            " prf 0x250 mac_bits 0 key_bits 128 iv_bits 32 client_random (65 bytes)"
        );
    }

    #[test]
    fn a_parameter_of_the_wrong_size_is_not_read() {
        let mut p = CK_TLS_MAC_PARAMS {
            prfHashMechanism: CKM_SHA384,
            ulMacLength: 12,
            ulServerOrClient: 2,
        };
        let mut m = mechanism(CKM_TLS_MAC, &mut p);
        // SAFETY: `m` points at `p`.
        assert_eq!(
            unsafe { tls_detail(&m) }.as_deref(),
            Some(" prf 0x260 mac_len 12 side client")
        );
        m.ulParameterLen -= 1;
        // SAFETY: as above (the length is shorter than `p`).
        assert_eq!(unsafe { tls_detail(&m) }, None);
    }
}
