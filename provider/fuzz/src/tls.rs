//! The TLS 1.2 mechanism parameters of the `mechanisms` target
//! (`CK_TLS12_MASTER_KEY_DERIVE_PARAMS`,
//! `CK_TLS12_EXTENDED_MASTER_KEY_DERIVE_PARAMS`, `CK_TLS12_KEY_MAT_PARAMS`
//! with its live `CK_SSL3_KEY_MAT_OUT`, `CK_TLS_KDF_PARAMS`,
//! `CK_TLS_MAC_PARAMS`), built with real pointers into owned buffers.

use arbitrary::Arbitrary;
use cryptoki_sys::*;
use std::ptr::null_mut;

/// PRF hashes, with one the token lacks.
const HASHES: &[CK_MECHANISM_TYPE] = &[
    CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA384, CKM_SHA512, 77,
];

/// A TLS 1.2 parameter.
#[derive(Arbitrary, Debug)]
pub enum TlsParam {
    /// `CK_TLS12_MASTER_KEY_DERIVE_PARAMS` (randoms) or, `extended`,
    /// `CK_TLS12_EXTENDED_MASTER_KEY_DERIVE_PARAMS` (`client` as the session
    /// hash); `pVersion` a live `CK_VERSION` or NULL.
    Master {
        extended: bool,
        prf: u8,
        client: Vec<u8>,
        server: Vec<u8>,
        version: bool,
    },
    /// `CK_TLS12_KEY_MAT_PARAMS` with a live `CK_SSL3_KEY_MAT_OUT` whose IV
    /// buffers hold `iv / 8` bytes each (sizes in bits).
    KeyMat {
        prf: u8,
        mac: u16,
        key: u16,
        iv: u16,
        export: bool,
        client: Vec<u8>,
        server: Vec<u8>,
    },
    /// `CK_TLS_KDF_PARAMS`.
    Kdf {
        prf: u8,
        label: Vec<u8>,
        client: Vec<u8>,
        server: Vec<u8>,
        context: Vec<u8>,
    },
    /// `CK_TLS_MAC_PARAMS`.
    Mac {
        prf: u8,
        len: u64,
        server_or_client: u8,
    },
}

fn as_bytes<T>(v: &T) -> Vec<u8> {
    // SAFETY: reading a plain C struct's bytes.
    unsafe {
        std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()).to_vec()
    }
}

fn ptr(b: &[u8]) -> *mut u8 {
    if b.is_empty() {
        null_mut()
    } else {
        b.as_ptr() as *mut u8
    }
}

/// `CK_SSL3_RANDOM_DATA` over two live buffers.
fn tls_randoms(client: &[u8], server: &[u8]) -> CK_SSL3_RANDOM_DATA {
    let ptr = |b: &[u8]| {
        if b.is_empty() {
            null_mut()
        } else {
            b.as_ptr() as *mut u8
        }
    };
    CK_SSL3_RANDOM_DATA {
        pClientRandom: ptr(client),
        ulClientRandomLen: client.len() as CK_ULONG,
        pServerRandom: ptr(server),
        ulServerRandomLen: server.len() as CK_ULONG,
    }
}

