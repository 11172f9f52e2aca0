//! Memory hygiene (docs/SECURITY.md, "Memory hygiene"): after `C_Logout`
//! and after `C_Finalize`, no copy of the token key, of a key derived from a
//! PIN, of a PIN, or of a sensitive key value is left in the memory of the
//! process that used the module.
//!
//! Three processes, all of them this test binary:
//!
//! - the test itself makes a token with long random PINs, picks random key
//!   values (and an RSA key from the vector file) and hands them, XOR-masked,
//!   to
//! - the **scanning child** (the ignored test `worker`, role `MEMORY_SCAN`),
//!   the only process that uses the token afterwards. It unmasks every
//!   secret into a mapping of its own (the *vault*, which its scan skips and
//!   nothing else reads), passes PINs and key values to the module by
//!   pointer into the vault (raw `C_Login`, `C_SetPIN`, `C_InitPIN`,
//!   `C_CreateObject` with `CKA_SENSITIVE`), and drives it through phases,
//!   each between a `C_Login` and a `C_Logout`: keys created (AES, generic
//!   secret, P-256, Ed25519, RSA) and each used once, generated keys
//!   sealed, changed and used in turn; AES (GCM, CBC-PAD, CMAC, a session key)
//!   and HMAC; ECDSA, Ed25519, RSA signatures and OAEP decryption;
//!   searches, attribute reads, a change that re-seals, a copy, a
//!   generated key; operations initialised and left unfinished and an
//!   HMAC's state saved (`C_GetOperationState`); then
//!   `C_Finalize`, a restart that reloads the token objects from the file
//!   and uses them all again, `C_SetPIN`, the SO's `C_InitPIN`, and
//!   `C_Finalize` again. After every `C_Logout` and `C_Finalize` it reads
//!   every writable mapping of itself through `/proc/self/mem` (heap,
//!   anonymous mappings, thread stacks, the data of every loaded library)
//!   and reports each copy of a secret. Once, while logged in, the scan
//!   must find the token key and the AES key (in use, so present): the
//!   scan sees what is there;
//! - the **key worker** (role `MEMORY_KEYS`) unwraps the token key from the
//!   token file with a PIN by its own code (PBKDF2 and AES-GCM straight
//!   from the crates) and prints it and the PIN's key-encryption key,
//!   masked.
//!
//! A secret is looked for by 32-byte windows (its first and last 32 bytes,
//! forwards and reversed, the reversal being a big integer's little-endian
//! limbs); a PIN (24 characters) whole. What this cannot see: a secret held
//! in another representation (a scalar in Montgomery form, bitsliced AES
//! round keys, HMAC pads, which are the key XORed with a constant, a piece
//! shorter than the window) and memory outside the process (the kernel,
//! swap). A copy in a freed heap block is found only while nothing reused
//! the block: the module's allocator zeroes blocks as they are freed, which
//! its own unit test checks (`ffi::alloc`). The child makes every call on
//! one thread; the stacks of other threads are wiped the same way at the
//! end of each of their calls, which this test does not exercise.
//!
//! This file holds the masking, the vault and the scan, the `worker` entry
//! point of the child processes (which `--exact worker` must find at the
//! crate root) and the test; the two children are in `key_worker` and
//! `scanning_child`.

#[path = "../common/mod.rs"]
mod common;

mod key_worker;
mod scanning_child;

use common::*;
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::MechanismType;
use cryptoki::mechanism::aead::GcmParams;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::mechanism::rsa::{PkcsMgfType, PkcsOaepParams, PkcsOaepSource};
use cryptoki::object::{Attribute, AttributeType, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki_sys::*;
use key_worker::{key_worker, keys_of};
use scanning_child::scan_worker;
use std::ops::Range;
use std::os::unix::fs::FileExt;

/// Label of the token under test.
const LABEL: &str = "hygiene";
/// Longest needle: secrets are looked for by their first 32 bytes.
const NEEDLE: usize = 32;
/// Bytes read from `/proc/self/mem` at a time.
const CHUNK: usize = 1 << 20;
/// Size of the vault: secrets, needles and the read buffer.
const VAULT: usize = CHUNK + (1 << 16);
/// DER OID of P-256 (`CKA_EC_PARAMS`).
const P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// DER OID of Ed25519 (`CKA_EC_PARAMS`).
const ED25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];

// ---------------------------------------------------------------- masking

fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    // SAFETY: getrandom writes at most `n` bytes into `v`.
    let got = unsafe { libc::getrandom(v.as_mut_ptr().cast(), n, 0) };
    assert_eq!(got, n as isize);
    v
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` XOR a random mask, and the mask: `masked:mask` in hex.
fn mask(value: &[u8]) -> String {
    let m = random(value.len());
    let masked: Vec<u8> = value.iter().zip(&m).map(|(v, m)| v ^ m).collect();
    format!("{}:{}", hex(&masked), hex(&m))
}

/// Length of the value of a `masked:mask` string.
fn masked_len(spec: &str) -> usize {
    spec.split_once(':').expect("masked:mask").0.len() / 2
}

/// Unmasks a `masked:mask` string into `dst`, byte by byte (the plain
/// value is never in a buffer outside `dst`).
fn unmask_into(spec: &str, dst: &mut [u8]) {
    let (m, k) = spec.split_once(':').expect("masked:mask");
    assert_eq!(m.len(), 2 * dst.len());
    let byte = |s: &str, i: usize| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    for (i, d) in dst.iter_mut().enumerate() {
        *d = byte(m, i) ^ byte(k, i);
    }
}

// ------------------------------------------------------------------ vault

/// One private anonymous mapping holding every plain secret of the child,
/// the needles made from them and the buffer the scan reads into: the scan
/// skips it, and it is zeroed and unmapped when dropped.
struct Vault {
    base: *mut u8,
    used: usize,
}

/// A secret (or needle) in the vault.
#[derive(Clone)]
struct Secret {
    name: String,
    at: usize,
    len: usize,
}

impl Vault {
    fn new() -> Vault {
        // SAFETY: a fresh private anonymous mapping; nothing else aliases it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                VAULT,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        Vault {
            base: p.cast(),
            used: CHUNK,
        }
    }

    fn range(&self) -> Range<usize> {
        self.base as usize..self.base as usize + VAULT
    }

    /// The read buffer (the first `CHUNK` bytes).
    fn buffer(&mut self) -> &mut [u8] {
        // SAFETY: inside the mapping; `&mut self` makes it exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.base, CHUNK) }
    }

    /// The read buffer, to look at.
    fn read(&self) -> &[u8] {
        // SAFETY: inside the mapping.
        unsafe { std::slice::from_raw_parts(self.base, CHUNK) }
    }

    fn bytes(&self, s: &Secret) -> &[u8] {
        // SAFETY: `s` was allocated inside the mapping by `alloc`.
        unsafe { std::slice::from_raw_parts(self.base.add(s.at), s.len) }
    }

    fn ptr(&self, s: &Secret) -> *mut u8 {
        // SAFETY: inside the mapping.
        unsafe { self.base.add(s.at) }
    }

    /// A zeroed secret of `len` bytes, filled by `fill`.
    fn alloc(&mut self, name: &str, len: usize, fill: impl FnOnce(&mut [u8])) -> Secret {
        assert!(self.used + len <= VAULT, "vault full");
        let s = Secret {
            name: name.to_string(),
            at: self.used,
            len,
        };
        self.used += len;
        // SAFETY: the range was just reserved inside the mapping.
        fill(unsafe { std::slice::from_raw_parts_mut(self.base.add(s.at), len) });
        s
    }

    /// A secret from a `masked:mask` string.
    fn unmask(&mut self, name: &str, spec: &str) -> Secret {
        self.alloc(name, masked_len(spec), |d| unmask_into(spec, d))
    }

    /// The needles of `s`: its first 32 bytes; for values of 32 bytes or
    /// more also its last 32, and both ends of its reversal (a big
    /// integer's little-endian form).
    fn needles(&mut self, s: &Secret) -> Vec<Secret> {
        let mut out = vec![Secret {
            name: format!("{} (bytes)", s.name),
            at: s.at,
            len: s.len.min(NEEDLE),
        }];
        if s.len >= NEEDLE {
            out.push(Secret {
                name: format!("{} (last bytes)", s.name),
                at: s.at + s.len - NEEDLE,
                len: NEEDLE,
            });
            let (base, at, len) = (self.base, s.at, s.len);
            for (what, from) in [("reversed", len - NEEDLE), ("reversed, last", 0)] {
                out.push(self.alloc(&format!("{} ({what})", s.name), NEEDLE, |d| {
                    for (i, d) in d.iter_mut().enumerate() {
                        // SAFETY: inside the mapping (`from + NEEDLE <= len`).
                        *d = unsafe { *base.add(at + from + NEEDLE - 1 - i) };
                    }
                }));
            }
        }
        out
    }
}

impl Drop for Vault {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used.
        unsafe {
            std::ptr::write_bytes(self.base, 0, VAULT);
            libc::munmap(self.base.cast(), VAULT);
        }
    }
}

// ------------------------------------------------------------------- scan

/// A writable mapping of this process: its range and its maps line.
struct Mapping {
    range: Range<usize>,
    line: String,
}

fn writable_mappings() -> Vec<Mapping> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let (a, b) = parts.next()?.split_once('-')?;
            let perms = parts.next()?;
            let name = l.split_whitespace().nth(5).unwrap_or("");
            // [vvar], [vdso], [vsyscall]: the kernel's, not ours.
            if !perms.starts_with("rw") || name.starts_with("[v") {
                return None;
            }
            let range = usize::from_str_radix(a, 16).ok()?..usize::from_str_radix(b, 16).ok()?;
            // Terabyte-sized reservations (a sanitizer's shadow) hold no data.
            (range.len() <= 1 << 32).then(|| Mapping {
                range,
                line: l.to_string(),
            })
        })
        .collect()
}

/// Every place in this process's writable memory (except the vault) where
/// a needle is found: "name at address in mapping".
fn scan(vault: &mut Vault, needles: &[Secret]) -> Vec<String> {
    let mut first = vec![false; 1 << 16];
    for n in needles {
        let b = vault.bytes(n);
        first[usize::from(u16::from_le_bytes([b[0], b[1]]))] = true;
    }
    let mem = std::fs::File::open("/proc/self/mem").unwrap();
    let skip = vault.range();
    let mut found = Vec::new();
    for m in writable_mappings() {
        if m.range.start < skip.end && skip.start < m.range.end {
            continue;
        }
        let mut at = m.range.start;
        while at < m.range.end {
            let len = (m.range.end - at).min(CHUNK);
            let n = match mem.read_at(&mut vault.buffer()[..len], at as u64) {
                Ok(0) => break,
                Ok(n) => n,
                // An unreadable page (a guard page inside the mapping).
                Err(_) => {
                    at += 4096;
                    continue;
                }
            };
            for i in 0..n.saturating_sub(1) {
                let (b0, b1) = (vault.read()[i], vault.read()[i + 1]);
                if !first[usize::from(u16::from_le_bytes([b0, b1]))] {
                    continue;
                }
                for nd in needles {
                    if i + nd.len <= n && vault.read()[i..i + nd.len] == *vault.bytes(nd) {
                        found.push(format!(
                            "{} at {:#x} (+{:#x}) in {}",
                            nd.name,
                            at + i,
                            at + i - m.range.start,
                            m.line
                        ));
                    }
                }
            }
            vault.buffer()[..n].fill(0);
            if at + n >= m.range.end {
                break;
            }
            // Overlap so that no match is split between two reads.
            at += n.saturating_sub(NEEDLE - 1).max(1);
        }
    }
    found.sort();
    found.dedup();
    found
}

// ---------------------------------------------------------------- workers

/// Entry point of the worker processes (skipped in a normal run).
#[test]
#[ignore = "runs only as a child process of the test below"]
fn worker() {
    if let Ok(spec) = std::env::var("MEMORY_KEYS") {
        key_worker(&spec);
    } else if let Ok(spec) = std::env::var("MEMORY_SCAN") {
        scan_worker(&spec);
    }
}

// ------------------------------------------------------------------- test

/// The test: a token with long random PINs, random key values, and the
/// scanning child over them.
#[test]
fn no_secret_survives_logout_or_finalize() {
    // A sanitizer moves stack frames onto heap "fake stacks" and keeps freed
    // memory in quarantine: what it leaves says nothing about the module.
    if std::env::var_os("DALEK_PKCS11_SANITIZER").is_some() {
        eprintln!("skipped under a sanitizer: its fake stacks and quarantine hold stale frames");
        return;
    }
    // PINs of 24 characters: long enough that a match is no accident.
    let pin_of = || hex(&random(12));
    let (so_pin, user_pin) = (pin_of(), pin_of());
    let mut f = Fixture::new();
    let slot = f.free_slot();
    f.p().init_token(slot, &pin(&so_pin), LABEL).unwrap();
    let s = f.p().open_rw_session(slot).unwrap();
    s.login(UserType::So, Some(&pin(&so_pin))).unwrap();
    s.init_pin(&pin(&user_pin)).unwrap();
    s.logout().unwrap();
    drop(s);
    // From here on the child is the only process using the token.
    f.stop();

    let vectors = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/rsa-pkcs1v15-sha256-sign.txt"
    ))
    .unwrap();
    let rsa: Vec<&str> = vectors
        .lines()
        .find_map(|l| l.strip_prefix("key:"))
        .unwrap()
        .split(':')
        .collect();
    let mut ec = random(32);
    ec[0] &= 0x7f; // below the order of P-256
    let spec = [
        format!("SO PIN={}", mask(so_pin.as_bytes())),
        format!("user PIN={}", mask(user_pin.as_bytes())),
        format!("new user PIN={}", mask(pin_of().as_bytes())),
        format!("reset user PIN={}", mask(pin_of().as_bytes())),
        format!("aes={}", mask(&random(32))),
        format!("aes-session={}", mask(&random(32))),
        format!("hmac={}", mask(&random(32))),
        format!("ec={}", mask(&ec)),
        format!("ed25519={}", mask(&random(32))),
        format!("plain:rsa-n={}", rsa[0]),
        format!("plain:rsa-e={}", rsa[1]),
        format!("rsa-d={}", mask(&unhex(rsa[2]))),
        format!("rsa-p={}", mask(&unhex(rsa[3]))),
        format!("rsa-q={}", mask(&unhex(rsa[4]))),
    ]
    .join(";");
    let out = finish_worker(f.spawn_worker("MEMORY_SCAN", &spec));
    assert!(out.contains("scan-clean"), "{out}");
}
