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
