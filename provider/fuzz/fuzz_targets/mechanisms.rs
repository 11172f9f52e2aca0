//! Mechanisms and their parameters for every `*Init`, with keys of every
//! type, then fuzzed single-part, multi-part, size-query and short-buffer
//! sequences (and wrap and derive with fuzzed templates).
#![no_main]

use arbitrary::Arbitrary;
use cryptoki_sys::*;
use dalek_pkcs11_fuzz::tls;
use dalek_pkcs11_fuzz::*;
use libfuzzer_sys::fuzz_target;
use std::ffi::c_void;
use std::ptr::null_mut;

/// The mechanisms the token lists, and a few it does not.
const MECHS: &[CK_MECHANISM_TYPE] = &[
    CKM_EDDSA,
    CKM_ECDSA,
    CKM_ECDSA_SHA1,
    CKM_ECDSA_SHA224,
    CKM_ECDSA_SHA256,
    CKM_ECDSA_SHA384,
    CKM_ECDSA_SHA512,
    CKM_ECDH1_DERIVE,
    CKM_DSA,
    CKM_DSA_SHA1,
    CKM_DSA_SHA224,
    CKM_DSA_SHA256,
    CKM_DSA_SHA384,
    CKM_DSA_SHA512,
    CKM_HKDF_DERIVE,
    CKM_HKDF_DATA,
    CKM_CONCATENATE_BASE_AND_KEY,
    CKM_CONCATENATE_BASE_AND_DATA,
    CKM_CONCATENATE_DATA_AND_BASE,
    CKM_XOR_BASE_AND_DATA,
    CKM_EXTRACT_KEY_FROM_KEY,
    CKM_AES_ECB_ENCRYPT_DATA,
    CKM_AES_CBC_ENCRYPT_DATA,
    CKM_SP800_108_COUNTER_KDF,
    CKM_SP800_108_FEEDBACK_KDF,
    CKM_SP800_108_DOUBLE_PIPELINE_KDF,
    CKM_IKE_PRF_DERIVE,
    CKM_IKE1_PRF_DERIVE,
    CKM_IKE1_EXTENDED_DERIVE,
    CKM_IKE2_PRF_PLUS_DERIVE,
    CKM_TLS12_MASTER_KEY_DERIVE,
    CKM_TLS12_MASTER_KEY_DERIVE_DH,
    CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE,
    CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH,
    CKM_TLS12_KEY_AND_MAC_DERIVE,
    CKM_TLS12_KEY_SAFE_DERIVE,
    CKM_TLS_KDF,
    CKM_TLS12_KDF,
    CKM_TLS_MAC,
    CKM_TLS12_MAC,
    CKM_RSA_PKCS,
    CKM_RSA_X_509,
    CKM_SHA1_RSA_PKCS,
    CKM_SHA256_RSA_PKCS,
    CKM_SHA384_RSA_PKCS,
    CKM_SHA512_RSA_PKCS,
    CKM_RSA_PKCS_PSS,
    CKM_SHA1_RSA_PKCS_PSS,
    CKM_SHA256_RSA_PKCS_PSS,
    CKM_SHA512_RSA_PKCS_PSS,
    CKM_RSA_PKCS_OAEP,
    CKM_AES_ECB,
    CKM_AES_CBC,
    CKM_AES_CBC_PAD,
    CKM_AES_CTR,
    CKM_AES_GCM,
    CKM_AES_KEY_WRAP,
    CKM_AES_KEY_WRAP_PAD,
    CKM_AES_CMAC,
    CKM_AES_CMAC_GENERAL,
    CKM_CHACHA20_KEY_GEN,
    CKM_CHACHA20,
    CKM_CHACHA20_POLY1305,
    CKM_SHA_1_HMAC,
    CKM_SHA256_HMAC,
    CKM_SHA256_HMAC_GENERAL,
    CKM_SHA512_HMAC,
    CKM_SHA_1,
    CKM_SHA224,
    CKM_SHA256,
    CKM_SHA384,
    CKM_SHA512,
    CKM_MD5,
    CKM_MD5_HMAC,
    CKM_MD5_RSA_PKCS,
    CKM_MD5_HMAC_GENERAL,
    CKM_DES3_KEY_GEN,
    CKM_DES3_ECB,
    CKM_DES3_CBC,
    CKM_DES3_CBC_PAD,
    CKM_DES3_CMAC_GENERAL,
    CKM_DES3_MAC,
    CKM_DES_CBC_PAD,
    CKM_HOTP_KEY_GEN,
    CKM_HOTP,
    // Unsupported examples.
    CKM_DES_OFB64,
    CKM_AES_CFB128,
    0x8000_0001,
];

