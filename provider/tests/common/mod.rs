//! Shared harness for the integration tests: loads the built
//! `libdalek_pkcs11.so` with the `cryptoki` crate (and raw through its
//! function list), exactly as a consumer would, each test against a fresh
//! token directory.
#![allow(dead_code)]

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;
use cryptoki_sys::{CK_FUNCTION_LIST, CK_FUNCTION_LIST_3_0};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

pub const SO_PIN: &str = "87654321";
pub const USER_PIN: &str = "1234";

/// The module is process-global state: tests in one binary take turns.
static SERIAL: Mutex<()> = Mutex::new(());

/// Path of the built module. `cargo test` builds the cdylib next to this
/// test binary in `target/<profile>/deps/` (without copying it up to
/// `target/<profile>/`), so that is the fresh one.
pub fn module_path() -> PathBuf {
    if let Some(p) = std::env::var_os("DALEK_PKCS11_MODULE") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test binary path");
    let path = exe
        .parent()
        .expect("target/<profile>/deps")
        .join("libdalek_pkcs11.so");
    assert!(path.exists(), "{} not built", path.display());
    path
}

/// True when the module under test is the `aws-lc` build (its
/// `C_GetInfo` library description says so): ECDSA signatures are then
/// randomized rather than RFC 6979.
pub fn is_aws_lc(f: &Fixture) -> bool {
    f.p()
        .get_library_info()
        .expect("C_GetInfo")
        .library_description()
        .contains("aws-lc")
}

/// The key-management policy this test process was started with
/// (`DALEK_PKCS11_KEY_POLICY`), else `default`.
pub fn process_policy() -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| {
        std::env::var("DALEK_PKCS11_KEY_POLICY").unwrap_or_else(|_| "default".into())
    })
}

/// The raw function list of the module (same library instance as cryptoki's).
pub fn raw() -> &'static CK_FUNCTION_LIST {
    static LIST: OnceLock<usize> = OnceLock::new();
    let addr = *LIST.get_or_init(|| {
        // SAFETY: loading the module under test; it stays loaded for the process.
        let lib = unsafe { cryptoki_sys::Pkcs11::new(module_path()) }.expect("load module");
        let mut list: *mut CK_FUNCTION_LIST = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        let rv = unsafe { lib.C_GetFunctionList(&mut list) };
        assert_eq!(rv, cryptoki_sys::CKR_OK);
        std::mem::forget(lib);
        list as usize
    });
    // SAFETY: the module keeps its function list alive while loaded.
    unsafe { &*(addr as *const CK_FUNCTION_LIST) }
}

/// The 3.0 function list of the module (`C_GetInterface("PKCS 11", 3.0)`;
/// the same library instance as cryptoki's), for the functions the 2.40
/// list lacks (the message-based ones, `C_SessionCancel`).
pub fn raw30() -> &'static CK_FUNCTION_LIST_3_0 {
    use cryptoki_sys::{CK_INTERFACE, CK_VERSION, CKR_OK};
    static LIST: OnceLock<usize> = OnceLock::new();
    let addr = *LIST.get_or_init(|| {
        // SAFETY: loading the module under test and asking for its 3.0
        // interface with valid pointers; it stays loaded for the process.
        unsafe {
            let lib = cryptoki_sys::Pkcs11::new(module_path()).expect("load module");
            let mut name = *b"PKCS 11\0";
            let mut v = CK_VERSION { major: 3, minor: 0 };
            let mut iface: *mut CK_INTERFACE = std::ptr::null_mut();
            assert_eq!(
                lib.C_GetInterface(name.as_mut_ptr(), &mut v, &mut iface, 0),
                CKR_OK
            );
            std::mem::forget(lib);
            (*iface).pFunctionList as usize
        }
    });
    // SAFETY: the module keeps its function lists alive while loaded.
    unsafe { &*(addr as *const CK_FUNCTION_LIST_3_0) }
}

