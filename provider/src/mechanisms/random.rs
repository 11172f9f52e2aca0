//! `C_GenerateRandom` (base spec §5.15): a per-thread ChaCha20 generator
//! seeded from the operating system's CSPRNG (getrandom(2) on Linux).
//!
//! A system call per request costs more than the generation itself for
//! the short requests callers make (nonces, challenges), so each thread
//! keeps its own stream cipher state:
//! - **Seeding**: 32 bytes from the OS on a thread's first request, again
//!   after every [`RESEED_AFTER`] bytes of output, and after `fork()` (the
//!   child's copy of the parent's state is never used: the `pthread_atfork`
//!   child handler bumps [`FORK_EPOCH`], and a generator seeded in another
//!   epoch reseeds before its next output).
//! - **Fast key erasure**: after every request the generator replaces its
//!   key with 32 bytes of its own output, so a state read from memory later
//!   does not reveal what earlier requests returned.
//! - No thread shares a generator, so concurrent sessions contend on nothing.
//! - **Caller seed** (`C_SeedRandom`, base spec §5.17): the seed is hashed
//!   into a process-wide pool, and every generator reseeds before its next
//!   output from SHA-256(fresh OS seed ‖ pool). A seed is only ever mixed
//!   in: the OS entropy stays in every seed, so a known or hostile seed
//!   cannot make the output predictable.
//!
//! Keys made by the token (`C_GenerateKey`, `C_GenerateKeyPair`, the token
//! key, salts and nonces of the storage) take their randomness from the OS
//! directly ([`os_fill`]), not from this generator. This file is the one
//! random source of the module: mechanisms and storage both take theirs
//! from here.

use crate::error::Result;
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use zeroize::Zeroizing;

/// Fills `buf` from the operating system's CSPRNG (getrandom(2)).
pub fn os_fill(buf: &mut [u8]) -> Result<()> {
    getrandom::fill(buf).map_err(|_| crate::error::err(cryptoki_sys::CKR_GENERAL_ERROR))
}

/// The operating system's random generator, in the `rand_core` 0.10 shape
/// the `dsa` and `crypto-primes` crates ask for.
pub struct OsRng;

/// The OS generator failed.
#[derive(Debug)]
pub struct RngFailed;

impl std::fmt::Display for RngFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OS random generator failed")
    }
}

impl std::error::Error for RngFailed {}

impl rand_core::TryRng for OsRng {
    type Error = RngFailed;