/// A mechanism parameter, built with real pointers into owned buffers.
#[derive(Arbitrary, Debug)]
enum Param {
    None,
    Bytes(Vec<u8>),
    /// Bytes with a length field that does not match any struct.
    Odd(Vec<u8>, u8),
    Gcm {
        iv: Vec<u8>,
        aad: Vec<u8>,
        tag_bits: u8,
    },
    Ctr {
        bits: u8,
        cb: [u8; 16],
    },
    /// `CK_CHACHA20_PARAMS`: counter and nonce with their own bit counts
    /// (a bit count that disagrees with the buffer is capped to it).
    ChaCha20 {
        counter: Vec<u8>,
        counter_bits: u8,
        nonce: Vec<u8>,
        nonce_bits: u8,
    },
    /// `CK_SALSA20_CHACHA20_POLY1305_PARAMS`.
    ChaChaPoly {
        nonce: Vec<u8>,
        aad: Vec<u8>,
    },
    Oaep {
        hash: u8,
        mgf: u8,
        source: bool,
        label: Vec<u8>,
    },
    Pss {
        hash: u8,
        mgf: u8,
        s_len: u64,
    },
    Ecdh {
        kdf: u8,
        shared: Vec<u8>,
        public: Vec<u8>,
        point_of: u8,
    },
    EdDsa {
        prehash: bool,
        context: Option<Vec<u8>>,
    },
    MacLength(u64),
    Hkdf {
        extract: bool,
        expand: bool,
        hash: u8,
        salt_type: u8,
        salt: Vec<u8>,
        /// A handle number: small ones are the harness's keys.
        salt_key: u8,
        info: Vec<u8>,
    },
    /// A handle number (`CKM_CONCATENATE_BASE_AND_KEY`).
    Handle(u8),
    /// `CK_KEY_DERIVATION_STRING_DATA`.
    DerivationString(Vec<u8>),
    /// `CK_EXTRACT_PARAMS`.
    BitIndex(u64),
    /// `CK_AES_CBC_ENCRYPT_DATA_PARAMS`.
    AesCbcData([u8; 16], Vec<u8>),
    /// `CK_SP800_108_KDF_PARAMS` / `CK_SP800_108_FEEDBACK_KDF_PARAMS`
    /// without additional keys: data entries (type, width, little endian,
    /// DKM method or "no value", bytes) and the IV.
    Kbkdf {
        feedback: bool,
        prf: u8,
        data: Vec<(u8, u8, bool, u8, Vec<u8>)>,
        iv: Vec<u8>,
    },
    /// One of the four IKE parameter structs.
    Ike(ike::IkeParam),
    /// The TLS 1.2 parameter structs (`dalek_pkcs11_fuzz::tls`).
    Tls(tls::TlsParam),
    /// `CK_OTP_PARAMS`: entries (type, a small number, bytes); the small
    /// number makes well-formed counters and `CK_ULONG`s half the time.
    Otp(Vec<(u8, u8, Vec<u8>)>),
}

const HASHES: &[CK_MECHANISM_TYPE] = &[
    CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA384, CKM_SHA512, 77,
];
const MGFS: &[CK_ULONG] = &[
    CKG_MGF1_SHA1,
    CKG_MGF1_SHA224,
    CKG_MGF1_SHA256,
    CKG_MGF1_SHA384,
    CKG_MGF1_SHA512,
    99,
];

