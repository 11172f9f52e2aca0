//! The module's heap (docs/SECURITY.md, "Memory hygiene"): the system
//! allocator, with every block zeroed before it is given back.
//!
//! Destructors zeroize the fields they know of (`Zeroizing`, the crates'
//! `zeroize` features), but a heap block holds more than its live fields:
//! the unused space of an enum's smaller variants and padding are copied
//! from the stack when a value is moved into the block (with whatever an
//! earlier computation left there: the token key's AES round keys were
//! found so in the block of an object's parsed key), a vector that grew
//! leaves its old buffer, a string its former contents. Zeroing the whole
//! block at `dealloc`, and the old block when `realloc` moves, leaves none
//! of it in the allocator's free lists. The system allocator's own
//! bookkeeping and blocks other code allocates (SQLite, the C library)
//! are outside this; aws-lc zeroes its blocks when it frees them. Being
//! the crate's global allocator, it is also that of every binary linking
//! the rlib (`dalek-pkcs11-util`, the tests and benches).

use std::alloc::{GlobalAlloc, Layout, System};

/// An allocator (the system's for the module) that zeroes every block it
/// takes back.
pub struct WipingAllocator<A = System>(A);

#[global_allocator]
static HEAP: WipingAllocator = WipingAllocator(System);

/// Zeroes `len` bytes at `ptr` in a way the compiler keeps (a store right
/// before `free` is otherwise a dead store it may drop).
///
/// # Safety
/// `ptr` must be valid for writes of `len` bytes.
unsafe fn wipe(ptr: *mut u8, len: usize) {
    // SAFETY: the caller guarantees `len` writable bytes at `ptr`.
    unsafe {
        std::ptr::write_bytes(ptr, 0, len);
        zeroize::optimization_barrier(&*std::ptr::slice_from_raw_parts(ptr, len));
    }
}

// SAFETY: every method forwards to the inner allocator with the layout it
// was given; `dealloc` only adds a write to the block it frees, `realloc`
// is allocate, copy, free with the same alignment (`GlobalAlloc`'s
// contract).
unsafe impl<A: GlobalAlloc> GlobalAlloc for WipingAllocator<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's (non-zero-sized) layout.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's (non-zero-sized) layout.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller gives back the block of `layout.size()` bytes
        // at `ptr` it allocated with `layout`; nobody uses it any more.
        unsafe {
            wipe(ptr, layout.size());
            self.0.dealloc(ptr, layout);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Never in place: a block the system allocator moved or shrank
        // would leave (part of) its bytes behind.
        // SAFETY: `new_size` is non-zero and, rounded up to `layout.align()`,
        // does not overflow `isize` (the caller's contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a fresh block for `new_layout`; on success the old block's
        // first `min(old, new)` bytes are copied into it (the two do not
        // overlap) and the old block is given back as `dealloc` does.
        unsafe {
            let new = self.0.alloc(new_layout);
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The system allocator, counting the blocks given back with a byte
    /// that is not zero.
    #[derive(Default)]
    struct Checking {
        dirty: AtomicUsize,
        freed: AtomicUsize,
    }

    // SAFETY: forwards to `System`; `dealloc` reads the block it is given
    // before freeing it.
    unsafe impl GlobalAlloc for Checking {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: the block is `layout.size()` bytes, still allocated.
            let block = unsafe { std::slice::from_raw_parts(ptr, layout.size()) };
            if block.iter().any(|&b| b != 0) {
                self.dirty.fetch_add(1, Ordering::SeqCst);
            }
            self.freed.fetch_add(1, Ordering::SeqCst);
            // SAFETY: forwarded.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[test]
    fn blocks_go_back_zeroed_and_realloc_keeps_the_contents() {
        let heap = WipingAllocator(Checking::default());
        let small = Layout::from_size_align(100, 8).unwrap();
        // SAFETY: each block is used within its layout and given back once.
        unsafe {
            let p = heap.alloc(small);
            std::ptr::write_bytes(p, 0xab, 100);
            heap.dealloc(p, small);

            // Growing and shrinking move the block: the old one goes back
            // zeroed, the new one has the contents.
            let p = heap.alloc(small);
            std::ptr::write_bytes(p, 0xcd, 100);
            let q = heap.realloc(p, small, 4000);
            assert!(
                std::slice::from_raw_parts(q, 100)
                    .iter()
                    .all(|&b| b == 0xcd)
            );
            let r = heap.realloc(q, Layout::from_size_align(4000, 8).unwrap(), 10);
            assert!(std::slice::from_raw_parts(r, 10).iter().all(|&b| b == 0xcd));
            heap.dealloc(r, Layout::from_size_align(10, 8).unwrap());
        }
        assert_eq!(heap.0.freed.load(Ordering::SeqCst), 4);
        assert_eq!(
            heap.0.dirty.load(Ordering::SeqCst),
            0,
            "a block went back with data"
        );
    }
}