/// One test's view of the module: a fresh token directory, the module
/// initialised through cryptoki.
pub struct Fixture {
    pub pkcs11: Option<Pkcs11>,
    pub dir: tempfile::TempDir,
    /// `DALEK_PKCS11_STORAGE` of this fixture (its workers get it too).
    pub storage: String,
    _serial: MutexGuard<'static, ()>,
}

pub fn pin(s: &str) -> AuthPin {
    AuthPin::new(s.into())
}

impl Fixture {
    pub fn new() -> Fixture {
        Self::with_storage("sqlite")
    }

    /// A fixture on `storage`, under the key-management policy the test
    /// process was started with (`DALEK_PKCS11_KEY_POLICY`, so a whole
    /// suite can be run under `strict`), else `default`.
    pub fn with_storage(storage: &str) -> Fixture {
        Self::with_settings(storage, None)
    }

    /// A fixture whose module runs under the key-management policy
    /// `policy` (`default` or `strict`, `DALEK_PKCS11_KEY_POLICY`).
    pub fn with_policy(policy: &str) -> Fixture {
        Self::with_settings("sqlite", Some(policy))
    }

    fn with_settings(storage: &str, policy: Option<&str>) -> Fixture {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // Read (under the lock) before the first fixture changes the variable.
        let inherited = process_policy();
        let policy = policy.unwrap_or(inherited);
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: tests in this binary are serialised by SERIAL; no other
        // thread reads the environment while it changes.
        unsafe {
            std::env::set_var("DALEK_PKCS11_TOKEN_DIR", dir.path().join("tokens"));
            std::env::set_var("DALEK_PKCS11_STORAGE", storage);
            std::env::set_var("DALEK_PKCS11_KEY_POLICY", policy);
            std::env::remove_var("DALEK_PKCS11_CONFIG");
        }
        let mut f = Fixture {
            pkcs11: None,
            dir,
            storage: storage.to_string(),
            _serial: serial,
        };
        f.start();
        f
    }

    /// Initialises the module (again).
    pub fn start(&mut self) {
        let p = Pkcs11::new(module_path()).expect("load module");
        p.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
            .expect("C_Initialize");
        self.pkcs11 = Some(p);
    }

    /// `C_Finalize`: the module closes its token databases.
    pub fn stop(&mut self) {
        if let Some(p) = self.pkcs11.take() {
            p.finalize().expect("C_Finalize");
        }
    }

    /// `C_Finalize` then `C_Initialize`: what a new process would see.
    pub fn restart(&mut self) {
        self.pkcs11.take().unwrap().finalize().expect("C_Finalize");
        self.start();
    }

    pub fn p(&self) -> &Pkcs11 {
        self.pkcs11.as_ref().unwrap()
    }

    /// The slot whose token is not initialised.
    pub fn free_slot(&self) -> Slot {
        let p = self.p();
        *p.get_all_slots()
            .unwrap()
            .iter()
            .find(|s| !p.get_token_info(**s).unwrap().token_initialized())
            .expect("a free slot")
    }

    /// Creates a token with the standard PINs; returns its slot.
    pub fn token(&self, label: &str) -> Slot {
        let slot = self.free_slot();
        self.p()
            .init_token(slot, &pin(SO_PIN), label)
            .expect("C_InitToken");
        let s = self.p().open_rw_session(slot).unwrap();
        s.login(UserType::So, Some(&pin(SO_PIN))).unwrap();
        s.init_pin(&pin(USER_PIN)).unwrap();
        s.logout().unwrap();
        slot
    }

    /// The slot of the token labelled `label` (made elsewhere, e.g. by
    /// dalek-pkcs11-util).
    pub fn slot_labelled(&self, label: &str) -> Slot {
        let p = self.p();
        *p.get_slots_with_token()
            .unwrap()
            .iter()
            .find(|s| p.get_token_info(**s).unwrap().label() == label)
            .unwrap_or_else(|| panic!("no token labelled {label}"))
    }

    /// A read/write session logged in as the user.
    pub fn user(&self, slot: Slot) -> Session {
        let s = self.p().open_rw_session(slot).unwrap();
        s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
        s
    }
}

