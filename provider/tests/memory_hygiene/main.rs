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

#[path = "../common/mod.rs"]
mod common;

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

/// `MEMORY_KEYS=<token file>;<user|so>;<masked PIN>`: prints the token key
/// and the key-encryption key of that PIN's wrap in the file, masked.
fn key_worker(spec: &str) {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let mut parts = spec.splitn(3, ';');
    let (path, role, pin) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let mut pin_bytes = vec![0u8; masked_len(pin)];
    unmask_into(pin, &mut pin_bytes);
    let db = rusqlite::Connection::open(path).unwrap();
    let json: Vec<u8> = db
        .query_row("SELECT value FROM meta WHERE name = 'token'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let meta: dalek_pkcs11::storage::TokenMeta = serde_json::from_slice(&json).unwrap();
    let wrap = if role == "so" {
        meta.so_pin
    } else {
        meta.user_pin
    }
    .expect("PIN set");
    let mut kek = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(&pin_bytes, &unhex(&wrap.salt), wrap.iterations, &mut kek);
    let sealed = unhex(&wrap.sealed);
    let cipher = aes_gcm::Aes256Gcm::new(&kek.into());
    let nonce: [u8; 12] = sealed[..12].try_into().unwrap();
    let key = cipher
        .decrypt(
            &nonce.into(),
            Payload {
                msg: &sealed[12..],
                aad: wrap.kdf.as_bytes(),
            },
        )
        .expect("the PIN opens the wrap");
    println!("token-key {}", mask(&key));
    println!("kek {}", mask(&kek));
}

/// The token file in the test's token directory.
fn token_file() -> String {
    let dir = std::env::var("DALEK_PKCS11_TOKEN_DIR").unwrap();
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .unwrap()
        .display()
        .to_string()
}

/// Runs the key worker for the masked PIN `pin` of `role` (`user` or
/// `so`): (token key, KEK), masked.
fn keys_of(role: &str, pin: &str) -> (String, String) {
    let out = worker_command()
        .env_remove("MEMORY_SCAN")
        .env("MEMORY_KEYS", format!("{};{role};{pin}", token_file()))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |tag: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(tag))
            .unwrap_or_else(|| panic!("{text}{}", String::from_utf8_lossy(&out.stderr)))
            .to_string()
    };
    (line("token-key "), line("kek "))
}

// ------------------------------------------------------- the scanning child

/// A template for raw `C_CreateObject`: plain values owned here, secret
/// values pointing into the vault.
#[derive(Default)]
struct Template {
    values: Vec<(CK_ATTRIBUTE_TYPE, Vec<u8>)>,
    secrets: Vec<(CK_ATTRIBUTE_TYPE, *mut u8, usize)>,
}

impl Template {
    fn ulong(mut self, ty: CK_ATTRIBUTE_TYPE, v: CK_ULONG) -> Self {
        self.values.push((ty, v.to_ne_bytes().to_vec()));
        self
    }
    fn bool(mut self, ty: CK_ATTRIBUTE_TYPE, v: bool) -> Self {
        self.values.push((ty, vec![u8::from(v)]));
        self
    }
    fn bytes(mut self, ty: CK_ATTRIBUTE_TYPE, v: &[u8]) -> Self {
        self.values.push((ty, v.to_vec()));
        self
    }
    fn secret(mut self, ty: CK_ATTRIBUTE_TYPE, vault: &Vault, s: &Secret) -> Self {
        self.secrets.push((ty, vault.ptr(s), s.len));
        self
    }

    /// A private, sensitive, unextractable key labelled `label`.
    fn key(label: &str, class: CK_OBJECT_CLASS, key_type: CK_KEY_TYPE, token: bool) -> Self {
        Template::default()
            .ulong(CKA_CLASS, class)
            .ulong(CKA_KEY_TYPE, key_type)
            .bytes(CKA_LABEL, label.as_bytes())
            .bool(CKA_TOKEN, token)
            .bool(CKA_PRIVATE, true)
            .bool(CKA_SENSITIVE, true)
            .bool(CKA_EXTRACTABLE, false)
    }

