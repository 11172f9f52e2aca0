//! A `CK_MECHANISM` that owns its parameter structure, for the raw calls of
//! `raw.rs`.

use std::ffi::c_void;
use std::ptr;

use cryptoki_sys::*;

/// Owned mechanism parameters; boxed so that pointers into them stay put when the
/// owning [`Mech`] moves.
enum Param {
    None,
    Gcm(Box<GcmParam>),
    Pss(Box<CK_RSA_PKCS_PSS_PARAMS>),
    Oaep(Box<CK_RSA_PKCS_OAEP_PARAMS>),
    Iv(Box<[u8; 16]>),
    Ctr(Box<CK_AES_CTR_PARAMS>),
    Bytes(Box<[u8]>),
    Ecdh(Box<EcdhParam>),
    Ccm(Box<CcmParam>),
    ChaChaPoly(Box<ChaChaPolyParam>),
    Pbkdf2(Box<Pbkdf2Param>),
}

struct Pbkdf2Param {
    params: CK_PKCS5_PBKD2_PARAMS2,
    salt: Box<[u8]>,
    password: Box<[u8]>,
}

struct CcmParam {
    params: CK_CCM_PARAMS,
    nonce: [u8; 12],
}

struct ChaChaPolyParam {
    params: CK_SALSA20_CHACHA20_POLY1305_PARAMS,
    nonce: [u8; 12],
}

struct EcdhParam {
    params: CK_ECDH1_DERIVE_PARAMS,
    public: Box<[u8]>,
}

struct GcmParam {
    params: CK_GCM_PARAMS,
    iv: [u8; 12],
}

/// A `CK_MECHANISM` together with the parameter structure it points to.
///
/// Invariant: `raw.pParameter` is null or points into `param`, which is heap
/// allocated and owned by this value; it is refreshed after every change.
pub struct Mech {
    pub(super) raw: CK_MECHANISM,
    param: Param,
}

// SAFETY: the raw pointers in `raw` (and in a GCM parameter) point only to heap data
// owned by this value, never shared; moving the value to another thread moves that
// ownership with it.
unsafe impl Send for Mech {}

impl Mech {
    /// A mechanism without parameter.
    pub fn plain(m: CK_MECHANISM_TYPE) -> Self {
        Mech {
            raw: CK_MECHANISM {
                mechanism: m,
                pParameter: ptr::null_mut(),
                ulParameterLen: 0,
            },
            param: Param::None,
        }
    }

    /// Mechanism `m` whose parameter is the caller's bytes as they are
    /// (`--mech-param-hex` of the generic op); none when `param` is empty.
    pub fn with_bytes(m: CK_MECHANISM_TYPE, param: &[u8]) -> Self {
        let mut mech = Mech {
            raw: CK_MECHANISM {
                mechanism: m,
                pParameter: ptr::null_mut(),
                ulParameterLen: param.len() as CK_ULONG,
            },
            param: Param::Bytes(param.into()),
        };
        mech.refresh();
        mech
    }