impl Fixture {
    /// This test binary again as a second process on this fixture's token
    /// directory: it runs the ignored test `worker`, which reads its role
    /// from the environment variable `role_var` (set to `spec`). Output is
    /// piped.
    pub fn spawn_worker(&self, role_var: &str, spec: &str) -> std::process::Child {
        worker_command()
            .env(role_var, spec)
            .env("DALEK_PKCS11_MODULE", module_path())
            .env("DALEK_PKCS11_TOKEN_DIR", self.dir.path().join("tokens"))
            .env("DALEK_PKCS11_STORAGE", &self.storage)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// This test binary again, running only its ignored test `worker` (a
/// second process for a test; the worker reads its role from the
/// environment).
pub fn worker_command() -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args([
        "--ignored",
        "--exact",
        "worker",
        "--nocapture",
        "--test-threads",
        "1",
        "-q",
    ]);
    c
}

/// Waits for a worker; its standard output. A worker that failed fails
/// the test with its output.
pub fn finish_worker(child: std::process::Child) -> String {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "worker failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// In a worker process: the module initialised, and the slot of the token
/// labelled `label`. The token file may be locked by another worker at the
/// instant of this process's first scan; the module then lists it at a
/// later `C_GetSlotList` (`Module::rescan`), and a PostgreSQL server
/// restarted under a soak takes a moment to answer, so the search is
/// repeated for up to ten seconds, and a failure names what was seen.
pub fn worker_module(label: &str) -> (Pkcs11, Slot) {
    let p = Pkcs11::new(module_path()).unwrap();
    p.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen.clear();
        for s in p.get_slots_with_token().unwrap() {
            match p.get_token_info(s) {
                Ok(t) if t.label() == label => return (p, s),
                Ok(t) => seen.push(format!("{}: '{}'", s.id(), t.label())),
                Err(e) => seen.push(format!("{}: {e}", s.id())),
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("no token '{label}' (slots: {})", seen.join(", "));
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(p) = self.pkcs11.take() {
            let _ = p.finalize();
        }
    }
}

/// Limits the size every file of this process may reach (`RLIMIT_FSIZE`):
/// at 0 no write to the token's files succeeds, the way a full disk refuses
/// them (and unlike file modes it binds root too); `libc::RLIM_INFINITY`
/// lifts it. For worker processes.
pub fn limit_file_size(bytes: u64) {
    let lim = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain system calls on this process; SIGXFSZ is ignored so a
    // refused write is an error (EFBIG), not the end of the process.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
}

/// xorshift64*: a small deterministic generator, so that a failure can be
/// reproduced from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Bytes from a hex string (the vector files' encoding).
pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// The `CK_RV` inside a cryptoki error.
pub fn rv_of(e: cryptoki::error::Error) -> cryptoki::error::RvError {
    match e {
        cryptoki::error::Error::Pkcs11(rv, _) => rv,
        other => panic!("not a PKCS#11 error: {other}"),
    }
}

/// Asserts that `r` failed with the given `RvError` variant.
#[macro_export]
macro_rules! assert_rv {
    ($r:expr, $rv:ident) => {
        match $r {
            Ok(_) => panic!("expected {} but the call succeeded", stringify!($rv)),
            Err(e) => assert_eq!($crate::common::rv_of(e), cryptoki::error::RvError::$rv),
        }
    };
}

/// A 32-byte session generic secret allowed to sign and verify (MAC).
pub fn hmac_key(s: &cryptoki::session::Session) -> cryptoki::object::ObjectHandle {
    use cryptoki::object::Attribute;
    s.generate_key(
        &cryptoki::mechanism::Mechanism::GenericSecretKeyGen,
        &[
            Attribute::ValueLen(32.into()),
            Attribute::Token(false),
            Attribute::Sign(true),
            Attribute::Verify(true),
        ],
    )
    .unwrap()
}

/// Multi-part through cryptoki after an init, in chunks of `chunk` bytes.
pub fn cipher_parts(
    s: &cryptoki::session::Session,
    encrypt: bool,
    data: &[u8],
    chunk: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    for part in data.chunks(chunk) {
        out.extend(if encrypt {
            s.encrypt_update(part).unwrap()
        } else {
            s.decrypt_update(part).unwrap()
        });
    }
    out.extend(if encrypt {
        s.encrypt_final().unwrap()
    } else {
        s.decrypt_final().unwrap()
    });
    out
}

/// `CKA_EC_POINT` of the object `h`, as the module returns it.
pub fn ec_point(s: &cryptoki::session::Session, h: cryptoki::object::ObjectHandle) -> Vec<u8> {
    match s
        .get_attributes(h, &[cryptoki::object::AttributeType::EcPoint])
        .unwrap()
        .pop()
    {
        Some(cryptoki::object::Attribute::EcPoint(p)) => p,
        other => panic!("{other:?}"),
    }
}

/// Damages the SQLite index `index` of the closed token file `db` the way
/// a flipped bit on disk can: its root page becomes an empty leaf, so the
/// table keeps every row (the records, whose MACs cover them, are whole)
/// while the index has lost its entries — what SQLite's own
/// `integrity_check` sees and the record MACs cannot. Panics unless the
/// check then fails.
pub fn damage_index(db: &std::path::Path, index: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let root: i64 = conn
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
            [index],
            |r| r.get(0),
        )
        .unwrap();
    let page: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    drop(conn);
    let mut bytes = std::fs::read(db).unwrap();
    let at = ((root - 1) * page) as usize;
    bytes[at] = 0x0a; // a leaf page of an index b-tree
    bytes[at + 1..at + 8].fill(0); // no free block, no cells
    bytes[at + 5] = (page >> 8) as u8; // its content area starts at the end
    bytes[at + 6] = page as u8;
    std::fs::write(db, bytes).unwrap();
    let conn = rusqlite::Connection::open(db).unwrap();
    let first: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_ne!(first, "ok", "the damage must be SQLite's to see");
}

/// `C_EncryptInit` / `C_DecryptInit`.
pub type CipherInitFn = unsafe extern "C" fn(
    cryptoki_sys::CK_SESSION_HANDLE,
    *mut cryptoki_sys::CK_MECHANISM,
    cryptoki_sys::CK_OBJECT_HANDLE,
) -> cryptoki_sys::CK_RV;
/// `C_Encrypt`, `C_EncryptUpdate` and their decrypting twins.
pub type CipherDataFn = unsafe extern "C" fn(
    cryptoki_sys::CK_SESSION_HANDLE,
    *mut u8,
    cryptoki_sys::CK_ULONG,
    *mut u8,
    *mut cryptoki_sys::CK_ULONG,
) -> cryptoki_sys::CK_RV;
/// `C_EncryptFinal` / `C_DecryptFinal`.
pub type CipherFinalFn = unsafe extern "C" fn(
    cryptoki_sys::CK_SESSION_HANDLE,
    *mut u8,
    *mut cryptoki_sys::CK_ULONG,
) -> cryptoki_sys::CK_RV;

/// The raw functions of one cipher direction: init, single-part, update,
/// final.
pub fn cipher_fns(encrypt: bool) -> (CipherInitFn, CipherDataFn, CipherDataFn, CipherFinalFn) {
    let l = raw();
    if encrypt {
        (
            l.C_EncryptInit.unwrap(),
            l.C_Encrypt.unwrap(),
            l.C_EncryptUpdate.unwrap(),
            l.C_EncryptFinal.unwrap(),
        )
    } else {
        (
            l.C_DecryptInit.unwrap(),
            l.C_Decrypt.unwrap(),
            l.C_DecryptUpdate.unwrap(),
            l.C_DecryptFinal.unwrap(),
        )
    }
}

/// A `CK_AES_CTR_PARAMS` as the bytes of a mechanism parameter.
pub fn ctr_param_bytes(counter_bits: cryptoki_sys::CK_ULONG, cb: [u8; 16]) -> Vec<u8> {
    let p = cryptoki_sys::CK_AES_CTR_PARAMS {
        ulCounterBits: counter_bits,
        cb,
    };
    // SAFETY: a plain C struct, viewed as its bytes.
    unsafe {
        std::slice::from_raw_parts(
            (&p as *const cryptoki_sys::CK_AES_CTR_PARAMS).cast::<u8>(),
            std::mem::size_of::<cryptoki_sys::CK_AES_CTR_PARAMS>(),
        )
    }
    .to_vec()
}

/// A session secret key made by `keygen` (of `len` bytes when given) that
/// encrypts and decrypts.
pub fn cipher_key(
    s: &cryptoki::session::Session,
    keygen: cryptoki::mechanism::Mechanism,
    len: Option<u64>,
) -> cryptoki::object::ObjectHandle {
    use cryptoki::object::Attribute;
    let mut t = vec![
        Attribute::Token(false),
        Attribute::Encrypt(true),
        Attribute::Decrypt(true),
    ];
    if let Some(n) = len {
        t.push(Attribute::ValueLen(n.into()));
    }
    s.generate_key(&keygen, &t).unwrap()
}

/// `C_DeriveKey` with a raw mechanism (cryptoki has no `CKM_*_ENCRYPT_DATA`
/// but AES-CBC's) and a template of `(type, value)` pairs.
pub fn raw_derive_with(
    s: &cryptoki::session::Session,
    mech: cryptoki_sys::CK_MECHANISM_TYPE,
    param: &mut [u8],
    base: cryptoki::object::ObjectHandle,
    template: &mut [(cryptoki_sys::CK_ATTRIBUTE_TYPE, Vec<u8>)],
) -> Result<cryptoki::object::ObjectHandle, cryptoki_sys::CK_RV> {
    use cryptoki_sys::*;
    let mut attrs: Vec<CK_ATTRIBUTE> = template
        .iter_mut()
        .map(|(ty, v)| CK_ATTRIBUTE {
            type_: *ty,
            pValue: v.as_mut_ptr().cast(),
            ulValueLen: v.len() as CK_ULONG,
        })
        .collect();
    let mut mechanism = CK_MECHANISM {
        mechanism: mech,
        pParameter: param.as_mut_ptr().cast(),
        ulParameterLen: param.len() as CK_ULONG,
    };
    let mut out = 0;
    // SAFETY: every pointer is live for its stated length.
    let rv = unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            &mut mechanism,
            base.handle(),
            attrs.as_mut_ptr(),
            attrs.len() as CK_ULONG,
            &mut out,
        )
    };
    if rv == CKR_OK {
        // SAFETY: a handle the module just returned.
        Ok(unsafe { cryptoki::object::ObjectHandle::new_from_raw(out) })
    } else {
        Err(rv)
    }
}