    fn create(mut self, s: &Session) -> CK_OBJECT_HANDLE {
        let mut attrs: Vec<CK_ATTRIBUTE> = self
            .values
            .iter_mut()
            .map(|(ty, v)| CK_ATTRIBUTE {
                type_: *ty,
                pValue: v.as_mut_ptr().cast(),
                ulValueLen: v.len() as CK_ULONG,
            })
            .chain(self.secrets.iter().map(|&(ty, p, len)| CK_ATTRIBUTE {
                type_: ty,
                pValue: p.cast(),
                ulValueLen: len as CK_ULONG,
            }))
            .collect();
        let mut h = 0;
        // SAFETY: every attribute points at a live buffer of its length.
        let rv = unsafe {
            (raw().C_CreateObject.unwrap())(
                s.handle(),
                attrs.as_mut_ptr(),
                attrs.len() as _,
                &mut h,
            )
        };
        assert_eq!(rv, CKR_OK, "C_CreateObject");
        h
    }
}

/// Raw `C_Login` as `user` with a PIN in the vault.
fn login(s: &Session, user: CK_USER_TYPE, vault: &Vault, pin: &Secret) {
    // SAFETY: the PIN is `pin.len` bytes in the vault.
    let rv = unsafe { (raw().C_Login.unwrap())(s.handle(), user, vault.ptr(pin), pin.len as _) };
    assert_eq!(rv, CKR_OK, "C_Login");
}

/// Raw `C_SetPIN` with both PINs in the vault.
fn set_pin(s: &Session, vault: &Vault, old: &Secret, new: &Secret) {
    // SAFETY: both PINs are in the vault, of their lengths.
    let rv = unsafe {
        (raw().C_SetPIN.unwrap())(
            s.handle(),
            vault.ptr(old),
            old.len as _,
            vault.ptr(new),
            new.len as _,
        )
    };
    assert_eq!(rv, CKR_OK, "C_SetPIN");
}

/// Raw `C_InitPIN` with the PIN in the vault.
fn init_pin(s: &Session, vault: &Vault, pin: &Secret) {
    // SAFETY: the PIN is `pin.len` bytes in the vault.
    let rv = unsafe { (raw().C_InitPIN.unwrap())(s.handle(), vault.ptr(pin), pin.len as _) };
    assert_eq!(rv, CKR_OK, "C_InitPIN");
}

/// Raw `C_GetOperationState`: the module keeps the session's state.
fn save_state(s: &Session) {
    let mut state = [0u8; 64];
    let mut len = state.len() as CK_ULONG;
    // SAFETY: `state` has room for `len` bytes.
    let rv =
        unsafe { (raw().C_GetOperationState.unwrap())(s.handle(), state.as_mut_ptr(), &mut len) };
    assert_eq!(rv, CKR_OK, "C_GetOperationState");
}

fn start() -> (Pkcs11, Slot) {
    let p = Pkcs11::new(module_path()).unwrap();
    p.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
        .unwrap();
    let slot = *p
        .get_slots_with_token()
        .unwrap()
        .iter()
        .find(|s| p.get_token_info(**s).unwrap().label() == LABEL)
        .expect("the token");
    (p, slot)
}

/// The object labelled `label` (through `C_FindObjects`).
fn find(s: &Session, label: &str) -> ObjectHandle {
    let found = s.find_objects(&[Attribute::Label(label.into())]).unwrap();
    assert_eq!(found.len(), 1, "{label}");
    found[0]
}

const DATA: &[u8] = b"memory hygiene: a message to sign, encrypt and authenticate";