/// Owns a parameter's buffers while the mechanism points into them.
struct Built {
    bytes: Vec<u8>,
    _owned: Vec<Vec<u8>>,
    /// Word-aligned output buffers (`CK_SSL3_KEY_MAT_OUT`).
    _words: Vec<Vec<u64>>,
    len: CK_ULONG,
}

fn build(p: &Param, public_points: &[Vec<u8>]) -> Built {
    fn as_bytes<T>(v: &T) -> Vec<u8> {
        // SAFETY: reading a plain C struct's bytes.
        unsafe {
            std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>())
                .to_vec()
        }
    }
    let ptr = |b: &Vec<u8>| {
        if b.is_empty() {
            null_mut()
        } else {
            b.as_ptr() as *mut u8
        }
    };
    let mut owned: Vec<Vec<u8>> = Vec::new();
    let mut words: Vec<Vec<u64>> = Vec::new();
    let bytes = match p {
        Param::None => Vec::new(),
        Param::Bytes(b) => b.clone(),
        Param::Odd(b, _) => b.clone(),
        Param::Gcm { iv, aad, tag_bits } => {
            owned.push(iv.clone());
            owned.push(aad.clone());
            as_bytes(&CK_GCM_PARAMS {
                pIv: ptr(&owned[0]),
                ulIvLen: owned[0].len() as CK_ULONG,
                ulIvBits: owned[0].len() as CK_ULONG * 8,
                pAAD: ptr(&owned[1]),
                ulAADLen: owned[1].len() as CK_ULONG,
                ulTagBits: *tag_bits as CK_ULONG,
            })
        }
        Param::ChaCha20 {
            counter,
            counter_bits,
            nonce,
            nonce_bits,
        } => {
            owned.push(counter.clone());
            owned.push(nonce.clone());
            // The bit counts never claim more bytes than the buffers hold.
            let bits = |b: u8, v: &Vec<u8>| (b as usize).min(v.len() * 8) as CK_ULONG;
            as_bytes(&CK_CHACHA20_PARAMS {
                pBlockCounter: ptr(&owned[0]),
                blockCounterBits: bits(*counter_bits, &owned[0]),
                pNonce: ptr(&owned[1]),
                ulNonceBits: bits(*nonce_bits, &owned[1]),
            })
        }
        Param::ChaChaPoly { nonce, aad } => {
            owned.push(nonce.clone());
            owned.push(aad.clone());
            as_bytes(&CK_SALSA20_CHACHA20_POLY1305_PARAMS {
                pNonce: ptr(&owned[0]),
                ulNonceLen: owned[0].len() as CK_ULONG,
                pAAD: ptr(&owned[1]),
                ulAADLen: owned[1].len() as CK_ULONG,
            })
        }
        Param::Ctr { bits, cb } => as_bytes(&CK_AES_CTR_PARAMS {
            ulCounterBits: *bits as CK_ULONG,
            cb: *cb,
        }),
        Param::Oaep {
            hash,
            mgf,
            source,
            label,
        } => {
            owned.push(label.clone());
            as_bytes(&CK_RSA_PKCS_OAEP_PARAMS {
                hashAlg: HASHES[*hash as usize % HASHES.len()],
                mgf: MGFS[*mgf as usize % MGFS.len()],
                source: if *source { CKZ_DATA_SPECIFIED } else { 0 },
                pSourceData: ptr(&owned[0]) as *mut c_void,
                ulSourceDataLen: owned[0].len() as CK_ULONG,
            })
        }
        Param::Pss { hash, mgf, s_len } => as_bytes(&CK_RSA_PKCS_PSS_PARAMS {
            hashAlg: HASHES[*hash as usize % HASHES.len()],
            mgf: MGFS[*mgf as usize % MGFS.len()],
            sLen: *s_len as CK_ULONG,
        }),
        Param::Ecdh {
            kdf,
            shared,
            public,
            point_of,
        } => {
            owned.push(shared.clone());
            // Half the time a real point of one of the token's curves.
            let point = if point_of % 2 == 0 && !public_points.is_empty() {
                public_points[*point_of as usize / 2 % public_points.len()].clone()
            } else {
                public.clone()
            };
            owned.push(point);
            as_bytes(&CK_ECDH1_DERIVE_PARAMS {
                kdf: [CKD_NULL, CKD_SHA1_KDF, CKD_SHA256_KDF, CKD_SHA512_KDF, 42]
                    [*kdf as usize % 5],
                ulSharedDataLen: owned[0].len() as CK_ULONG,
                pSharedData: ptr(&owned[0]),
                ulPublicDataLen: owned[1].len() as CK_ULONG,
                pPublicData: ptr(&owned[1]),
            })
        }
        Param::EdDsa { prehash, context } => {
            owned.push(context.clone().unwrap_or_default());
            as_bytes(&CK_EDDSA_PARAMS {
                phFlag: *prehash as u8,
                ulContextDataLen: owned[0].len() as CK_ULONG,
                pContextData: ptr(&owned[0]),
            })
        }
        Param::MacLength(n) => (*n as CK_ULONG).to_ne_bytes().to_vec(),
        Param::Hkdf {
            extract,
            expand,
            hash,
            salt_type,
            salt,
            salt_key,
            info,
        } => {
            owned.push(salt.clone());
            owned.push(info.clone());
            as_bytes(&CK_HKDF_PARAMS {
                bExtract: *extract as u8,
                bExpand: *expand as u8,
                prfHashMechanism: HASHES[*hash as usize % HASHES.len()],
                ulSaltType: [
                    CKF_HKDF_SALT_NULL,
                    CKF_HKDF_SALT_DATA,
                    CKF_HKDF_SALT_KEY,
                    0,
                    7,
                ][*salt_type as usize % 5],
                pSalt: ptr(&owned[0]),
                ulSaltLen: owned[0].len() as CK_ULONG,
                hSaltKey: *salt_key as CK_OBJECT_HANDLE,
                pInfo: ptr(&owned[1]),
                ulInfoLen: owned[1].len() as CK_ULONG,
            })
        }
        Param::Ike(p) => p.build(&mut owned),
        Param::Handle(h) => (*h as CK_OBJECT_HANDLE).to_ne_bytes().to_vec(),
        Param::DerivationString(data) => {
            owned.push(data.clone());
            as_bytes(&CK_KEY_DERIVATION_STRING_DATA {
                pData: ptr(&owned[0]),
                ulLen: owned[0].len() as CK_ULONG,
            })
        }
        Param::BitIndex(i) => (*i as CK_ULONG).to_ne_bytes().to_vec(),
        Param::AesCbcData(iv, data) => {
            owned.push(data.clone());
            as_bytes(&CK_AES_CBC_ENCRYPT_DATA_PARAMS {
                iv: *iv,
                pData: ptr(&owned[0]),
                length: owned[0].len() as CK_ULONG,
            })
        }
        Param::Otp(entries) => {
            const TYPES: &[CK_ULONG] = &[
                CK_OTP_VALUE,
                CK_OTP_PIN,
                CK_OTP_CHALLENGE,
                CK_OTP_TIME,
                CK_OTP_COUNTER,
                CK_OTP_FLAGS,
                CK_OTP_OUTPUT_LENGTH,
                CK_OTP_OUTPUT_FORMAT,
                42,
            ];
            let mut list = Vec::new();
            for (ty, small, b) in entries.iter().take(10) {
                let ty = TYPES[*ty as usize % TYPES.len()];
                let value = match ty {
                    CK_OTP_COUNTER if small % 2 == 0 => u64::from(*small).to_be_bytes().to_vec(),
                    CK_OTP_FLAGS | CK_OTP_OUTPUT_LENGTH | CK_OTP_OUTPUT_FORMAT
                        if small % 2 == 0 =>
                    {
                        CK_ULONG::from(small / 2).to_ne_bytes().to_vec()
                    }
                    _ => b.clone(),
                };
                owned.push(value);
                let v = owned.last().expect("just pushed");
                list.push(CK_OTP_PARAM {
                    type_: ty,
                    pValue: ptr(v) as *mut c_void,
                    ulValueLen: v.len() as CK_ULONG,
                });
            }
            owned.push(list.iter().flat_map(as_bytes).collect());
            as_bytes(&CK_OTP_PARAMS {
                pParams: ptr(owned.last().expect("just pushed")) as *mut CK_OTP_PARAM,
                ulCount: list.len() as CK_ULONG,
            })
        }
        Param::Kbkdf {
            feedback,
            prf,
            data,
            iv,
        } => {
            const PRFS: &[CK_MECHANISM_TYPE] = &[
                CKM_SHA_1_HMAC,
                CKM_SHA224_HMAC,
                CKM_SHA256_HMAC,
                CKM_SHA384_HMAC,
                CKM_SHA512_HMAC,
                CKM_AES_CMAC,
                CKM_SHA256,
            ];
            const TYPES: &[CK_ULONG] = &[
                CK_SP800_108_ITERATION_VARIABLE,
                CK_SP800_108_OPTIONAL_COUNTER,
                CK_SP800_108_DKM_LENGTH,
                CK_SP800_108_BYTE_ARRAY,
                CK_SP800_108_KEY_HANDLE,
                9,
            ];
            let mut entries = Vec::new();
            for (ty, width, le, method, b) in data.iter().take(8) {
                let width = [0, 8, 12, 16, 24, 32, 40, 64][*width as usize % 8];
                let ty = TYPES[*ty as usize % TYPES.len()];
                let value = match ty {
                    CK_SP800_108_ITERATION_VARIABLE if method % 2 == 1 => Vec::new(),
                    CK_SP800_108_ITERATION_VARIABLE | CK_SP800_108_OPTIONAL_COUNTER => {
                        as_bytes(&CK_SP800_108_COUNTER_FORMAT {
                            bLittleEndian: *le as CK_BBOOL,
                            ulWidthInBits: width,
                        })
                    }
                    CK_SP800_108_DKM_LENGTH => as_bytes(&CK_SP800_108_DKM_LENGTH_FORMAT {
                        dkmLengthMethod: (*method % 3) as CK_ULONG,
                        bLittleEndian: *le as CK_BBOOL,
                        ulWidthInBits: width,
                    }),
                    _ => b.clone(),
                };
                owned.push(value);
                let v = owned.last().expect("just pushed");
                entries.push(CK_PRF_DATA_PARAM {
                    type_: ty,
                    pValue: ptr(v) as *mut c_void,
                    ulValueLen: v.len() as CK_ULONG,
                });
            }
            owned.push(entries.iter().flat_map(as_bytes).collect());
            let n = entries.len() as CK_ULONG;
            let p_data = ptr(owned.last().expect("just pushed")) as *mut CK_PRF_DATA_PARAM;
            owned.push(iv.clone());
            let p_iv = ptr(owned.last().expect("just pushed"));
            let prf = PRFS[*prf as usize % PRFS.len()];
            if *feedback {
                as_bytes(&CK_SP800_108_FEEDBACK_KDF_PARAMS {
                    prfType: prf,
                    ulNumberOfDataParams: n,
                    pDataParams: p_data,
                    ulIVLen: iv.len() as CK_ULONG,
                    pIV: p_iv,
                    ulAdditionalDerivedKeys: 0,
                    pAdditionalDerivedKeys: null_mut(),
                })
            } else {
                as_bytes(&CK_SP800_108_KDF_PARAMS {
                    prfType: prf,
                    ulNumberOfDataParams: n,
                    pDataParams: p_data,
                    ulAdditionalDerivedKeys: 0,
                    pAdditionalDerivedKeys: null_mut(),
                })
            }
        }
        Param::Tls(t) => tls::build(t, &mut owned, &mut words),
    };
    let len = match p {
        Param::Odd(_, n) => *n as CK_ULONG,
        _ => bytes.len() as CK_ULONG,
    };
    // An `Odd` length never exceeds the bytes behind it.
    let len = len.min(bytes.len() as CK_ULONG);
    Built {
        bytes,
        _owned: owned,
        _words: words,
        len,
    }
}

