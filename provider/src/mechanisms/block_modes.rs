//! ECB, CBC and CBC with PKCS #7 padding over any block cipher of `N`-byte
//! blocks: the multi-part rules the `*_ECB`, `*_CBC` and `*_CBC_PAD`
//! mechanisms share (mechanisms spec 3.0 §2.29 "Double and Triple-length
//! DES" and the historical DES mechanisms; base spec §5.9–5.10 for the
//! multi-part calls).
//!
//! - ECB and CBC without padding output every complete block as soon as it
//!   is available; a partial block left at `C_*Final` is a length error.
//! - CBC-PAD decryption holds back the last complete block until
//!   `C_DecryptFinal`, which checks and removes the padding in constant
//!   time.

use super::operation::{Direction, OutputLen};
use crate::error::{Error, Result, err};
use cryptoki_sys::*;
use zeroize::{Zeroize, Zeroizing};

/// A block cipher's raw permutation, and the ECB and CBC passes over whole
/// blocks built on it. The passes default to one block at a time; a back
/// end that runs a whole pass in one call overrides them.
pub trait BlockEngine<const N: usize> {
    /// Encrypts one block in place.
    fn encrypt_block(&self, block: &mut [u8; N]) -> Result<()>;
    /// Decrypts one block in place.
    fn decrypt_block(&self, block: &mut [u8; N]) -> Result<()>;

    /// ECB encryption of `blocks` in place.
    fn ecb_encrypt(&self, blocks: &mut [[u8; N]]) -> Result<()> {
        blocks.iter_mut().try_for_each(|b| self.encrypt_block(b))
    }

    /// ECB decryption of `blocks` in place.
    fn ecb_decrypt(&self, blocks: &mut [[u8; N]]) -> Result<()> {
        blocks.iter_mut().try_for_each(|b| self.decrypt_block(b))
    }

    /// CBC encryption of `blocks` in place, chained from `iv`, which is
    /// left at the last ciphertext block.
    fn cbc_encrypt(&self, iv: &mut [u8; N], blocks: &mut [[u8; N]]) -> Result<()> {
        cbc_encrypt_each(self, iv, blocks)
    }

    /// CBC decryption of `blocks` in place, chained from `iv`, which is
    /// left at the last ciphertext block.
    fn cbc_decrypt(&self, iv: &mut [u8; N], blocks: &mut [[u8; N]]) -> Result<()> {
        cbc_decrypt_each(self, iv, blocks)
    }
}

/// CBC encryption (SP 800-38A §6.2) one block at a time.
pub fn cbc_encrypt_each<const N: usize, E: BlockEngine<N> + ?Sized>(
    engine: &E,
    iv: &mut [u8; N],
    blocks: &mut [[u8; N]],
) -> Result<()> {
    for b in blocks {
        b.iter_mut().zip(iv.iter()).for_each(|(x, v)| *x ^= v);
        engine.encrypt_block(b)?;
        *iv = *b;
    }
    Ok(())
}

/// CBC decryption (SP 800-38A §6.2) one block at a time.
pub fn cbc_decrypt_each<const N: usize, E: BlockEngine<N> + ?Sized>(
    engine: &E,
    iv: &mut [u8; N],
    blocks: &mut [[u8; N]],
) -> Result<()> {
    for b in blocks {
        let next = *b;
        engine.decrypt_block(b)?;
        b.iter_mut().zip(iv.iter()).for_each(|(x, v)| *x ^= v);
        *iv = next;
    }
    Ok(())
}

/// How blocks are chained.
#[derive(Clone, Copy, Debug)]
pub enum Chaining<const N: usize> {
    /// Electronic codebook: every block alone.
    Ecb,
    /// Cipher block chaining from `iv` (updated to the last ciphertext
    /// block), with PKCS #7 padding when `pad`.
    Cbc {
        /// The chaining value.
        iv: [u8; N],
        /// `*_CBC_PAD`.
        pad: bool,
    },
}