    fn try_next_u32(&mut self) -> std::result::Result<u32, RngFailed> {
        let mut b = [0u8; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> std::result::Result<u64, RngFailed> {
        let mut b = [0u8; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> std::result::Result<(), RngFailed> {
        getrandom::fill(dst).map_err(|_| RngFailed)
    }
}

impl rand_core::TryCryptoRng for OsRng {}

/// Output, in bytes, after which a generator takes a fresh OS seed.
pub const RESEED_AFTER: usize = 64 * 1024;

/// Counts the forks seen by this process image (bumped in the child).
static FORK_EPOCH: AtomicU64 = AtomicU64::new(0);

/// Called in a forked child: every generator inherited from the parent
/// reseeds before its next output.
pub fn note_fork() {
    FORK_EPOCH.fetch_add(1, Ordering::SeqCst);
}

/// Counts the caller seeds mixed into [`SEED_POOL`].
static SEED_EPOCH: AtomicU64 = AtomicU64::new(0);

/// SHA-256 over every seed given to `C_SeedRandom` (chained), or `None`
/// before the first one.
static SEED_POOL: Mutex<Option<Zeroizing<[u8; 32]>>> = Mutex::new(None);

/// Mixes a caller's seed into every generator of the process
/// (`C_SeedRandom`): each reseeds from the OS and the pool before its next
/// output.
pub fn mix_seed(seed: &[u8]) {
    let mut pool = SEED_POOL.lock().unwrap_or_else(|e| e.into_inner());
    let mut hash = Sha256::new();
    hash.update(b"dalek-pkcs11 seed pool\0");
    if let Some(previous) = pool.as_ref() {
        hash.update(previous.as_slice());
    }
    hash.update((seed.len() as u64).to_be_bytes());
    hash.update(seed);
    let mut next = Zeroizing::new([0u8; 32]);
    next.copy_from_slice(&hash.finalize());
    *pool = Some(next);
    SEED_EPOCH.fetch_add(1, Ordering::SeqCst);
}

struct Generator {
    rng: ChaCha20Rng,
    epoch: u64,
    seed_epoch: u64,
    output_since_seed: usize,
}

impl Generator {
    fn seeded(epoch: u64) -> Result<Self> {
        let mut seed = Zeroizing::new([0u8; 32]);
        os_fill(seed.as_mut())?;
        let seed_epoch = SEED_EPOCH.load(Ordering::SeqCst);
        let pool = SEED_POOL.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pool) = pool.as_ref() {
            let mut hash = Sha256::new();
            hash.update(b"dalek-pkcs11 reseed\0");
            hash.update(seed.as_slice());
            hash.update(pool.as_slice());
            seed.copy_from_slice(&hash.finalize());
        }
        Ok(Generator {
            rng: ChaCha20Rng::from_seed(*seed),
            epoch,
            seed_epoch,
            output_since_seed: 0,
        })
    }

    fn fill(&mut self, out: &mut [u8]) {
        self.rng.fill_bytes(out);
        self.output_since_seed = self.output_since_seed.saturating_add(out.len());
        let mut next = Zeroizing::new([0u8; 32]);
        self.rng.fill_bytes(next.as_mut());
        self.rng = ChaCha20Rng::from_seed(*next);
    }
}

thread_local! {
    static GENERATOR: RefCell<Option<Generator>> = const { RefCell::new(None) };
}

/// Fills `out` with random bytes.
pub fn generate(out: &mut [u8]) -> Result<()> {
    GENERATOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let epoch = FORK_EPOCH.load(Ordering::Relaxed);
        let fresh = match &*slot {
            Some(g) => {
                g.epoch != epoch
                    || g.seed_epoch != SEED_EPOCH.load(Ordering::Relaxed)
                    || g.output_since_seed >= RESEED_AFTER
            }
            None => true,
        };
        if fresh {
            *slot = Some(Generator::seeded(epoch)?);
        }
        slot.as_mut().expect("seeded above").fill(out);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_and_differs() {
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        generate(&mut a).unwrap();
        generate(&mut b).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 32]);
    }

    /// Requests of every length up to a few ChaCha blocks, and one larger
    /// than the reseed interval, are filled completely (no all-zero tail).
    #[test]
    fn fills_every_length() {
        // A short output is all zero now and then (a 1-byte one once in
        // 256 draws), so each length gets up to 16 draws: all-zero tails
        // in every one of them happen with probability 2^-128 at most.
        for len in (1..=300).chain([RESEED_AFTER + 17]) {
            let mut buf = vec![0u8; len];
            let filled = (0..16).any(|_| {
                generate(&mut buf).unwrap();
                buf[len.saturating_sub(16)..].iter().any(|&b| b != 0)
            });
            assert!(filled, "length {len}");
        }
    }

    /// A new fork epoch makes the thread's generator reseed; the reseed
    /// counter does too.
    #[test]
    fn reseeds_after_fork_and_after_the_interval() {
        let mut buf = [0u8; 8];
        generate(&mut buf).unwrap();
        let seed_epoch = || GENERATOR.with(|c| c.borrow().as_ref().map(|g| g.epoch));
        let before = seed_epoch().unwrap();
        note_fork();
        generate(&mut buf).unwrap();
        assert!(seed_epoch().unwrap() > before);
        let mut big = vec![0u8; RESEED_AFTER];
        generate(&mut big).unwrap();
        let used = GENERATOR.with(|c| c.borrow().as_ref().unwrap().output_since_seed);
        assert_eq!(used, buf.len() + RESEED_AFTER);
        generate(&mut buf).unwrap();
        let used = GENERATOR.with(|c| c.borrow().as_ref().unwrap().output_since_seed);
        assert_eq!(used, buf.len(), "reseeded before this request");
    }

    /// A caller's seed makes the thread's generator reseed before its next
    /// output, so the output is not what the state before predicted; the
    /// same seed twice still gives different output (the OS seed is kept).
    #[test]
    fn a_caller_seed_is_mixed_in_not_substituted() {
        let mut buf = [0u8; 32];
        generate(&mut buf).unwrap();
        let clone_state = || GENERATOR.with(|c| c.borrow().as_ref().unwrap().rng.clone());
        let mut before = clone_state();
        mix_seed(b"a seed the caller knows");
        let mut after_seed = [0u8; 32];
        generate(&mut after_seed).unwrap();
        let mut predicted = [0u8; 32];
        before.fill_bytes(&mut predicted);
        assert_ne!(predicted, after_seed, "the seed was not mixed in");
        mix_seed(b"a seed the caller knows");
        let mut again = [0u8; 32];
        generate(&mut again).unwrap();
        assert_ne!(after_seed, again, "the seed replaced the OS entropy");
        mix_seed(&[]);
        generate(&mut again).unwrap();
    }

    /// Each request rekeys: the state after a request is not the state
    /// that produced it (fast key erasure).
    #[test]
    fn rekeys_after_every_request() {
        let mut buf = [0u8; 32];
        generate(&mut buf).unwrap();
        let clone_state = || GENERATOR.with(|c| c.borrow().as_ref().unwrap().rng.clone());
        let mut before = clone_state();
        generate(&mut buf).unwrap();
        let mut replay = [0u8; 32];
        before.fill_bytes(&mut replay);
        assert_eq!(replay, buf, "the state before a request predicts it");
        let mut after = clone_state();
        let mut next = [0u8; 32];
        after.fill_bytes(&mut next);
        // The state after the request continues elsewhere, and does not
        // run on from where the request's stream ended.
        let mut continued = [0u8; 64];
        before.fill_bytes(&mut continued);
        assert_ne!(&continued[..32], &next);
        assert_ne!(&continued[32..], &next);
    }
}