/// The parameter's bytes; the buffers it points into are pushed to
/// `owned` (bytes) and `words` (aligned output structs), which the caller
/// keeps alive (`owned` empty on entry).
pub fn build(p: &TlsParam, owned: &mut Vec<Vec<u8>>, words: &mut Vec<Vec<u64>>) -> Vec<u8> {
    // The arms index the buffers they push from 0.
    assert!(owned.is_empty(), "a TLS parameter owns its buffers alone");
    match p {
        TlsParam::Master {
            extended,
            prf,
            client,
            server,
            version,
        } => {
            owned.push(client.clone());
            owned.push(server.clone());
            owned.push(vec![0u8; 2]);
            let version = if *version {
                owned[2].as_mut_ptr() as *mut CK_VERSION
            } else {
                null_mut()
            };
            let prf = HASHES[*prf as usize % HASHES.len()];
            if *extended {
                as_bytes(&CK_TLS12_EXTENDED_MASTER_KEY_DERIVE_PARAMS {
                    prfHashMechanism: prf,
                    pSessionHash: ptr(&owned[0]),
                    ulSessionHashLen: owned[0].len() as CK_ULONG,
                    pVersion: version,
                })
            } else {
                as_bytes(&CK_TLS12_MASTER_KEY_DERIVE_PARAMS {
                    RandomInfo: tls_randoms(&owned[0], &owned[1]),
                    pVersion: version,
                    prfHashMechanism: prf,
                })
            }
        }
        TlsParam::KeyMat {
            prf,
            mac,
            key,
            iv,
            export,
            client,
            server,
        } => {
            owned.push(client.clone());
            owned.push(server.clone());
            owned.push(vec![0u8; (*iv as usize).div_ceil(8).max(1)]);
            owned.push(vec![0u8; (*iv as usize).div_ceil(8).max(1)]);
            let out = CK_SSL3_KEY_MAT_OUT {
                hClientMacSecret: 0,
                hServerMacSecret: 0,
                hClientKey: 0,
                hServerKey: 0,
                pIVClient: owned[2].as_mut_ptr(),
                pIVServer: owned[3].as_mut_ptr(),
            };
            // u64 storage: the output struct is aligned.
            let mut out_buf = vec![0u64; std::mem::size_of::<CK_SSL3_KEY_MAT_OUT>() / 8];
            // SAFETY: out_buf holds exactly one CK_SSL3_KEY_MAT_OUT, aligned.
            unsafe { (out_buf.as_mut_ptr() as *mut CK_SSL3_KEY_MAT_OUT).write(out) };
            let p_out = out_buf.as_mut_ptr() as *mut CK_SSL3_KEY_MAT_OUT;
            // Kept alive with the parameter (moving the Vec keeps its buffer).
            words.push(out_buf);
            as_bytes(&CK_TLS12_KEY_MAT_PARAMS {
                ulMacSizeInBits: *mac as CK_ULONG,
                ulKeySizeInBits: *key as CK_ULONG,
                ulIVSizeInBits: *iv as CK_ULONG,
                bIsExport: *export as CK_BBOOL,
                RandomInfo: tls_randoms(&owned[0], &owned[1]),
                pReturnedKeyMaterial: p_out,
                prfHashMechanism: HASHES[*prf as usize % HASHES.len()],
            })
        }
        TlsParam::Kdf {
            prf,
            label,
            client,
            server,
            context,
        } => {
            owned.push(label.clone());
            owned.push(client.clone());
            owned.push(server.clone());
            owned.push(context.clone());
            as_bytes(&CK_TLS_KDF_PARAMS {
                prfMechanism: [CKM_TLS_PRF, CKM_SHA256, CKM_SHA384, CKM_SHA_1, 5]
                    [*prf as usize % 5],
                pLabel: ptr(&owned[0]),
                ulLabelLength: owned[0].len() as CK_ULONG,
                RandomInfo: tls_randoms(&owned[1], &owned[2]),
                pContextData: ptr(&owned[3]),
                ulContextDataLength: owned[3].len() as CK_ULONG,
            })
        }
        TlsParam::Mac {
            prf,
            len,
            server_or_client,
        } => as_bytes(&CK_TLS_MAC_PARAMS {
            prfHashMechanism: [CKM_TLS_PRF, CKM_SHA256, CKM_SHA384, 5][*prf as usize % 4],
            ulMacLength: *len as CK_ULONG,
            ulServerOrClient: (*server_or_client % 4) as CK_ULONG,
        }),
    }
}

/// The size of `mech`'s TLS parameter struct when it holds pointers.
pub fn struct_size(mech: CK_MECHANISM_TYPE) -> Option<usize> {
    use std::mem::size_of;
    Some(match mech {
        CKM_TLS12_MASTER_KEY_DERIVE | CKM_TLS12_MASTER_KEY_DERIVE_DH => {
            size_of::<CK_TLS12_MASTER_KEY_DERIVE_PARAMS>()
        }
        CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE | CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH => {
            size_of::<CK_TLS12_EXTENDED_MASTER_KEY_DERIVE_PARAMS>()
        }
        CKM_TLS12_KEY_AND_MAC_DERIVE | CKM_TLS12_KEY_SAFE_DERIVE => {
            size_of::<CK_TLS12_KEY_MAT_PARAMS>()
        }
        CKM_TLS_KDF | CKM_TLS12_KDF => size_of::<CK_TLS_KDF_PARAMS>(),
        _ => return None,
    })
}

/// True when `p` was built as `mech`'s own parameter struct.
pub fn built_for(mech: CK_MECHANISM_TYPE, p: &TlsParam) -> bool {
    matches!(
        (mech, p),
        (
            CKM_TLS12_MASTER_KEY_DERIVE | CKM_TLS12_MASTER_KEY_DERIVE_DH,
            TlsParam::Master {
                extended: false,
                ..
            }
        ) | (
            CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE | CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH,
            TlsParam::Master { extended: true, .. }
        ) | (
            CKM_TLS12_KEY_AND_MAC_DERIVE | CKM_TLS12_KEY_SAFE_DERIVE,
            TlsParam::KeyMat { .. }
        ) | (CKM_TLS_KDF | CKM_TLS12_KDF, TlsParam::Kdf { .. })
    )
}