/// AES (GCM, CBC-PAD, CMAC) and HMAC with the token keys.
fn use_aes_and_hmac(s: &Session) {
    let aes = find(s, "aes");
    let mut iv = [7u8; 12];
    let gcm = Mechanism::AesGcm(GcmParams::new(&mut iv, b"aad", 128.into()).unwrap());
    let ct = s.encrypt(&gcm, aes, DATA).unwrap();
    assert_eq!(s.decrypt(&gcm, aes, &ct).unwrap(), DATA);
    let cbc = Mechanism::AesCbcPad([1; 16]);
    let ct = s.encrypt(&cbc, aes, DATA).unwrap();
    assert_eq!(s.decrypt(&cbc, aes, &ct).unwrap(), DATA);
    s.sign(&Mechanism::AesCMac, aes, DATA).unwrap();
    let hmac = find(s, "hmac");
    let mac = s.sign(&Mechanism::Sha256Hmac, hmac, DATA).unwrap();
    s.verify(&Mechanism::Sha256Hmac, hmac, DATA, &mac).unwrap();
    // Message-based GCM with a counter IV: the token's IV counters
    // remember the parsed key (api::ivcounter).
    use cryptoki::mechanism::MessageParam;
    use cryptoki::mechanism::aead::{GcmMessageParams, GeneratorFunction};
    let mut init_iv = [0u8; 12];
    let mut init_tag = [0u8; 16];
    let init = GcmMessageParams::new(
        &mut init_iv,
        0.into(),
        GeneratorFunction::NoGenerate,
        &mut init_tag,
    )
    .unwrap();
    s.message_encrypt_init(&Mechanism::AesGcmMessage(init), aes)
        .unwrap();
    let mut iv = [0u8; 12];
    let mut tag = [0u8; 16];
    let params = GcmMessageParams::new(
        &mut iv,
        32.into(),
        GeneratorFunction::GenerateCounter,
        &mut tag,
    )
    .unwrap();
    s.encrypt_message(&MessageParam::AesGcmMessage(params), b"aad", DATA)
        .unwrap();
    s.message_encrypt_final().unwrap();
}

/// ECDSA, Ed25519 and RSA (signature, OAEP decryption) with the token keys.
fn use_private_keys(s: &Session, rsa_public: ObjectHandle) {
    s.sign(&Mechanism::EcdsaSha256, find(s, "ec"), DATA)
        .unwrap();
    let eddsa = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure));
    s.sign(&eddsa, find(s, "ed25519"), DATA).unwrap();
    let rsa = find(s, "rsa");
    s.sign(&Mechanism::Sha256RsaPkcs, rsa, DATA).unwrap();
    let oaep = Mechanism::RsaPkcsOaep(PkcsOaepParams::new(
        MechanismType::SHA256,
        PkcsMgfType::MGF1_SHA256,
        PkcsOaepSource::empty(),
    ));
    let ct = s.encrypt(&oaep, rsa_public, DATA).unwrap();
    assert_eq!(s.decrypt(&oaep, rsa, &ct).unwrap(), DATA);
}

/// Searches, attribute reads, a change that re-seals, a copy and a
/// generated key.
fn search_and_change(s: &Session) {
    let keys = s
        .find_objects(&[Attribute::Sensitive(true), Attribute::Token(true)])
        .unwrap();
    assert_eq!(keys.len(), 5);
    for k in keys {
        let read = s
            .get_attributes(
                k,
                &[
                    AttributeType::Label,
                    AttributeType::Value,
                    AttributeType::PrivateExponent,
                    AttributeType::EcPoint,
                    AttributeType::UniqueId,
                ],
            )
            .unwrap();
        assert!(!read.iter().any(|a| matches!(a, Attribute::Value(_))));
    }
    let hmac = find(s, "hmac");
    s.update_attributes(hmac, &[Attribute::Id(b"changed".to_vec())])
        .unwrap();
    let aes = find(s, "aes");
    let copy = s
        .copy_object(aes, &[Attribute::Label(b"aes-copy".to_vec())])
        .unwrap();
    s.encrypt(&Mechanism::AesEcb, copy, &[0u8; 16]).unwrap();
    s.destroy_object(copy).unwrap();
    let generated = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Token(true),
                Attribute::Encrypt(true),
            ],
        )
        .unwrap();
    s.encrypt(&Mechanism::AesEcb, generated, &[0u8; 16])
        .unwrap();
    s.destroy_object(generated).unwrap();
}