#[derive(Arbitrary, Debug)]
enum Func {
    Encrypt,
    Decrypt,
    Sign,
    Verify,
    Digest,
    Derive(Vec<FuzzAttr>),
    Wrap(u8),
}

#[derive(Arbitrary, Debug)]
enum Step {
    Single(Vec<u8>, OutBuf),
    Update(Vec<u8>, OutBuf),
    Final(OutBuf),
    DigestKey(u8),
}

#[derive(Arbitrary, Debug)]
struct Input {
    key: u8,
    mech: u8,
    param: Param,
    func: Func,
    steps: Vec<Step>,
}

/// The size of `mech`'s parameter struct when that struct holds pointers.
fn pointer_struct_size(mech: CK_MECHANISM_TYPE) -> Option<usize> {
    use std::mem::size_of;
    Some(match mech {
        CKM_EDDSA => size_of::<CK_EDDSA_PARAMS>(),
        CKM_AES_GCM => size_of::<CK_GCM_PARAMS>(),
        CKM_CHACHA20 => size_of::<CK_CHACHA20_PARAMS>(),
        CKM_CHACHA20_POLY1305 => size_of::<CK_SALSA20_CHACHA20_POLY1305_PARAMS>(),
        CKM_RSA_PKCS_OAEP => size_of::<CK_RSA_PKCS_OAEP_PARAMS>(),
        CKM_ECDH1_DERIVE => size_of::<CK_ECDH1_DERIVE_PARAMS>(),
        CKM_HKDF_DERIVE | CKM_HKDF_DATA => size_of::<CK_HKDF_PARAMS>(),
        CKM_CONCATENATE_BASE_AND_DATA
        | CKM_CONCATENATE_DATA_AND_BASE
        | CKM_XOR_BASE_AND_DATA
        | CKM_AES_ECB_ENCRYPT_DATA => size_of::<CK_KEY_DERIVATION_STRING_DATA>(),
        CKM_AES_CBC_ENCRYPT_DATA => size_of::<CK_AES_CBC_ENCRYPT_DATA_PARAMS>(),
        CKM_SP800_108_COUNTER_KDF | CKM_SP800_108_DOUBLE_PIPELINE_KDF => {
            size_of::<CK_SP800_108_KDF_PARAMS>()
        }
        CKM_SP800_108_FEEDBACK_KDF => size_of::<CK_SP800_108_FEEDBACK_KDF_PARAMS>(),
        CKM_HOTP => size_of::<CK_OTP_PARAMS>(),
        _ => return ike::struct_size(mech).or_else(|| tls::struct_size(mech)),
    })
}