/// A `CK_ULONG` attribute value.
pub fn ulong_bytes(v: cryptoki_sys::CK_ULONG) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

/// `CK_DES_CBC_ENCRYPT_DATA_PARAMS` (with `iv`) or
/// `CK_KEY_DERIVATION_STRING_DATA` (without) over `data`, as the bytes of
/// the parameter for [`raw_derive_with`].
pub fn des_encrypt_data_param(iv: Option<[u8; 8]>, data: &mut [u8]) -> Vec<u8> {
    use cryptoki_sys::*;
    fn bytes_of<T>(v: &T) -> Vec<u8> {
        // SAFETY: viewing a plain C struct as bytes.
        unsafe {
            std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>())
        }
        .to_vec()
    }
    match iv {
        Some(iv) => bytes_of(&CK_DES_CBC_ENCRYPT_DATA_PARAMS {
            iv,
            pData: data.as_mut_ptr(),
            length: data.len() as CK_ULONG,
        }),
        None => bytes_of(&CK_KEY_DERIVATION_STRING_DATA {
            pData: data.as_mut_ptr(),
            ulLen: data.len() as CK_ULONG,
        }),
    }
}

/// Runs `script` with python3 (arguments after it in `sys.argv[1:]`) and
/// returns its stdout's whitespace-separated words: for cross-checks
/// against python `cryptography` (OpenSSL), an implementation nobody here
/// wrote. Panics if python3 or the package is missing
/// (`pip install cryptography`).
pub fn python_cryptography(script: &str, args: &[&str]) -> Vec<String> {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e})"));
    assert!(
        out.status.success(),
        "python3 failed (is `cryptography` installed?): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// True when python3 with the `cryptography` package is installed (the
/// cross-checks against it skip, saying so, when not).
pub fn have_python_cryptography() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import cryptography"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `provider/tests/interop/python/crosscheck_sym.py` with `args`,
/// the JSON lines `cases` on its stdin; asserts it succeeded and returns
/// its output lines.
pub fn crosscheck_sym(args: &[&str], cases: &[String]) -> Vec<String> {
    use std::io::Write;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/interop/python/crosscheck_sym.py"
    );
    let mut child = std::process::Command::new("python3")
        .arg(script)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(cases.join("\n").as_bytes())
        .expect("write the cases");
    let out = child.wait_with_output().expect("python3 output");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    text.lines().map(str::to_string).collect()
}

