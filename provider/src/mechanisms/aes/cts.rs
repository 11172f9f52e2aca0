//! `CKM_AES_CTS` (mechanisms spec 3.0 §2.10.7): CBC with ciphertext
//! stealing, in the CS1 variant of the NIST SP 800-38A addendum ("Three
//! Variants of Ciphertext Stealing for CBC Mode", 2010), the variant
//! kryoptic (OpenSSL's `AES-*-CBC-CTS` default `CS1`) implements.
//!
//! CS1: with `d = len mod 16`, a whole number of blocks (`d = 0`) is plain
//! CBC; otherwise the last partial plaintext block is padded with zeros,
//! and the output is `C1 … C(n-2) ‖ MSB_d(C(n-1)) ‖ Cn`: the partial block
//! stays in front of the last full one (CS3, Kerberos' RFC 3962, always
//! swaps the last two blocks instead; CS2 swaps them only when `d ≠ 0`).
//!
//! The data must be at least one block (`CKR_DATA_LEN_RANGE` /
//! `CKR_ENCRYPTED_DATA_LEN_RANGE` otherwise). Multi-part processing holds
//! back between 17 and 32 bytes (the last two blocks, one possibly
//! partial) until `C_*Final`, since they are only known to be the last
//! ones then.

use super::key::{Aes, BLOCK, cbc};
use crate::mechanisms::operation::Direction;
use zeroize::Zeroize;

/// Bytes of `total` buffered bytes an update may process now: whole
/// blocks, leaving between 17 and 32 bytes (or everything when at most 32).
pub(super) fn cts_ready(total: usize) -> usize {
    if total > 2 * BLOCK {
        (total - BLOCK - 1) / BLOCK * BLOCK
    } else {
        0
    }
}

/// The last one or two blocks (16 to 32 bytes) in place, chaining from
/// `iv`.
pub(super) fn cts_final<C: Aes>(c: &C, direction: Direction, iv: &mut [u8; BLOCK], buf: &mut [u8]) {
    debug_assert!((BLOCK..=2 * BLOCK).contains(&buf.len()));
    let d = buf.len() - BLOCK;
    if d == 0 || d == BLOCK {
        cbc(c, direction, iv, buf);
        return;
    }
    match direction {
        Direction::Encrypt => {
            let mut last = [0u8; BLOCK];
            last[..d].copy_from_slice(&buf[BLOCK..]);
            // C(n-1) = E(P(n-1) ^ iv); then iv = C(n-1).
            cbc(c, direction, iv, &mut buf[..BLOCK]);
            // Cn = E(C(n-1) ^ (P*n ‖ 0)).
            cbc(c, direction, iv, &mut last);
            buf[d..].copy_from_slice(&last);
            last.zeroize();
        }
        Direction::Decrypt => {
            // Z = D(Cn) = C(n-1) ^ (P*n ‖ 0).
            let mut z = [0u8; BLOCK];
            z.copy_from_slice(&buf[d..]);
            cbc(c, direction, &mut [0u8; BLOCK], &mut z);
            // C(n-1) = C*(n-1) ‖ LSB(Z); P*n = MSB_d(Z) ^ C*(n-1).
            let mut prev = [0u8; BLOCK];
            prev[..d].copy_from_slice(&buf[..d]);
            prev[d..].copy_from_slice(&z[d..]);
            let mut tail = [0u8; BLOCK];
            for i in 0..d {
                tail[i] = z[i] ^ prev[i];
            }
            cbc(c, direction, iv, &mut prev);
            buf[..BLOCK].copy_from_slice(&prev);
            buf[BLOCK..].copy_from_slice(&tail[..d]);
            z.zeroize();
            prev.zeroize();
            tail.zeroize();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_leaves_the_last_two_blocks() {
        for total in 0..200 {
            let n = cts_ready(total);
            assert_eq!(n % BLOCK, 0);
            let rest = total - n;
            if total > 32 {
                assert!((17..=32).contains(&rest), "{total}");
            } else {
                assert_eq!(n, 0);
            }
        }
    }
}