/// True when `param` was built as `mech`'s own parameter struct (its
/// pointers point into live buffers).
fn built_for(mech: CK_MECHANISM_TYPE, param: &Param) -> bool {
    matches!(
        (mech, param),
        (CKM_EDDSA, Param::EdDsa { .. })
            | (CKM_HOTP, Param::Otp(_))
            | (CKM_AES_GCM, Param::Gcm { .. })
            | (CKM_CHACHA20, Param::ChaCha20 { .. })
            | (CKM_CHACHA20_POLY1305, Param::ChaChaPoly { .. })
            | (CKM_RSA_PKCS_OAEP, Param::Oaep { .. })
            | (CKM_ECDH1_DERIVE, Param::Ecdh { .. })
            | (CKM_HKDF_DERIVE | CKM_HKDF_DATA, Param::Hkdf { .. })
            | (
                CKM_CONCATENATE_BASE_AND_DATA
                    | CKM_CONCATENATE_DATA_AND_BASE
                    | CKM_XOR_BASE_AND_DATA
                    | CKM_AES_ECB_ENCRYPT_DATA,
                Param::DerivationString(_)
            )
            | (CKM_AES_CBC_ENCRYPT_DATA, Param::AesCbcData(..))
            | (
                CKM_SP800_108_COUNTER_KDF
                    | CKM_SP800_108_DOUBLE_PIPELINE_KDF
                    | CKM_SP800_108_FEEDBACK_KDF,
                Param::Kbkdf { .. }
            )
    ) || matches!(param, Param::Ike(p) if p.mechanism() == mech)
        || matches!(param, Param::Tls(t) if tls::built_for(mech, t))
}