/// The module's 3.2 function list.
pub fn list_3_2() -> &'static cryptoki_sys::CK_FUNCTION_LIST_3_2 {
    // SAFETY: loading the module under test (it stays loaded); valid
    // pointers; the module's interface table and lists are static.
    unsafe {
        let lib = cryptoki_sys::Pkcs11::new(module_path()).unwrap();
        let mut iface: *mut cryptoki_sys::CK_INTERFACE = std::ptr::null_mut();
        let mut v = cryptoki_sys::CK_VERSION { major: 3, minor: 2 };
        let mut name = *b"PKCS 11\0";
        assert_eq!(
            lib.C_GetInterface(name.as_mut_ptr(), &mut v, &mut iface, 0),
            cryptoki_sys::CKR_OK
        );
        std::mem::forget(lib);
        &*((*iface).pFunctionList as *const cryptoki_sys::CK_FUNCTION_LIST_3_2)
    }
}

/// `C_GenerateKey` with `mech` and `template`, the key restricted to the
/// mechanisms `allowed` (`CKA_ALLOWED_MECHANISMS`, spelled raw: cryptoki
/// names few of the derivation mechanisms). A victim so restricted cannot
/// derive a copy of its own value (the copy would take any usage), so the
/// keys derived from it stay always sensitive (docs/SECURITY.md, "Derived
/// keys").
pub fn generate_allowed(
    s: &Session,
    mech: &cryptoki::mechanism::Mechanism,
    template: &[cryptoki::object::Attribute],
    allowed: &[cryptoki_sys::CK_MECHANISM_TYPE],
) -> Result<cryptoki::object::ObjectHandle, cryptoki_sys::CK_RV> {
    use cryptoki_sys::*;
    let mut raw_mech = CK_MECHANISM::from(mech);
    let mut list: Vec<CK_MECHANISM_TYPE> = allowed.to_vec();
    let mut t: Vec<CK_ATTRIBUTE> = template.iter().map(CK_ATTRIBUTE::from).collect();
    t.push(CK_ATTRIBUTE {
        type_: CKA_ALLOWED_MECHANISMS,
        pValue: list.as_mut_ptr().cast(),
        ulValueLen: std::mem::size_of_val(list.as_slice()) as CK_ULONG,
    });
    let mut handle = CK_INVALID_HANDLE;
    // SAFETY: the mechanism, template and list outlive the call; the
    // template's values point into `template` and `list`, both alive.
    let rv = unsafe {
        raw().C_GenerateKey.unwrap()(
            s.handle(),
            &mut raw_mech,
            t.as_mut_ptr(),
            t.len() as CK_ULONG,
            &mut handle,
        )
    };
    if rv != CKR_OK {
        return Err(rv);
    }
    // SAFETY: a handle the module returned.
    Ok(unsafe { cryptoki::object::ObjectHandle::new_from_raw(handle) })
}
