//! `C_GenerateRandom`: the operating system's CSPRNG (getrandom(2) on Linux).

use crate::error::Result;

/// Fills `out` with random bytes.
pub fn generate(out: &mut [u8]) -> Result<()> {
    crate::storage::seal::random_bytes(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fills_and_differs() {
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        super::generate(&mut a).unwrap();
        super::generate(&mut b).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 32]);
    }
}