/// An ECB or CBC operation in progress: the chaining state and the input
/// not yet processed.
#[derive(Clone)]
pub struct BlockModes<const N: usize> {
    direction: Direction,
    chaining: Chaining<N>,
    buffer: Zeroizing<Vec<u8>>,
}

/// The length error of the direction: plaintext (`CKR_DATA_LEN_RANGE`) or
/// ciphertext (`CKR_ENCRYPTED_DATA_LEN_RANGE`).
pub fn len_error(direction: Direction) -> Error {
    match direction {
        Direction::Encrypt => err(CKR_DATA_LEN_RANGE),
        Direction::Decrypt => err(CKR_ENCRYPTED_DATA_LEN_RANGE),
    }
}

impl<const N: usize> BlockModes<N> {
    /// Starts an operation.
    pub fn new(direction: Direction, chaining: Chaining<N>) -> Self {
        BlockModes {
            direction,
            chaining,
            buffer: Zeroizing::new(Vec::with_capacity(N)),
        }
    }

    fn pads(&self) -> bool {
        matches!(self.chaining, Chaining::Cbc { pad: true, .. })
    }

    fn decrypts(&self) -> bool {
        self.direction == Direction::Decrypt
    }

    /// Output length of a single-part call on `input_len` bytes.
    pub fn output_len(&self, input_len: usize) -> OutputLen {
        match (self.pads(), self.decrypts()) {
            (false, _) => OutputLen::Exact(input_len),
            (true, true) => OutputLen::AtMost(input_len.saturating_sub(1)),
            (true, false) => OutputLen::Exact(input_len / N * N + N),
        }
    }

    /// Bytes an update on `input_len` more bytes outputs: every complete
    /// block, except the last one of a CBC-PAD decryption (held back for
    /// the padding check).
    pub fn update_len(&self, input_len: usize) -> usize {
        let total = self.buffer.len().saturating_add(input_len);
        if self.pads() && self.decrypts() {
            total.saturating_sub(1) / N * N
        } else {
            total / N * N
        }
    }

