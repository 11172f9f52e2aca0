//! The cost of decrypting an encrypted PKCS#8 key file (RFC 5958 §3): the
//! PBES2 key derivation (RFC 8018 §6.2) with PBKDF2 (RFC 8018 §5.2, A.2) or
//! scrypt (RFC 7914 §2, §7.1), whose cost parameters the file itself gives.
//! They are read and bounded here before any key is derived or passphrase
//! asked for: a 165-byte file can otherwise ask scrypt for a petabyte (the
//! failed allocation aborts the process, which nothing can catch) or
//! PBKDF2 for hours.

use pkcs8::pkcs5::{EncryptionScheme, pbes2::Kdf};

/// One mebibyte.
const MIB: u128 = 1 << 20;

/// The most one key file's key derivation may cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Mebibytes scrypt may use: 128·r·(N + p + 2) bytes (its V, B and
    /// scratch blocks). Its work, 128·r·N·p bytes mixed, may be
    /// [`Limits::WORK_PER_MEMORY`] times this.
    pub memory_mib: u64,
    /// PBKDF2 iterations.
    pub iterations: u32,
}

impl Limits {
    /// The limits `import` applies unless told otherwise (`--max-kdf-memory`,
    /// `--max-kdf-iterations`). scrypt: 256 MiB, 8 times OpenSSL 3's own
    /// limit (32 MiB; its defaults N=2^14, r=8, p=1 take 16 MiB). PBKDF2:
    /// 10,000,000 iterations, far above OpenSSL's 2048 and OWASP's 600,000
    /// for PBKDF2-HMAC-SHA256 (a few seconds).
    pub const DEFAULT: Limits = Limits {
        memory_mib: 256,
        iterations: 10_000_000,
    };
    /// The most `--max-kdf-memory` accepts, so no value given can ask the
    /// allocator for more than a machine that runs a token has.
    pub const MAX_MEMORY_MIB: u64 = 4096;
    /// The most `--max-kdf-iterations` accepts (about half a minute): the
    /// pkcs8 crate's own bound when it writes a file.
    pub const MAX_ITERATIONS: u32 = pkcs8::pkcs5::pbes2::Pbkdf2Params::MAX_ITERATION_COUNT;
    /// scrypt's work (bytes mixed) may be this many times its memory limit:
    /// the parallelism `p` multiplies the time and is bounded with it.
    pub const WORK_PER_MEMORY: u64 = 4;
}

/// `N` for messages: `2^k` when it is a power of two.
fn n_text(n: u64) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// Mebibytes, rounded up.
fn mib(bytes: u128) -> u128 {
    bytes.div_ceil(MIB)
}

