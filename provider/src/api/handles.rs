//! Maps keyed by PKCS#11 handles. Handles are small counters handed out by
//! the module itself (never chosen by a caller), so a multiplicative hash is
//! enough and much cheaper than SipHash on every call's session and object
//! lookup.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing of a `u64`.
#[derive(Default, Clone, Copy)]
pub struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map from handles.
pub type HandleMap<V> = HashMap<u64, V, BuildHasherDefault<HandleHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_consecutive_handles() {
        let mut m: HandleMap<u64> = HandleMap::default();
        for h in 1..10_000u64 {
            m.insert(h, h * 2);
        }
        assert_eq!(m.get(&4242), Some(&8484));
        let hash = |n: u64| {
            let mut h = HandleHasher::default();
            h.write_u64(n);
            h.finish()
        };
        assert_ne!(
            hash(1) >> 57,
            hash(2) >> 57,
            "top bits (the buckets' tags) differ"
        );
    }
}