    /// Multi-part: processes buffer ‖ `data` up to [`Self::update_len`]
    /// bytes into `out` and keeps the rest.
    pub fn update<E: BlockEngine<N>>(
        &mut self,
        engine: &E,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<usize> {
        let n = self.update_len(data.len());
        let out = out.get_mut(..n).ok_or(err(CKR_BUFFER_TOO_SMALL))?;
        let from_buffer = self.buffer.len().min(n);
        out[..from_buffer].copy_from_slice(&self.buffer[..from_buffer]);
        out[from_buffer..].copy_from_slice(&data[..n - from_buffer]);
        let mut rest = Zeroizing::new(Vec::with_capacity(N));
        rest.extend_from_slice(&self.buffer[from_buffer..]);
        rest.extend_from_slice(&data[n - from_buffer..]);
        self.buffer = rest;
        run(engine, self.direction, &mut self.chaining, out)?;
        Ok(n)
    }

    /// Output length of the final call.
    pub fn final_len(&self) -> OutputLen {
        match (self.pads(), self.decrypts()) {
            (false, _) => OutputLen::Exact(0),
            (true, true) => OutputLen::AtMost(N - 1),
            (true, false) => OutputLen::Exact(N),
        }
    }

    /// Multi-part: finishes. Without padding a partial block left over is a
    /// length error; with padding the last block is padded (encryption) or
    /// checked and stripped (decryption, `CKR_ENCRYPTED_DATA_INVALID` when
    /// malformed).
    pub fn finish<E: BlockEngine<N>>(&mut self, engine: &E, out: &mut [u8]) -> Result<usize> {
        if !self.pads() {
            return if self.buffer.is_empty() {
                Ok(0)
            } else {
                Err(len_error(self.direction))
            };
        }
        let mut block = Zeroizing::new([0u8; N]);
        let n = self.buffer.len();
        match self.direction {
            Direction::Encrypt => {
                block[..n].copy_from_slice(&self.buffer);
                block[n..].fill((N - n) as u8);
                self.buffer.clear();
                run(engine, self.direction, &mut self.chaining, &mut block[..])?;
                out.get_mut(..N)
                    .ok_or(err(CKR_BUFFER_TOO_SMALL))?
                    .copy_from_slice(&block[..]);
                Ok(N)
            }
            Direction::Decrypt => {
                if n != N {
                    return Err(err(CKR_ENCRYPTED_DATA_LEN_RANGE));
                }
                block.copy_from_slice(&self.buffer);
                self.buffer.clear();
                run(engine, self.direction, &mut self.chaining, &mut block[..])?;
                let len = unpad(&block)?;
                out.get_mut(..len)
                    .ok_or(err(CKR_BUFFER_TOO_SMALL))?
                    .copy_from_slice(&block[..len]);
                Ok(len)
            }
        }
    }

    /// Single-part: update then final, so both paths give the same result.
    pub fn process<E: BlockEngine<N>>(
        &mut self,
        engine: &E,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<usize> {
        if !self.pads() && !data.len().is_multiple_of(N) {
            return Err(len_error(self.direction));
        }
        let n = self.update(engine, data, out)?;
        let m = self.finish(engine, &mut out[n..])?;
        Ok(n + m)
    }
}

/// ECB or CBC over the whole blocks of `buf`, in place.
fn run<const N: usize, E: BlockEngine<N>>(
    engine: &E,
    direction: Direction,
    chaining: &mut Chaining<N>,
    buf: &mut [u8],
) -> Result<()> {
    let (blocks, _) = buf.as_chunks_mut::<N>();
    match (chaining, direction) {
        (Chaining::Ecb, Direction::Encrypt) => engine.ecb_encrypt(blocks),
        (Chaining::Ecb, Direction::Decrypt) => engine.ecb_decrypt(blocks),
        (Chaining::Cbc { iv, .. }, Direction::Encrypt) => engine.cbc_encrypt(iv, blocks),
        (Chaining::Cbc { iv, .. }, Direction::Decrypt) => engine.cbc_decrypt(iv, blocks),
    }
}

/// Length of the message in a decrypted final block with PKCS #7 padding,
/// checked without data-dependent branches on the padding bytes.
pub fn unpad<const N: usize>(block: &[u8; N]) -> Result<usize> {
    let p = block[N - 1];
    let mut bad = (p == 0) as u8 | (p as usize > N) as u8;
    for (i, b) in block.iter().enumerate() {
        let in_pad = ((N - i) <= p as usize) as u8;
        bad |= in_pad & (*b != p) as u8;
    }
    if std::hint::black_box(bad) != 0 {
        return Err(err(CKR_ENCRYPTED_DATA_INVALID));
    }
    Ok(N - p as usize)
}

impl<const N: usize> Drop for BlockModes<N> {
    fn drop(&mut self) {
        if let Chaining::Cbc { iv, .. } = &mut self.chaining {
            iv.zeroize();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy 4-byte "cipher" (XOR with a constant, then rotate) that is
    /// enough to check the chaining and buffering, which do not depend on
    /// the cipher.
    struct Toy;
    impl BlockEngine<4> for Toy {
        fn encrypt_block(&self, b: &mut [u8; 4]) -> Result<()> {
            b.iter_mut().for_each(|x| *x ^= 0x5a);
            b.rotate_left(1);
            Ok(())
        }
        fn decrypt_block(&self, b: &mut [u8; 4]) -> Result<()> {
            b.rotate_right(1);
            b.iter_mut().for_each(|x| *x ^= 0x5a);
            Ok(())
        }
    }

    fn once(direction: Direction, chaining: Chaining<4>, data: &[u8]) -> Result<Vec<u8>> {
        let mut op = BlockModes::new(direction, chaining);
        let mut out = vec![0u8; op.output_len(data.len()).bound()];
        let n = op.process(&Toy, data, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    fn parts(direction: Direction, chaining: Chaining<4>, data: &[u8], cut: usize) -> Vec<u8> {
        let mut op = BlockModes::new(direction, chaining);
        let mut out = Vec::new();
        for part in [&data[..cut], &data[cut..]] {
            let mut buf = vec![0u8; op.update_len(part.len())];
            let n = op.update(&Toy, part, &mut buf).unwrap();
            out.extend_from_slice(&buf[..n]);
        }
        let mut buf = vec![0u8; op.final_len().bound()];
        let n = op.finish(&Toy, &mut buf).unwrap();
        out.extend_from_slice(&buf[..n]);
        out
    }

    #[test]
    fn cbc_pad_round_trips_every_length_and_split() {
        let cbc = Chaining::Cbc {
            iv: [1, 2, 3, 4],
            pad: true,
        };
        for len in 0..=13 {
            let data: Vec<u8> = (0..len as u8).collect();
            let ct = once(Direction::Encrypt, cbc, &data).unwrap();
            assert_eq!(ct.len(), len / 4 * 4 + 4);
            for cut in 0..=len {
                assert_eq!(parts(Direction::Encrypt, cbc, &data, cut), ct);
            }
            for cut in 0..=ct.len() {
                assert_eq!(parts(Direction::Decrypt, cbc, &ct, cut), data);
            }
        }
    }

    #[test]
    fn cbc_chains_and_ecb_does_not() {
        let data = [7u8; 8];
        let ecb = once(Direction::Encrypt, Chaining::Ecb, &data).unwrap();
        assert_eq!(ecb[..4], ecb[4..]);
        let cbc = Chaining::Cbc {
            iv: [0; 4],
            pad: false,
        };
        let chained = once(Direction::Encrypt, cbc, &data).unwrap();
        assert_ne!(chained[..4], chained[4..]);
        assert_eq!(chained[..4], ecb[..4]);
        assert_eq!(once(Direction::Decrypt, cbc, &chained).unwrap(), data);
    }

    #[test]
    fn partial_blocks_and_bad_padding_are_refused() {
        assert_eq!(
            once(Direction::Encrypt, Chaining::Ecb, &[0; 5])
                .unwrap_err()
                .rv(),
            CKR_DATA_LEN_RANGE
        );
        assert_eq!(
            once(Direction::Decrypt, Chaining::Ecb, &[0; 3])
                .unwrap_err()
                .rv(),
            CKR_ENCRYPTED_DATA_LEN_RANGE
        );
        let cbc = Chaining::Cbc {
            iv: [0; 4],
            pad: true,
        };
        let mut ct = once(Direction::Encrypt, cbc, b"abcdef").unwrap();
        assert_eq!(once(Direction::Decrypt, cbc, &ct).unwrap(), b"abcdef");
        // The toy cipher moves ciphertext byte 2 of a block to plaintext
        // byte 3: the padding length.
        let at = ct.len() - 2;
        ct[at] ^= 1;
        assert_eq!(
            once(Direction::Decrypt, cbc, &ct).unwrap_err().rv(),
            CKR_ENCRYPTED_DATA_INVALID
        );
        assert_eq!(
            once(Direction::Decrypt, cbc, &ct[..7]).unwrap_err().rv(),
            CKR_ENCRYPTED_DATA_LEN_RANGE
        );
        for bad in [[1, 1, 1, 0], [1, 1, 1, 5], [1, 1, 2, 2 ^ 1]] {
            assert!(unpad(&bad).is_err(), "{bad:?}");
        }
        assert_eq!(unpad(&[9, 9, 2, 2]).unwrap(), 2);
        assert_eq!(unpad(&[4, 4, 4, 4]).unwrap(), 0);
    }
}
