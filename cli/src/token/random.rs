//! Random bytes for labels, ids, IV prefixes and key values (never in the
//! timed region).

/// Random bytes (for IV prefixes, labels and key values; never in the timed region).
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    // The OS RNG failing is not something a benchmark can recover from.
    getrandom::fill(&mut b).expect("the OS random number generator works");
    b
}
