//! Stack hygiene (docs/SECURITY.md, "Memory hygiene"): what a secret left
//! on the stack is overwritten before anything else can pick it up.
//!
//! Key schedules, AES round keys broadcast for the vector units, parsed
//! key temporaries and PIN derivations live in stack frames that nothing
//! zeroizes when their function returns. Those bytes do not stay put: a
//! later call that builds a value on the same stack and moves it to the
//! heap copies the parts of the value it never wrote (an enum's unused
//! variant space, padding) along with it. That is how a copy of the token
//! key ended up in the heap block of an object's parsed key after
//! `C_Logout`. So the stack a secret touched is wiped right after the code
//! that touched it returns ([`wiping`]), and every exported function but
//! the data calls wipes the stack its call used before it returns
//! (`ffi::util::guard`); the data calls (`ffi::util::guard_hot`) leave it
//! for the thread's next other call, which wipes it before it runs.

/// Bytes of stack wiped below a frame. Measured below an exported
/// function's frame by `tests/stack_hygiene.rs` (test and release builds
/// alike, with the wipes turned off): most calls use at most 14 KiB; the
/// deepest a normal wipe covers are a first ECDH derive with a secp256k1
/// key (42 KiB, the key parsed in pure Rust) and with a P-256 key (40 KiB,
/// most of it in the [`wiping_deep`] parse of its key-agreement form). A
/// host thread needs this much stack free below its call into the module.
pub const WIPE_LEN: usize = 48 * 1024;

/// Bytes of stack wiped below the functions that make secret keys or
/// unwrapped keys (`ffi::util::guard_deep`) and below the code that runs in
/// [`wiping_deep`] (key-pair generation but Ed25519 and aws-lc's EC and X25519, the
/// parse of a key's key-agreement form): secp256k1 key generation reaches
/// 70 KiB, a P-521 key's parse into aws-lc's key-agreement form 131 KiB.
pub const DEEP_WIPE_LEN: usize = 192 * 1024;

/// Overwrites [`WIPE_LEN`] bytes of stack below the caller's frame: the
/// frames of the functions it called, which are dead now. The caller's own
/// frame is not touched, so the code that handled a secret must have run
/// in a callee (see [`wiping`]).
#[inline(never)]
pub fn wipe_stack() {
    zeroize::zeroize_stack::<WIPE_LEN>();
}

/// [`wipe_stack`] over [`DEEP_WIPE_LEN`] bytes, for the calls that make
/// keys.
#[inline(never)]
pub fn wipe_stack_deep() {
    zeroize::zeroize_stack::<DEEP_WIPE_LEN>();
}

/// Bytes of stack wiped below the post-quantum computations that handle
/// secrets, whatever call runs them (data calls included):
/// - ML-DSA (`mechanisms::mldsa`: key expansion from the seed, signing,
///   verification): with only the other wipes, ML-DSA-87 generation,
///   import, unwrap and a first signature reached 203–208 KiB below the
///   caller in a test build (tests/stack_hygiene.rs), past
///   [`DEEP_WIPE_LEN`];
/// - SLH-DSA (`mechanisms::slhdsa::key`: key generation, the import check,
///   signing): the crate builds a signature (up to 49,856 bytes,
///   SLH-DSA-256f) and its parts on the stack; with this wipe shrunk to
///   4 KiB, a signature reached 220 KiB with SHAKE-256f and 127 KiB with
///   SHA2-256s;
/// - ML-KEM (`mechanisms::mlkem::key`: key expansion, the pure-Rust build's
///   encapsulation and decapsulation): ML-KEM-1024 reached 193–199 KiB.
pub const PQC_WIPE_LEN: usize = 256 * 1024;

/// [`wiping`] over [`PQC_WIPE_LEN`] bytes, around each post-quantum
/// computation with a secret.
#[inline(never)]
pub fn wiping_pqc<R>(f: impl FnOnce() -> R) -> R {
    let r = below(f);
    zeroize::zeroize_stack::<PQC_WIPE_LEN>();
    r
}

/// Runs `f` in a frame of its own, below this one, so that nothing `f`
/// computes (inlined or not) lives in the caller's frame.
#[inline(never)]
pub fn below<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Runs `f`, which handles a secret, below this frame, then wipes the
/// stack it used: its result is all that is left of it.
#[inline(never)]
pub fn wiping<R>(f: impl FnOnce() -> R) -> R {
    let r = below(f);
    wipe_stack();
    r
}

/// [`wiping`] over [`DEEP_WIPE_LEN`] bytes, for code that reaches deeper
/// than a normal wipe covers when the call that runs it wipes only that.
#[inline(never)]
pub fn wiping_deep<R>(f: impl FnOnce() -> R) -> R {
    let r = below(f);
    wipe_stack_deep();
    r
}