    /// `CKM_ECDH1_DERIVE` (also X25519, whose keys are Montgomery keys) with
    /// no KDF and no shared data, against the peer's public value `public`.
    pub fn ecdh(public: &[u8]) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_ECDH1_DERIVE,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_ECDH1_DERIVE_PARAMS>() as CK_ULONG,
            },
            param: Param::Ecdh(Box::new(EcdhParam {
                params: CK_ECDH1_DERIVE_PARAMS {
                    kdf: CKD_NULL,
                    ulSharedDataLen: 0,
                    pSharedData: ptr::null_mut(),
                    ulPublicDataLen: public.len() as CK_ULONG,
                    pPublicData: ptr::null_mut(),
                },
                public: public.into(),
            })),
        };
        m.refresh();
        m
    }

    /// AES-GCM with a 96-bit IV, no AAD and a 128-bit tag.
    pub fn aes_gcm(iv: [u8; 12]) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_AES_GCM,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_GCM_PARAMS>() as CK_ULONG,
            },
            param: Param::Gcm(Box::new(GcmParam {
                params: CK_GCM_PARAMS {
                    pIv: ptr::null_mut(),
                    ulIvLen: 12,
                    ulIvBits: 96,
                    pAAD: ptr::null_mut(),
                    ulAADLen: 0,
                    ulTagBits: 128,
                },
                iv,
            })),
        };
        m.refresh();
        m
    }

    /// AES-CCM with a 12-byte nonce, no AAD and a 16-byte MAC, for
    /// `data_len` bytes of plaintext (CCM encodes the length first).
    pub fn aes_ccm(nonce: [u8; 12], data_len: usize) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_AES_CCM,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_CCM_PARAMS>() as CK_ULONG,
            },
            param: Param::Ccm(Box::new(CcmParam {
                params: CK_CCM_PARAMS {
                    ulDataLen: data_len as CK_ULONG,
                    pNonce: ptr::null_mut(),
                    ulNonceLen: 12,
                    pAAD: ptr::null_mut(),
                    ulAADLen: 0,
                    ulMACLen: 16,
                },
                nonce,
            })),
        };
        m.refresh();
        m
    }

    /// ChaCha20-Poly1305 (RFC 8439) with a 12-byte nonce and no AAD.
    pub fn chacha20_poly1305(nonce: [u8; 12]) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_CHACHA20_POLY1305,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_SALSA20_CHACHA20_POLY1305_PARAMS>()
                    as CK_ULONG,
            },
            param: Param::ChaChaPoly(Box::new(ChaChaPolyParam {
                params: CK_SALSA20_CHACHA20_POLY1305_PARAMS {
                    pNonce: ptr::null_mut(),
                    ulNonceLen: 12,
                    pAAD: ptr::null_mut(),
                    ulAADLen: 0,
                },
                nonce,
            })),
        };
        m.refresh();
        m
    }

    /// `CKM_PKCS5_PBKD2` (`CK_PKCS5_PBKD2_PARAMS2`): PBKDF2 with the PRF
    /// `prf` (e.g. `CKP_PKCS5_PBKD2_HMAC_SHA256`), `iterations`, the salt
    /// given (`CKZ_SALT_SPECIFIED`) and `password`.
    pub fn pbkdf2(
        prf: CK_PKCS5_PBKD2_PSEUDO_RANDOM_FUNCTION_TYPE,
        iterations: CK_ULONG,
        salt: &[u8],
        password: &[u8],
    ) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_PKCS5_PBKD2,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_PKCS5_PBKD2_PARAMS2>() as CK_ULONG,
            },
            param: Param::Pbkdf2(Box::new(Pbkdf2Param {
                params: CK_PKCS5_PBKD2_PARAMS2 {
                    saltSource: CKZ_SALT_SPECIFIED,
                    pSaltSourceData: ptr::null_mut(),
                    ulSaltSourceDataLen: salt.len() as CK_ULONG,
                    iterations,
                    prf,
                    pPrfData: ptr::null_mut(),
                    ulPrfDataLen: 0,
                    pPassword: ptr::null_mut(),
                    ulPasswordLen: password.len() as CK_ULONG,
                },
                salt: salt.into(),
                password: password.into(),
            })),
        };
        m.refresh();
        m
    }

    /// The IV of an AES-GCM or AES-CBC mechanism.
    #[cfg(test)]
    pub fn iv(&self) -> Option<&[u8]> {
        match &self.param {
            Param::Gcm(g) => Some(&g.iv),
            Param::Ccm(c) => Some(&c.nonce),
            Param::ChaChaPoly(c) => Some(&c.nonce),
            Param::Iv(b) => Some(&b[..]),
            Param::Ctr(c) => Some(&c.cb[..]),
            Param::Bytes(b) => Some(&b[..]),
            _ => None,
        }
    }

    /// A mechanism whose parameter is a 16-byte IV (`CKM_AES_CBC`,
    /// `CKM_AES_CBC_PAD`).
    pub fn with_iv16(mech: CK_MECHANISM_TYPE, iv: [u8; 16]) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: mech,
                pParameter: ptr::null_mut(),
                ulParameterLen: 16,
            },
            param: Param::Iv(Box::new(iv)),
        };
        m.refresh();
        m
    }

    /// AES-CTR with the initial counter block `block`, whose last
    /// `counter_bits` bits are the counter.
    pub fn aes_ctr(block: [u8; 16], counter_bits: CK_ULONG) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_AES_CTR,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_AES_CTR_PARAMS>() as CK_ULONG,
            },
            param: Param::Ctr(Box::new(CK_AES_CTR_PARAMS {
                ulCounterBits: counter_bits,
                cb: block,
            })),
        };
        m.refresh();
        m
    }

    /// Replace the IV (GCM, and the CCM and ChaCha20-Poly1305 nonce: 12
    /// bytes; CBC, CBC-PAD, CTS: 16 bytes; CTR: the
    /// 16-byte counter block; a byte parameter of the IV's length, e.g. the
    /// 8-byte IV of DES3-CBC) outside the timed region. An IV of another
    /// length, or a mechanism without IV, is left alone.
    pub fn set_iv(&mut self, iv: &[u8]) {
        match &mut self.param {
            Param::Gcm(g) => {
                if let Ok(v) = iv.try_into() {
                    g.iv = v;
                }
            }
            Param::Iv(b) => {
                if let Ok(v) = iv.try_into() {
                    **b = v;
                }
            }
            Param::Ccm(c) => {
                if let Ok(v) = iv.try_into() {
                    c.nonce = v;
                }
            }
            Param::ChaChaPoly(c) => {
                if let Ok(v) = iv.try_into() {
                    c.nonce = v;
                }
            }
            Param::Ctr(c) => {
                if let Ok(v) = iv.try_into() {
                    c.cb = v;
                }
            }
            Param::Bytes(b) if b.len() == iv.len() => b.copy_from_slice(iv),
            _ => {}
        }
        self.refresh();
    }

    /// RSA-PSS (`mech` is e.g. CKM_SHA256_RSA_PKCS_PSS) with the given hash, MGF and salt.
    pub fn rsa_pss(
        mech: CK_MECHANISM_TYPE,
        hash: CK_MECHANISM_TYPE,
        mgf: CK_ULONG,
        salt: CK_ULONG,
    ) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: mech,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_RSA_PKCS_PSS_PARAMS>() as CK_ULONG,
            },
            param: Param::Pss(Box::new(CK_RSA_PKCS_PSS_PARAMS {
                hashAlg: hash,
                mgf,
                sLen: salt,
            })),
        };
        m.refresh();
        m
    }

    /// RSA-OAEP with the given hash and MGF, no label.
    pub fn rsa_oaep(hash: CK_MECHANISM_TYPE, mgf: CK_ULONG) -> Self {
        let mut m = Mech {
            raw: CK_MECHANISM {
                mechanism: CKM_RSA_PKCS_OAEP,
                pParameter: ptr::null_mut(),
                ulParameterLen: std::mem::size_of::<CK_RSA_PKCS_OAEP_PARAMS>() as CK_ULONG,
            },
            param: Param::Oaep(Box::new(CK_RSA_PKCS_OAEP_PARAMS {
                hashAlg: hash,
                mgf,
                source: CKZ_DATA_SPECIFIED,
                pSourceData: ptr::null_mut(),
                ulSourceDataLen: 0,
            })),
        };
        m.refresh();
        m
    }

    /// Re-derive the parameter pointers from the owned boxes.
    fn refresh(&mut self) {
        self.raw.pParameter = match &mut self.param {
            Param::None => ptr::null_mut(),
            Param::Gcm(g) => {
                g.params.pIv = g.iv.as_mut_ptr();
                &mut g.params as *mut CK_GCM_PARAMS as *mut c_void
            }
            Param::Pss(p) => &mut **p as *mut CK_RSA_PKCS_PSS_PARAMS as *mut c_void,
            Param::Oaep(p) => &mut **p as *mut CK_RSA_PKCS_OAEP_PARAMS as *mut c_void,
            Param::Iv(b) => b.as_mut_ptr() as *mut c_void,
            Param::Ctr(c) => &mut **c as *mut CK_AES_CTR_PARAMS as *mut c_void,
            Param::Ecdh(e) => {
                e.params.pPublicData = e.public.as_mut_ptr();
                &mut e.params as *mut CK_ECDH1_DERIVE_PARAMS as *mut c_void
            }
            Param::Ccm(c) => {
                c.params.pNonce = c.nonce.as_mut_ptr();
                &mut c.params as *mut CK_CCM_PARAMS as *mut c_void
            }
            Param::ChaChaPoly(c) => {
                c.params.pNonce = c.nonce.as_mut_ptr();
                &mut c.params as *mut CK_SALSA20_CHACHA20_POLY1305_PARAMS as *mut c_void
            }
            Param::Pbkdf2(p) => {
                p.params.pSaltSourceData = p.salt.as_mut_ptr() as *mut c_void;
                p.params.pPassword = p.password.as_mut_ptr();
                &mut p.params as *mut CK_PKCS5_PBKD2_PARAMS2 as *mut c_void
            }
            Param::Bytes(b) if b.is_empty() => ptr::null_mut(),
            Param::Bytes(b) => b.as_mut_ptr() as *mut c_void,
        };
    }
}