/// Checks the key derivation `scheme` asks for against `limits`: `Ok` when
/// deriving its key costs at most that (and, for scrypt, the memory can be
/// reserved); else one line naming the limit and the option that raises it.
pub fn check(scheme: &EncryptionScheme, limits: Limits) -> Result<(), String> {
    let params = match scheme {
        EncryptionScheme::Pbes2(p) => p,
        EncryptionScheme::Pbes1(_) => {
            return Err(
                "the key is encrypted with PBES1 (PKCS#5 v1.5), which is not supported: \
                 convert it, e.g. `openssl pkcs8 -topk8 -v2 aes-256-cbc -in FILE -out key.p8.pem`"
                    .into(),
            );
        }
        _ => return Err("the key file's encryption scheme is not supported (PBES2 is)".into()),
    };
    match &params.kdf {
        Kdf::Pbkdf2(p) => {
            let c = p.iteration_count;
            if c == 0 {
                return Err(
                    "the key file's PBKDF2 iteration count is 0 (RFC 8018 §5.2: \
                     at least 1): the file is damaged"
                        .into(),
                );
            }
            if c > limits.iterations {
                return Err(format!(
                    "the key file asks for {c} PBKDF2 iterations, above the limit of {}: \
                     raise it with --max-kdf-iterations N (at most {}) if the file is trusted",
                    limits.iterations,
                    Limits::MAX_ITERATIONS
                ));
            }
            Ok(())
        }
        Kdf::Scrypt(s) => {
            let (n, r, p) = (
                s.cost_parameter,
                u128::from(s.block_size),
                u128::from(s.parallelization),
            );
            let what = format!("scrypt parameters (N={}, r={r}, p={p})", n_text(n));
            if n < 2 || !n.is_power_of_two() || r == 0 || p == 0 {
                return Err(format!(
                    "the key file's {what} are invalid (RFC 7914 §2: N a power of 2 above 1, \
                     r and p at least 1): the file is damaged"
                ));
            }
            let n = u128::from(n);
            let memory = 128 * r * (n + p + 2);
            let cap = u128::from(limits.memory_mib) * MIB;
            let raise = format!(
                "raise it with --max-kdf-memory MIB (at most {}) if the file is trusted",
                Limits::MAX_MEMORY_MIB
            );
            if memory > cap {
                return Err(format!(
                    "the key file's {what} need {} MiB of memory, above the limit of {} MiB: \
                     {raise}",
                    mib(memory),
                    limits.memory_mib
                ));
            }
            let work = 128 * r * n * p;
            if work > cap * u128::from(Limits::WORK_PER_MEMORY) {
                return Err(format!(
                    "the key file's {what} mix {} MiB, above the limit of {} MiB \
                     ({} times the memory limit): {raise}",
                    mib(work),
                    mib(cap) * u128::from(Limits::WORK_PER_MEMORY),
                    Limits::WORK_PER_MEMORY
                ));
            }
            // Within the limit: make sure the allocator can give it, so an
            // allocation failure is this error and not an abort.
            let mut probe: Vec<u8> = Vec::new();
            usize::try_from(memory)
                .ok()
                .and_then(|m| probe.try_reserve_exact(m).ok())
                .ok_or_else(|| {
                    format!(
                        "the {} MiB of memory the key file's {what} need cannot be allocated",
                        mib(memory)
                    )
                })?;
            Ok(())
        }
        _ => Err(
            "the key file's key derivation function is not supported (PBKDF2 and scrypt are)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pkcs8::pkcs5::pbes2::{self, Pbkdf2Params, ScryptParams};

    fn scrypt(n: u64, r: u16, p: u16) -> EncryptionScheme {
        EncryptionScheme::Pbes2(pbes2::Parameters {
            kdf: Kdf::Scrypt(ScryptParams {
                salt: pbes2::Salt::new([1u8; 16]).unwrap(),
                cost_parameter: n,
                block_size: r,
                parallelization: p,
                key_length: None,
            }),
            encryption: pbes2::EncryptionScheme::Aes256Cbc { iv: [2; 16] },
        })
    }

    fn pbkdf2(iterations: u32) -> EncryptionScheme {
        EncryptionScheme::Pbes2(pbes2::Parameters {
            kdf: Kdf::Pbkdf2(Pbkdf2Params {
                iteration_count: iterations,
                ..Pbkdf2Params::hmac_sha256(1, &[1; 16]).unwrap()
            }),
            encryption: pbes2::EncryptionScheme::Aes256Cbc { iv: [2; 16] },
        })
    }

    #[test]
    fn openssl_defaults_pass_and_hostile_costs_are_refused_naming_the_option() {
        let d = Limits::DEFAULT;
        // OpenSSL 3's defaults: scrypt N=2^14, r=8, p=1; PBKDF2 2048.
        assert_eq!(check(&scrypt(1 << 14, 8, 1), d), Ok(()));
        assert_eq!(check(&pbkdf2(2048), d), Ok(()));
        assert_eq!(check(&pbkdf2(10_000_000), d), Ok(()));
        // Around the memory limit: N=2^17 with r=8 needs 128 MiB + 3 KiB,
        // with r=16 256 MiB + 6 KiB.
        assert_eq!(check(&scrypt(1 << 17, 8, 1), d), Ok(()));
        assert!(check(&scrypt(1 << 17, 16, 1), d).is_err());
        let memory = |e: Result<(), String>| {
            let e = e.unwrap_err();
            assert!(e.contains("--max-kdf-memory") && !e.contains('\n'), "{e}");
            e
        };
        let e = memory(check(&scrypt(1 << 40, 8, 1), d));
        assert!(
            e.contains("N=2^40") && e.contains("limit of 256 MiB"),
            "{e}"
        );
        memory(check(&scrypt(1 << 22, 8, 1), d));
        memory(check(&scrypt(u64::MAX / 2 + 1, u16::MAX, u16::MAX), d));
        // r and p huge with a small N: B (128·r·p bytes) is the memory.
        memory(check(&scrypt(2, u16::MAX, u16::MAX), d));
        // p huge within the memory: the work is refused.
        let e = memory(check(&scrypt(1 << 14, 8, 1000), d));
        assert!(e.contains("mix") && e.contains("limit of 1024 MiB"), "{e}");
        let e = check(&pbkdf2(4_000_000_000), d).unwrap_err();
        assert!(
            e.contains("4000000000") && e.contains("limit of 10000000"),
            "{e}"
        );
        assert!(e.contains("--max-kdf-iterations"), "{e}");
        assert!(check(&pbkdf2(10_000_001), d).is_err());
        // Raised, they pass.
        let raised = Limits {
            memory_mib: 1024,
            iterations: Limits::MAX_ITERATIONS,
        };
        assert_eq!(check(&scrypt(1 << 17, 16, 1), raised), Ok(()));
        assert_eq!(check(&pbkdf2(50_000_000), raised), Ok(()));
        assert!(check(&pbkdf2(4_000_000_000), raised).is_err());
    }

    #[test]
    fn parameters_the_rfcs_forbid_are_refused_before_the_library_sees_them() {
        let d = Limits::DEFAULT;
        // N=0 panics inside pkcs5 (its log2); N=3 is not a power of two.
        for (n, r, p) in [
            (0, 8, 1),
            (1, 8, 1),
            (3, 8, 1),
            (1 << 10, 0, 1),
            (1 << 10, 8, 0),
        ] {
            let e = check(&scrypt(n, r, p), d).unwrap_err();
            assert!(e.contains("invalid"), "{e}");
        }
        assert!(check(&pbkdf2(0), d).unwrap_err().contains("damaged"));
    }
}
