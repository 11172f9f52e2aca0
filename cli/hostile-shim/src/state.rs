//! The loaded shim: the real module's list, the list handed out, the
//! configuration, the per-function call counters, and what happens on entry
//! to a wrapped function (count it, maybe crash, eat memory or hang, log it).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use cryptoki_sys::*;

use crate::config::{After, Config, CrashKind};
use crate::names::FUNCTIONS;

/// The `CK_INTERFACE` `C_GetInterface` hands out, in a static (its pointers
/// point at static data of the shim).
pub struct Interface(pub CK_INTERFACE);

// SAFETY: the interface's pointers point at the shim's static name and
// function list, which are never written after the shim is loaded.
unsafe impl Sync for Interface {}
// SAFETY: as above.
unsafe impl Send for Interface {}

/// The shim, loaded once.
pub struct Shim {
    /// The list handed to the application (2.40).
    pub list: CK_FUNCTION_LIST,
    /// The real module's list.
    pub real: CK_FUNCTION_LIST,
    /// What to do.
    pub conf: Config,
    /// `P11_HOSTILE_COUNT_FILE`, opened for appending.
    pub count_file: Option<Mutex<std::fs::File>>,
    /// The real module's `C_GetInterface`, for interfaces other than "PKCS 11".
    pub real_get_interface: Option<GetInterfaceFn>,
    /// Keeps the real module loaded.
    pub _lib: libloading::Library,
}

/// `C_GetInterface` (PKCS#11 3.0 §5.4).
pub type GetInterfaceFn = unsafe extern "C" fn(
    *mut CK_UTF8CHAR,
    *mut CK_VERSION,
    *mut *mut CK_INTERFACE,
    CK_FLAGS,
) -> CK_RV;

/// The shim, or why it could not load.
pub static SHIM: OnceLock<Result<Shim, String>> = OnceLock::new();

/// Calls of each function so far (index of `names::FUNCTIONS`).
static CALLS: [AtomicU64; FUNCTIONS.len()] = [const { AtomicU64::new(0) }; FUNCTIONS.len()];

/// The loaded shim (wrappers are only reachable once it is).
pub fn shim() -> Option<&'static Shim> {
    SHIM.get().and_then(|r| r.as_ref().ok())
}

/// Whether a misbehaviour is due in call `nth` (0-based) of its function.
pub fn due<T>(m: &Option<After<T>>, nth: u64) -> Option<&T> {
    m.as_ref().filter(|a| nth >= a.after).map(|a| &a.value)
}

impl Shim {
    /// Entry to wrapped function `i`: count the call, then crash, eat memory
    /// or sleep when due, then log the call as forwarded. Returns the call's
    /// number (0 for the first).
    pub fn enter(&self, i: usize) -> u64 {
        let nth = CALLS[i].fetch_add(1, Ordering::Relaxed);
        let f = &self.conf.fns[i];
        if let Some(kind) = due(&f.crash, nth) {
            crash(*kind);
        }
        if due(&f.oom, nth).is_some() {
            eat_memory();
        }
        if let Some(d) = due(&f.hang, nth) {
            std::thread::sleep(*d);
        }
        if let Some(file) = &self.count_file {
            let line = format!("{}\n", FUNCTIONS[i]);
            // A log that cannot be written is not the module's misbehaviour:
            // the call goes on.
            let _ = file.lock().map(|mut f| f.write_all(line.as_bytes())).ok();
        }
        nth
    }
}

/// End the process as `kind` says.
fn crash(kind: CrashKind) -> ! {
    match kind {
        CrashKind::Segv => {
            // A write into the null page (address 1: a null pointer itself
            // would trip the standard library's debug check and abort
            // instead). Nothing is mapped there, so the process gets SIGSEGV.
            let p = std::hint::black_box(std::ptr::null_mut::<u8>().wrapping_add(1));
            // SAFETY: not safe, on purpose: this is the crash the caller asked
            // for. The write faults; execution does not continue past it.
            unsafe { p.write_volatile(1) };
            // Only if something mapped the null page: end the process anyway.
            std::process::abort()
        }
        CrashKind::Abort => std::process::abort(),
        // SAFETY: `_exit` ends the process at once; it has no preconditions.
        CrashKind::Exit => unsafe { libc::_exit(3) },
    }
}

/// Allocate and touch memory in 64 MiB blocks until the allocator refuses,
/// then fail as the Rust runtime does on an allocation failure (a message and
/// SIGABRT). Without a memory limit (RLIMIT_AS, a cgroup) the kernel's OOM
/// killer may end the process (or another one) first.
fn eat_memory() -> ! {
    const BLOCK: usize = 64 << 20;
    let layout = std::alloc::Layout::from_size_align(BLOCK, 4096).expect("a valid layout");
    loop {
        // SAFETY: a non-zero-sized layout; the block is leaked on purpose.
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        for off in (0..BLOCK).step_by(4096) {
            // SAFETY: `off` < BLOCK, inside the block just allocated.
            unsafe { p.add(off).write_volatile(1) };
        }
    }
}