fuzz_target!(|input: Input| {
    let h = harness();
    let f = h.f;
    let session = FuzzSession::open();
    let s = session.h;
    let key = h.keys[input.key as usize % h.keys.len()].1;
    let points: Vec<Vec<u8>> = Vec::new();
    let built = build(&input.param, &points);
    // A blob of exactly the size of the mechanism's pointer-holding struct,
    // built as something else, hands the module garbage pointers: a caller
    // breaking the C contract, which no module can survive (the crash
    // would be the harness's, not the module's). Lengths that match no
    // struct still go through and must be refused.
    let mech = MECHS[input.mech as usize % MECHS.len()];
    if pointer_struct_size(mech) == Some(built.len as usize) && !built_for(mech, &input.param) {
        return;
    }
    let mut m = CK_MECHANISM {
        mechanism: MECHS[input.mech as usize % MECHS.len()],
        pParameter: if built.bytes.is_empty() {
            null_mut()
        } else {
            built.bytes.as_ptr() as *mut c_void
        },
        ulParameterLen: built.len,
    };
    // SAFETY (every call below): live buffers of the stated lengths; the
    // mechanism's parameter points into `built`, alive until the end.
    unsafe {
        match &input.func {
            Func::Derive(attrs) => {
                let mut t = Template::new(attrs);
                let (p, n) = t.parts();
                let mut out = 0;
                if call("C_DeriveKey", || {
                    (f.C_DeriveKey.unwrap())(s, &mut m, key, p, n, &mut out)
                }) == CKR_OK
                {
                    call("C_DestroyObject", || (f.C_DestroyObject.unwrap())(s, out));
                }
                return;
            }
            Func::Wrap(target) => {
                let target = h.keys[*target as usize % h.keys.len()].1;
                for size in [0usize, 8, 4096] {
                    let mut buf = vec![0u8; size];
                    let mut len = size as CK_ULONG;
                    let p = if size == 0 {
                        null_mut()
                    } else {
                        buf.as_mut_ptr()
                    };
                    let rv = call("C_WrapKey", || {
                        (f.C_WrapKey.unwrap())(s, &mut m, key, target, p, &mut len)
                    });
                    if rv == CKR_OK && size > 0 {
                        assert!(len as usize <= size, "wrote past the buffer");
                    }
                }
                return;
            }
            _ => {}
        }
        let (init, single, update, fin): (&str, &str, &str, &str) = match input.func {
            Func::Encrypt => (
                "C_EncryptInit",
                "C_Encrypt",
                "C_EncryptUpdate",
                "C_EncryptFinal",
            ),
            Func::Decrypt => (
                "C_DecryptInit",
                "C_Decrypt",
                "C_DecryptUpdate",
                "C_DecryptFinal",
            ),
            Func::Sign => ("C_SignInit", "C_Sign", "C_SignUpdate", "C_SignFinal"),
            Func::Verify => (
                "C_VerifyInit",
                "C_Verify",
                "C_VerifyUpdate",
                "C_VerifyFinal",
            ),
            _ => (
                "C_DigestInit",
                "C_Digest",
                "C_DigestUpdate",
                "C_DigestFinal",
            ),
        };
        let rv = call(init, || match input.func {
            Func::Encrypt => (f.C_EncryptInit.unwrap())(s, &mut m, key),
            Func::Decrypt => (f.C_DecryptInit.unwrap())(s, &mut m, key),
            Func::Sign => (f.C_SignInit.unwrap())(s, &mut m, key),
            Func::Verify => (f.C_VerifyInit.unwrap())(s, &mut m, key),
            _ => (f.C_DigestInit.unwrap())(s, &mut m),
        });
        if rv != CKR_OK {
            return;
        }
        for step in input.steps.iter().take(16) {
            match step {
                Step::Single(data, out) => {
                    let (mut buf, mut len) = out.make();
                    let d = in_ptr(data);
                    let dl = data.len() as CK_ULONG;
                    let rv = call(single, || match input.func {
                        Func::Encrypt => {
                            (f.C_Encrypt.unwrap())(s, d, dl, out_ptr(&mut buf), &mut len)
                        }
                        Func::Decrypt => {
                            (f.C_Decrypt.unwrap())(s, d, dl, out_ptr(&mut buf), &mut len)
                        }
                        Func::Sign => (f.C_Sign.unwrap())(s, d, dl, out_ptr(&mut buf), &mut len),
                        // The signature is the second half of the data.
                        Func::Verify => {
                            (f.C_Verify.unwrap())(s, d, dl / 2, d.add(dl as usize / 2), dl - dl / 2)
                        }
                        _ => (f.C_Digest.unwrap())(s, d, dl, out_ptr(&mut buf), &mut len),
                    });
                    if rv == CKR_OK
                        && let Some(b) = &buf
                    {
                        assert!(len as usize <= b.len(), "{single} wrote past the buffer");
                    }
                }
                Step::Update(data, out) => {
                    let (mut buf, mut len) = out.make();
                    let d = in_ptr(data);
                    let dl = data.len() as CK_ULONG;
                    let rv = call(update, || match input.func {
                        Func::Encrypt => {
                            (f.C_EncryptUpdate.unwrap())(s, d, dl, out_ptr(&mut buf), &mut len)
                        }
                        Func::Decrypt => {
                            (f.C_DecryptUpdate.unwrap())(s, d, dl, out_ptr(&mut buf), &mut len)
                        }
                        Func::Sign => (f.C_SignUpdate.unwrap())(s, d, dl),
                        Func::Verify => (f.C_VerifyUpdate.unwrap())(s, d, dl),
                        _ => (f.C_DigestUpdate.unwrap())(s, d, dl),
                    });
                    if rv == CKR_OK
                        && let Some(b) = &buf
                    {
                        assert!(len as usize <= b.len(), "{update} wrote past the buffer");
                    }
                }
                Step::Final(out) => {
                    let (mut buf, mut len) = out.make();
                    let sig = buf.clone().unwrap_or_default();
                    let rv = call(fin, || match input.func {
                        Func::Encrypt => {
                            (f.C_EncryptFinal.unwrap())(s, out_ptr(&mut buf), &mut len)
                        }
                        Func::Decrypt => {
                            (f.C_DecryptFinal.unwrap())(s, out_ptr(&mut buf), &mut len)
                        }
                        Func::Sign => (f.C_SignFinal.unwrap())(s, out_ptr(&mut buf), &mut len),
                        Func::Verify => {
                            (f.C_VerifyFinal.unwrap())(s, in_ptr(&sig), sig.len() as CK_ULONG)
                        }
                        _ => (f.C_DigestFinal.unwrap())(s, out_ptr(&mut buf), &mut len),
                    });
                    if rv == CKR_OK
                        && let Some(b) = &buf
                    {
                        assert!(len as usize <= b.len(), "{fin} wrote past the buffer");
                    }
                }
                Step::DigestKey(i) => {
                    let k = h.keys[*i as usize % h.keys.len()].1;
                    call("C_DigestKey", || (f.C_DigestKey.unwrap())(s, k));
                }
            }
        }
    }
});