/// The scanning child, `MEMORY_SCAN=name=masked:mask;...;plain:name=hex`
/// (see the module documentation). Every scan after a `C_Logout` or
/// `C_Finalize` must find nothing.
fn scan_worker(spec: &str) {
    let mut vault = Vault::new();
    let mut plain = std::collections::HashMap::new();
    let mut secrets = Vec::new();
    let mut masked = std::collections::HashMap::new();
    for item in spec.split(';') {
        let (name, value) = item.split_once('=').unwrap();
        if let Some(name) = name.strip_prefix("plain:") {
            plain.insert(name.to_string(), unhex(value));
        } else {
            secrets.push(vault.unmask(name, value));
            masked.insert(name.to_string(), value.to_string());
        }
    }
    let secret = |name: &str| -> Secret {
        secrets
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no secret {name}"))
            .clone()
    };
    let (user_pin, new_pin, so_pin) =
        (secret("user PIN"), secret("new user PIN"), secret("SO PIN"));
    let mut all = secrets.clone();
    let (token_key, kek) = keys_of("user", &masked["user PIN"]);
    all.push(vault.unmask("token key", &token_key));
    all.push(vault.unmask("key of the user PIN", &kek));
    let (_, kek) = keys_of("so", &masked["SO PIN"]);
    all.push(vault.unmask("key of the SO PIN", &kek));

    let mut left = Vec::new();
    let mut check = |vault: &mut Vault, all: &[Secret], when: &str| -> Vec<String> {
        let needles: Vec<Secret> = all.iter().flat_map(|s| vault.needles(s)).collect();
        let found = scan(vault, &needles);
        for f in &found {
            println!("{when}: {f}");
        }
        if when != "logged in" {
            left.extend(found.iter().map(|f| format!("{when}: {f}")));
        }
        found
    };
    let rsa_public_template = || {
        vec![
            Attribute::Class(cryptoki::object::ObjectClass::PUBLIC_KEY),
            Attribute::KeyType(cryptoki::object::KeyType::RSA),
            Attribute::Token(false),
            Attribute::Private(false),
            Attribute::Encrypt(true),
            Attribute::Modulus(plain["rsa-n"].clone()),
            Attribute::PublicExponent(plain["rsa-e"].clone()),
        ]
    };

    // A fresh process: every phase between a C_Login and a C_Logout.
    let (p, slot) = start();
    let s = p.open_rw_session(slot).unwrap();
    login(&s, CKU_USER, &vault, &user_pin);
    Template::key("aes", CKO_SECRET_KEY, CKK_AES, true)
        .bool(CKA_ENCRYPT, true)
        .bool(CKA_DECRYPT, true)
        .bool(CKA_SIGN, true)
        .secret(CKA_VALUE, &vault, &secret("aes"))
        .create(&s);
    Template::key("hmac", CKO_SECRET_KEY, CKK_GENERIC_SECRET, true)
        .bool(CKA_SIGN, true)
        .bool(CKA_VERIFY, true)
        .secret(CKA_VALUE, &vault, &secret("hmac"))
        .create(&s);
    Template::key("ec", CKO_PRIVATE_KEY, CKK_EC, true)
        .bool(CKA_SIGN, true)
        .bytes(CKA_EC_PARAMS, P256)
        .secret(CKA_VALUE, &vault, &secret("ec"))
        .create(&s);
    Template::key("ed25519", CKO_PRIVATE_KEY, CKK_EC_EDWARDS, true)
        .bool(CKA_SIGN, true)
        .bytes(CKA_EC_PARAMS, ED25519)
        .secret(CKA_VALUE, &vault, &secret("ed25519"))
        .create(&s);
    Template::key("rsa", CKO_PRIVATE_KEY, CKK_RSA, true)
        .bool(CKA_SIGN, true)
        .bool(CKA_DECRYPT, true)
        .bytes(CKA_MODULUS, &plain["rsa-n"])
        .bytes(CKA_PUBLIC_EXPONENT, &plain["rsa-e"])
        .secret(CKA_PRIVATE_EXPONENT, &vault, &secret("rsa-d"))
        .secret(CKA_PRIME_1, &vault, &secret("rsa-p"))
        .secret(CKA_PRIME_2, &vault, &secret("rsa-q"))
        .create(&s);
    // Each key used once right after the sealing: its value is unsealed
    // with the token key and parsed.
    for (label, mech) in [
        ("hmac", Mechanism::Sha256Hmac),
        (
            "ed25519",
            Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure)),
        ),
        ("ec", Mechanism::EcdsaSha256),
        ("aes", Mechanism::AesCMac),
    ] {
        s.sign(&mech, find(&s, label), DATA).unwrap();
    }
    // Keys sealed, changed (sealed again) and loaded (unsealed, parsed)
    // in turn: each step on a stack the previous ones left.
    for i in 0..8u8 {
        let k = s
            .generate_key(
                &Mechanism::GenericSecretKeyGen,
                &[
                    Attribute::ValueLen(32.into()),
                    Attribute::Token(true),
                    Attribute::Sign(true),
                    Attribute::Label(vec![b'g', i]),
                ],
            )
            .unwrap();
        s.sign(&Mechanism::Sha256Hmac, k, DATA).unwrap();
        s.update_attributes(k, &[Attribute::Id(vec![i])]).unwrap();
        s.sign(&Mechanism::Sha256Hmac, k, DATA).unwrap();
        s.destroy_object(k).unwrap();
    }
    s.logout().unwrap();
    check(&mut vault, &all, "after C_CreateObject and a use, C_Logout");

    login(&s, CKU_USER, &vault, &user_pin);
    Template::key("aes-session", CKO_SECRET_KEY, CKK_AES, false)
        .bool(CKA_ENCRYPT, true)
        .secret(CKA_VALUE, &vault, &secret("aes-session"))
        .create(&s);
    s.encrypt(&Mechanism::AesEcb, find(&s, "aes-session"), &[0u8; 32])
        .unwrap();
    use_aes_and_hmac(&s);
    // The scan finds what is in use.
    let in_use = check(&mut vault, &all, "logged in");
    for name in ["token key", "aes "] {
        assert!(
            in_use.iter().any(|f| f.starts_with(name)),
            "the scan finds the {name} in use"
        );
    }
    s.logout().unwrap();
    check(&mut vault, &all, "after AES and HMAC, C_Logout");

    let rsa_public = s.create_object(&rsa_public_template()).unwrap();
    login(&s, CKU_USER, &vault, &user_pin);
    use_private_keys(&s, rsa_public);
    s.logout().unwrap();
    check(&mut vault, &all, "after ECDSA, Ed25519 and RSA, C_Logout");

    login(&s, CKU_USER, &vault, &user_pin);
    search_and_change(&s);
    s.logout().unwrap();
    check(&mut vault, &all, "after searches and changes, C_Logout");

    // Operations initialised and never finished, and a MAC's state saved
    // (`C_GetOperationState` keeps a copy, with its key, in the module).
    login(&s, CKU_USER, &vault, &user_pin);
    let other = p.open_rw_session(slot).unwrap();
    other
        .sign_init(&Mechanism::Sha256Hmac, find(&s, "hmac"))
        .unwrap();
    other.sign_update(DATA).unwrap();
    save_state(&other);
    drop(other);
    s.sign_init(&Mechanism::EcdsaSha256, find(&s, "ec"))
        .unwrap();
    s.encrypt_init(&Mechanism::AesCbcPad([2; 16]), find(&s, "aes"))
        .unwrap();
    s.logout().unwrap();
    check(&mut vault, &all, "after operations left active, C_Logout");
    drop(s);
    p.finalize().unwrap();
    check(&mut vault, &all, "after C_Finalize");

    // A restart: the token objects come back from the file and are used
    // again; the user changes the PIN, the SO sets a new one.
    let (p, slot) = start();
    let s = p.open_rw_session(slot).unwrap();
    let rsa_public = s.create_object(&rsa_public_template()).unwrap();
    login(&s, CKU_USER, &vault, &user_pin);
    use_aes_and_hmac(&s);
    use_private_keys(&s, rsa_public);
    set_pin(&s, &vault, &user_pin, &new_pin);
    let (_, kek) = keys_of("user", &masked["new user PIN"]);
    all.push(vault.unmask("key of the new user PIN", &kek));
    s.logout().unwrap();
    check(&mut vault, &all, "after a restart, C_SetPIN, C_Logout");

    login(&s, CKU_SO, &vault, &so_pin);
    let reset_pin = secret("reset user PIN");
    init_pin(&s, &vault, &reset_pin);
    let (_, kek) = keys_of("user", &masked["reset user PIN"]);
    all.push(vault.unmask("key of the reset user PIN", &kek));
    s.logout().unwrap();
    check(&mut vault, &all, "after the SO's C_InitPIN, C_Logout");
    drop(s);
    p.finalize().unwrap();
    check(&mut vault, &all, "after a restart, C_Finalize");

    assert!(left.is_empty(), "copies left:\n{}", left.join("\n"));
    println!("scan-clean");
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
