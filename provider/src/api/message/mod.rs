//! Message-based encryption and decryption (base spec 3.0 §5.19 / §5.20)
//! with `CKM_AES_GCM` (per-message `CK_GCM_MESSAGE_PARAMS`, mechanisms spec
//! 3.0 §2.12), `CKM_AES_CCM` (`CK_CCM_MESSAGE_PARAMS`, §2.13) and
//! `CKM_CHACHA20_POLY1305` (`CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS`,
//! §2.47), message-based parts.
//!
//! A message is either single-part (`C_EncryptMessage` /
//! `C_DecryptMessage`) or multi-part (`C_EncryptMessageBegin` then
//! `C_EncryptMessageNext` until `CKF_END_OF_MESSAGE`, and the decrypt
//! pair). Both run through the same AEAD code as `C_Encrypt` / `C_Decrypt`.
//! A multi-part message is buffered (at most [`MAX_MESSAGE_LEN`] bytes)
//! and processed whole at its last part: intermediate parts output
//! nothing, so a decryption releases plaintext only once the tag verified.
//! A CCM message declares its length up front (`ulDataLen`, as B0 encodes
//! it): parts past it, or a last part short of it, are refused.
//! The operation lives in the session's own `message_encrypt` /
//! `message_decrypt` slots, independent of `C_EncryptInit` / `C_DecryptInit`
//! (§5.19: a session may hold both).
//!
//! IVs and nonces the token generates (GCM `ivGenerator`, CCM
//! `nonceGenerator`): a counter (`CKG_GENERATE_COUNTER`,
//! `CKG_GENERATE_COUNTER_XOR`) is the invocation field of SP 800-38D
//! §8.2.1's deterministic construction, one counter per AES key value kept
//! by the token (see `ivcounter` and `storage::iv_counters`) and shared by
//! GCM IVs and CCM nonces, so no value repeats for the key across
//! operations, sessions, copies of the key, processes and restarts; random
//! ones (`CKG_GENERATE`, `CKG_GENERATE_RANDOM`) keep at least
//! [`MIN_RANDOM_BITS`] random bits. `CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS`
//! has no generator: its nonces are always the caller's, as GCM IVs with
//! `CKG_NO_GENERATE`.

mod sign;
pub use sign::*;

use super::crypto::key_use::message_key;
use super::operations::{MessageCipher, Operations, Pending, end_operation};
use super::session::Session;
use super::token::Token;
use crate::error::{Error, Result, err};
use crate::mechanisms::keys::KeyMaterial;
use crate::mechanisms::{self, Direction, Mechanism, Param, random};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroizing;

/// Most bytes of plaintext (encryption) or ciphertext without the tag
/// (decryption) a multi-part message may buffer: 1 GiB, a memory bound well
/// under GCM's own limit of 2^39 - 256 bits (SP 800-38D §5.2.1.1).
pub const MAX_MESSAGE_LEN: usize = 1 << 30;

/// Fewest counter bits (`ulIvLen * 8 - ulIvFixedBits`) of a
/// `CKG_GENERATE_COUNTER(_XOR)` IV or nonce: 2^32 messages at least.
pub const MIN_COUNTER_BITS: usize = 32;

/// Fewest random bits of a `CKG_GENERATE(_RANDOM)` IV or nonce. With r
/// random bits, n messages under one key repeat an IV with probability
/// about n^2 / 2^(r+1): 2^-25 for 2^20 messages at 64 bits. SP 800-38D
/// §8.2.2 asks for 96; 64 admits the common 4-byte fixed field of a
/// 12-byte IV.
pub const MIN_RANDOM_BITS: usize = 64;

/// The mechanisms of the message-based cipher functions.
pub const MESSAGE_CIPHERS: [CK_MECHANISM_TYPE; 3] =
    [CKM_AES_GCM, CKM_AES_CCM, CKM_CHACHA20_POLY1305];

/// The length error of `direction`: `CKR_DATA_LEN_RANGE` (plaintext) or
/// `CKR_ENCRYPTED_DATA_LEN_RANGE`.
fn len_error(direction: Direction) -> Error {
    match direction {
        Direction::Encrypt => err(CKR_DATA_LEN_RANGE),
        Direction::Decrypt => err(CKR_ENCRYPTED_DATA_LEN_RANGE),
    }
}

/// The length of a message of `buffered` bytes and a new `part`, or the
/// length error of `direction` past [`MAX_MESSAGE_LEN`].
fn check_len(direction: Direction, buffered: usize, part: usize) -> Result<usize> {
    buffered
        .checked_add(part)
        .filter(|&n| n <= MAX_MESSAGE_LEN)
        .ok_or_else(|| len_error(direction))
}

/// The per-message parameter, as read by the FFI layer from the structure
/// of the operation's mechanism: `CK_GCM_MESSAGE_PARAMS`,
/// `CK_CCM_MESSAGE_PARAMS` or `CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS`.
pub struct MessageParams<'a> {
    /// The mechanism whose structure this is.
    pub mechanism: CK_MECHANISM_TYPE,
    /// `pIv` / `pNonce`: input for `CKG_NO_GENERATE` and the fixed part,
    /// output for the generated forms.
    pub iv: &'a mut [u8],
    /// `ulIvFixedBits` / `ulNonceFixedBits` (0 for ChaCha20-Poly1305).
    pub fixed_bits: CK_ULONG,
    /// `ivGenerator` / `nonceGenerator` (`CKG_NO_GENERATE` for
    /// ChaCha20-Poly1305, whose structure has none).
    pub generator: CK_GENERATOR_FUNCTION,
    /// `pTag` / `pMAC` (`ulTagBits / 8`, `ulMACLen` or 16 bytes): output on
    /// encryption, input on decryption.
    pub tag: &'a mut [u8],
    /// CCM's `ulDataLen` (`None` for the others).
    pub data_len: Option<CK_ULONG>,
}

/// `C_MessageEncryptInit` / `C_MessageDecryptInit` (§5.19 / §5.20):
/// `CKM_AES_GCM`, `CKM_AES_CCM` or `CKM_CHACHA20_POLY1305` with no
/// parameter; the key needs `CKA_ENCRYPT` / `CKA_DECRYPT`. A key with
/// `CKA_ALWAYS_AUTHENTICATE` is refused for decryption
/// (`CKR_KEY_FUNCTION_NOT_PERMITTED`): there is no context login for
/// message operations here.
pub fn init(
    session: &Session,
    direction: Direction,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let mut ops = session.ops.lock();
    let slot = ops.message_cipher(direction);
    if slot.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    let (function, usage) = match direction {
        Direction::Encrypt => (CKF_MESSAGE_ENCRYPT, CKA_ENCRYPT),
        Direction::Decrypt => (CKF_MESSAGE_DECRYPT, CKA_DECRYPT),
    };
    if !MESSAGE_CIPHERS.contains(&mech.ty) || !matches!(mech.param, Param::None) {
        return Err(err(CKR_MECHANISM_INVALID));
    }
    mechanisms::require(mech, function)?;
    let key = message_key(session, key, mech, usage)?;
    check_key(mech.ty, &key)?;
    *slot = Some(MessageCipher {
        mechanism: mech.ty,
        key,
        counter: None,
        pending: None,
    });
    Ok(())
}

/// `CKR_KEY_TYPE_INCONSISTENT` unless `key` is an AES key (GCM, CCM) or a
/// ChaCha20 key (ChaCha20-Poly1305).
fn check_key(mechanism: CK_MECHANISM_TYPE, key: &KeyMaterial) -> Result<()> {
    let fits = match mechanism {
        CKM_CHACHA20_POLY1305 => matches!(key, KeyMaterial::ChaCha20(_)),
        _ => matches!(key, KeyMaterial::Aes(_)),
    };
    if fits {
        Ok(())
    } else {
        Err(err(CKR_KEY_TYPE_INCONSISTENT))
    }
}

/// The mechanism of the message-cipher operation of `direction`
/// (`CKR_OPERATION_NOT_INITIALIZED` if none): which structure the
/// per-message parameter is.
pub fn mechanism(session: &Session, direction: Direction) -> Result<CK_MECHANISM_TYPE> {
    session
        .ops
        .lock()
        .message_cipher(direction)
        .as_ref()
        .map(|op| op.mechanism)
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))
}

/// `C_MessageEncryptFinal` / `C_MessageDecryptFinal`: ends the operation,
/// discarding an unfinished multi-part message (`CKR_OK`: the spec lists
/// no error for that case).
pub fn finish(session: &Session, direction: Direction) -> Result<()> {
    end_operation(session.ops.lock().message_cipher(direction))
}

/// Checks `p` against the operation's `mechanism` and the lengths its
/// structure allows (`CKR_MECHANISM_PARAM_INVALID` otherwise): GCM IV
/// 1–256 bytes and tag 12–16 bytes; CCM nonce 7–13 bytes, MAC 4, 6, …, 16
/// bytes and `ulDataLen` within what B0 encodes; ChaCha20-Poly1305 nonce
/// 12 bytes and tag 16.
fn check_params(mechanism: CK_MECHANISM_TYPE, p: &MessageParams<'_>) -> Result<()> {
    let bad = || err(CKR_MECHANISM_PARAM_INVALID);
    if p.mechanism != mechanism {
        return Err(bad());
    }
    let (iv, tag) = (p.iv.len(), p.tag.len());
    let ok = match (mechanism, p.data_len) {
        (CKM_AES_GCM, None) => (1..=256).contains(&iv) && (12..=16).contains(&tag),
        (CKM_AES_CCM, Some(data_len)) => {
            return mechanisms::aes::ccm_check(iv, tag, data_len);
        }
        (CKM_CHACHA20_POLY1305, None) => iv == 12 && tag == 16,
        _ => false,
    };
    if ok { Ok(()) } else { Err(bad()) }
}

/// Fills the generated part of the IV or nonce (§2.12
/// `CK_GCM_MESSAGE_PARAMS`, §2.13 `CK_CCM_MESSAGE_PARAMS`): the leading
/// `fixed_bits` bits stay the caller's (the fixed field of SP 800-38D
/// §8.2), the rest is random or the next value of the key value's counter
/// on `token` (big-endian, XORed into the caller's bits for
/// `CKG_GENERATE_COUNTER_XOR`). Fewer than [`MIN_RANDOM_BITS`] random or
/// [`MIN_COUNTER_BITS`] counter bits: `CKR_MECHANISM_PARAM_INVALID`; a
/// counter past what its bits hold: `CKR_DATA_LEN_RANGE`; a token that
/// cannot record its counter: `CKR_TOKEN_WRITE_PROTECTED`. On error `pIv`
/// is untouched.
fn generate_iv(token: &Token, op: &mut MessageCipher, p: &mut MessageParams<'_>) -> Result<()> {
    let bad = || err(CKR_MECHANISM_PARAM_INVALID);
    let total_bits = p.iv.len() * 8;
    let fixed = usize::try_from(p.fixed_bits).map_err(|_| bad())?;
    // The bits the token generates.
    let generated = total_bits.checked_sub(fixed);
    match p.generator {
        CKG_NO_GENERATE => Ok(()),
        CKG_GENERATE | CKG_GENERATE_RANDOM => {
            if generated.is_none_or(|n| n < MIN_RANDOM_BITS) {
                return Err(bad());
            }
            let mut fresh = Zeroizing::new(vec![0u8; p.iv.len()]);
            random::generate(&mut fresh)?;
            merge_bits(p.iv, &fresh, fixed, false);
            Ok(())
        }
        CKG_GENERATE_COUNTER | CKG_GENERATE_COUNTER_XOR => {
            let counter_bits = generated
                .filter(|&n| n >= MIN_COUNTER_BITS)
                .ok_or_else(bad)?;
            let value = next_counter(token, op, counter_bits)?;
            let mut block = vec![0u8; p.iv.len()];
            let n = block.len();
            let be = value.to_be_bytes();
            let take = be.len().min(n);
            block[n - take..].copy_from_slice(&be[be.len() - take..]);
            merge_bits(p.iv, &block, fixed, p.generator == CKG_GENERATE_COUNTER_XOR);
            Ok(())
        }
        _ => Err(bad()),
    }
}

/// The next value of the counter of `op`'s key value, for a field of
/// `bits` bits (see `ivcounter`).
fn next_counter(token: &Token, op: &mut MessageCipher, bits: usize) -> Result<u64> {
    let KeyMaterial::Aes(key) = &*op.key else {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    };
    let counter = match &op.counter {
        Some(c) => c.clone(),
        None => {
            let c = token.iv_counters.of(&op.key)?;
            op.counter = Some(c.clone());
            c
        }
    };
    counter.next(bits, |count| token.reserve_iv_counter(key.bytes(), count))
}

/// Writes the bits of `src` after the first `fixed` bits into `iv`
/// (replacing or XORing them).
fn merge_bits(iv: &mut [u8], src: &[u8], fixed: usize, xor: bool) {
    for (i, (b, s)) in iv.iter_mut().zip(src).enumerate() {
        let start = i * 8;
        let mask: u8 = if start + 8 <= fixed {
            0
        } else if start >= fixed {
            0xff
        } else {
            0xff >> (fixed - start)
        };
        if xor {
            *b ^= s & mask;
        } else {
            *b = (*b & !mask) | (s & mask);
        }
    }
}

/// Checks the generator of a decryption's parameters: any known one (the
/// IV in `pIv` is used as given).
fn check_decrypt_generator(p: &MessageParams<'_>) -> Result<()> {
    if matches!(
        p.generator,
        CKG_NO_GENERATE
            | CKG_GENERATE
            | CKG_GENERATE_COUNTER
            | CKG_GENERATE_RANDOM
            | CKG_GENERATE_COUNTER_XOR
    ) {
        Ok(())
    } else {
        Err(err(CKR_MECHANISM_PARAM_INVALID))
    }
}

/// Encrypts (tag into `tag`) or decrypts (tag read from `tag`) one whole
/// message with `mechanism` into `out` (at least `input.len()` bytes). A
/// decryption writes `out` only once the tag verified
/// (`CKR_ENCRYPTED_DATA_INVALID` otherwise).
#[allow(clippy::too_many_arguments)]
fn run(
    key: &Arc<KeyMaterial>,
    mechanism: CK_MECHANISM_TYPE,
    direction: Direction,
    iv: &[u8],
    aad: &[u8],
    input: &[u8],
    tag: &mut [u8],
    out: &mut [u8],
) -> Result<usize> {
    use mechanisms::CipherOperation;
    let tag_len = tag.len();
    let param = match mechanism {
        CKM_AES_GCM => Param::Gcm {
            iv,
            aad,
            tag_bits: (tag_len * 8) as CK_ULONG,
        },
        CKM_AES_CCM => Param::Ccm {
            data_len: input.len() as CK_ULONG,
            nonce: iv,
            aad,
            mac_len: tag_len as CK_ULONG,
        },
        CKM_CHACHA20_POLY1305 => Param::ChaChaPoly { nonce: iv, aad },
        _ => return Err(err(CKR_MECHANISM_INVALID)),
    };
    let mech = Mechanism {
        ty: mechanism,
        param,
    };
    let mut cipher =
        mechanisms::cipher_init(&mech, key.clone(), direction, CKF_ENCRYPT | CKF_DECRYPT)?;
    match direction {
        Direction::Encrypt => {
            let mut sealed = Zeroizing::new(vec![0u8; input.len() + tag_len]);
            let n = cipher.process(input, &mut sealed)?;
            if n != input.len() + tag_len {
                return Err(err(CKR_GENERAL_ERROR));
            }
            out[..input.len()].copy_from_slice(&sealed[..input.len()]);
            tag.copy_from_slice(&sealed[input.len()..]);
            Ok(input.len())
        }
        Direction::Decrypt => {
            let mut sealed = Vec::with_capacity(input.len() + tag_len);
            sealed.extend_from_slice(input);
            sealed.extend_from_slice(tag);
            let mut plain = Zeroizing::new(vec![0u8; input.len()]);
            let n = cipher.process(&sealed, &mut plain)?;
            out[..n].copy_from_slice(&plain[..n]);
            Ok(n)
        }
    }
}

/// CCM's declared length against the message's (`CKR_DATA_LEN_RANGE` /
/// `CKR_ENCRYPTED_DATA_LEN_RANGE` when they differ); nothing to check for
/// the others.
fn check_declared(direction: Direction, p: &MessageParams<'_>, len: usize) -> Result<()> {
    match p.data_len {
        Some(declared) if declared != len as CK_ULONG => Err(len_error(direction)),
        _ => Ok(()),
    }
}

/// `C_EncryptMessage` / `C_DecryptMessage`: one whole message. `out` is
/// `None` for a length query; a too-small buffer gives
/// `CKR_BUFFER_TOO_SMALL`. Neither ends the operation, nor does a failed
/// message (the operation ends only with the `*Final` call).
/// `CKR_OPERATION_ACTIVE` while a multi-part message is in progress.
pub fn message(
    session: &Session,
    direction: Direction,
    params: MessageParams<'_>,
    aad: &[u8],
    input: &[u8],
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    let op = idle(&mut ops, direction)?;
    check_params(op.mechanism, &params)?;
    check_declared(direction, &params, input.len())?;
    let Some(out) = out else {
        return Ok(input.len());
    };
    if out.len() < input.len() {
        return Err(Error::buffer_too_small(input.len()));
    }
    whole_message(&session.token, op, direction, params, aad, input, out)
}

/// The IV of one whole message (generated or checked, [`prepare_iv`]),
/// then its encryption or decryption ([`run`]).
fn whole_message(
    token: &Token,
    op: &mut MessageCipher,
    direction: Direction,
    mut params: MessageParams<'_>,
    aad: &[u8],
    input: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    prepare_iv(token, op, direction, &mut params)?;
    run(
        &op.key,
        op.mechanism,
        direction,
        params.iv,
        aad,
        input,
        params.tag,
        out,
    )
}

/// One whole AES-GCM message under `key` outside any message operation
/// (3.2 `C_WrapKeyAuthenticated` / `C_UnwrapKeyAuthenticated`): the
/// parameter checks, IV generation (a counter shared with every message
/// encryption under the same key value) and AES-GCM of `C_EncryptMessage`
/// / `C_DecryptMessage`. `out` holds at least `input.len()` bytes; a
/// decryption writes it only once the tag verified.
#[allow(clippy::too_many_arguments)]
pub(in crate::api) fn one_message(
    session: &Session,
    key: Arc<KeyMaterial>,
    direction: Direction,
    params: MessageParams<'_>,
    aad: &[u8],
    input: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    check_key(CKM_AES_GCM, &key)?;
    check_params(CKM_AES_GCM, &params)?;
    let mut op = MessageCipher {
        mechanism: CKM_AES_GCM,
        key,
        counter: None,
        pending: None,
    };
    whole_message(&session.token, &mut op, direction, params, aad, input, out)
}

/// The message operation of `direction`, with no multi-part message in
/// progress (`CKR_OPERATION_ACTIVE` while one is).
fn idle(ops: &mut Operations, direction: Direction) -> Result<&mut MessageCipher> {
    let op = ops
        .message_cipher(direction)
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    if op.pending.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    Ok(op)
}

/// The IV of a new message: generated into `pIv` for an encryption (as
/// its `ivGenerator` asks), the caller's for a decryption (checked).
fn prepare_iv(
    token: &Token,
    op: &mut MessageCipher,
    direction: Direction,
    params: &mut MessageParams<'_>,
) -> Result<()> {
    match direction {
        Direction::Encrypt => generate_iv(token, op, params),
        Direction::Decrypt => check_decrypt_generator(params),
    }
}

/// `C_EncryptMessageBegin` / `C_DecryptMessageBegin` (§5.19 / §5.20):
/// starts a multi-part message with its per-message parameter and
/// associated data. An encryption generates the IV or nonce now (written
/// to `pIv` / `pNonce`) as `C_EncryptMessage` does. A CCM message's
/// `ulDataLen` is its whole length (past [`MAX_MESSAGE_LEN`]:
/// `CKR_DATA_LEN_RANGE` / `CKR_ENCRYPTED_DATA_LEN_RANGE`).
/// `CKR_OPERATION_ACTIVE` while a message is in progress; on any error no
/// message is started.
pub fn begin(
    session: &Session,
    direction: Direction,
    mut params: MessageParams<'_>,
    aad: &[u8],
) -> Result<()> {
    let mut ops = session.ops.lock();
    let op = idle(&mut ops, direction)?;
    check_params(op.mechanism, &params)?;
    let data_len = match params.data_len {
        Some(n) => Some(
            usize::try_from(n)
                .ok()
                .filter(|&n| n <= MAX_MESSAGE_LEN)
                .ok_or_else(|| len_error(direction))?,
        ),
        None => None,
    };
    prepare_iv(&session.token, op, direction, &mut params)?;
    op.pending = Some(Pending {
        iv: params.iv.to_vec(),
        aad: aad.to_vec(),
        tag_len: params.tag.len(),
        data_len,
        data: Zeroizing::new(Vec::new()),
    });
    Ok(())
}

/// `C_EncryptMessageNext` / `C_DecryptMessageNext` (§5.19 / §5.20): adds
/// `input`. A part that is not the last outputs nothing (0 bytes); the
/// last (`CKF_END_OF_MESSAGE`) outputs the whole message's ciphertext or,
/// once the tag in `params` verified, plaintext, and writes (encryption)
/// or reads (decryption) the tag through `params` (required then; its tag
/// length, and for CCM its `ulDataLen`, must be the `Begin`'s). A CCM part
/// that takes the message past its `ulDataLen`, or a last part that leaves
/// it short: `CKR_DATA_LEN_RANGE` / `CKR_ENCRYPTED_DATA_LEN_RANGE`. `out`
/// `None` is a length query: it, and `CKR_BUFFER_TOO_SMALL`, add nothing
/// and keep the message, so the same call can be repeated. Any other error
/// ends the message (not the operation), as does the last part.
pub fn next(
    session: &Session,
    direction: Direction,
    params: Option<MessageParams<'_>>,
    input: &[u8],
    last: bool,
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mut ops = session.ops.lock();
    let MessageCipher {
        mechanism,
        key,
        pending,
        ..
    } = ops
        .message_cipher(direction)
        .as_mut()
        .ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let message = pending.as_mut().ok_or(err(CKR_OPERATION_NOT_INITIALIZED))?;
    let query = out.is_none();
    let part = Part {
        input,
        last,
        params,
    };
    let r = next_part(key, *mechanism, direction, message, part, out);
    let keep = match &r {
        Ok(_) => !last || query,
        Err(e) => e.rv() == CKR_BUFFER_TOO_SMALL,
    };
    if !keep {
        *pending = None;
    }
    r
}

/// One part of a multi-part message, as passed to a `*MessageNext`.
struct Part<'i, 'p> {
    input: &'i [u8],
    last: bool,
    params: Option<MessageParams<'p>>,
}

/// The work of [`next`] on the message `m`; commits the part's input to it
/// only when the call succeeds and is not a length query.
fn next_part(
    key: &Arc<KeyMaterial>,
    mechanism: CK_MECHANISM_TYPE,
    direction: Direction,
    m: &mut Pending,
    part: Part<'_, '_>,
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let Part {
        input,
        last,
        params,
    } = part;
    if let Some(p) = &params {
        check_params(mechanism, p)?;
        let declared = m.data_len.map(|n| n as CK_ULONG);
        if p.tag.len() != m.tag_len || p.data_len != declared {
            return Err(err(CKR_MECHANISM_PARAM_INVALID));
        }
    }
    let total = check_len(direction, m.data.len(), input.len())?;
    if let Some(declared) = m.data_len
        && (total > declared || (last && total != declared))
    {
        return Err(len_error(direction));
    }
    if !last {
        if out.is_some() {
            append(&mut m.data, input);
        }
        return Ok(0);
    }
    let Some(params) = params else {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    };
    let Some(out) = out else {
        return Ok(total);
    };
    if out.len() < total {
        return Err(Error::buffer_too_small(total));
    }
    append(&mut m.data, input);
    run(
        key, mechanism, direction, &m.iv, &m.aad, &m.data, params.tag, out,
    )
}

/// Ends the multi-part message in progress, if any (the operation stays).
pub fn end_message(session: &Session, direction: Direction) {
    if let Some(op) = session.ops.lock().message_cipher(direction) {
        op.pending = None;
    }
}

/// Appends `part` to `buf`; a buffer that must grow moves to a fresh
/// allocation and the old one is zeroized (plain `Vec` growth would leave
/// copies of the plaintext in freed memory).
fn append(buf: &mut Zeroizing<Vec<u8>>, part: &[u8]) {
    let need = buf.len() + part.len();
    if buf.capacity() < need {
        let cap = need
            .max(buf.capacity().saturating_mul(2))
            .min(MAX_MESSAGE_LEN.max(need));
        let mut grown = Zeroizing::new(Vec::with_capacity(cap));
        grown.extend_from_slice(buf);
        *buf = grown;
    }
    buf.extend_from_slice(part);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_bound_per_direction() {
        assert_eq!(check_len(Direction::Encrypt, 10, 5).unwrap(), 15);
        assert_eq!(
            check_len(Direction::Encrypt, MAX_MESSAGE_LEN, 0).unwrap(),
            MAX_MESSAGE_LEN
        );
        assert_eq!(
            check_len(Direction::Encrypt, MAX_MESSAGE_LEN, 1)
                .unwrap_err()
                .rv(),
            CKR_DATA_LEN_RANGE
        );
        assert_eq!(
            check_len(Direction::Decrypt, MAX_MESSAGE_LEN - 1, 2)
                .unwrap_err()
                .rv(),
            CKR_ENCRYPTED_DATA_LEN_RANGE
        );
        assert_eq!(
            check_len(Direction::Decrypt, usize::MAX, 1)
                .unwrap_err()
                .rv(),
            CKR_ENCRYPTED_DATA_LEN_RANGE
        );
        // GCM's own limit (2^39 - 256 bits) is above the memory bound.
        assert!(MAX_MESSAGE_LEN as u64 <= ((1u64 << 39) - 256) / 8);
    }

    #[test]
    fn append_keeps_every_part_in_order() {
        let mut buf = Zeroizing::new(Vec::new());
        let mut expected = Vec::new();
        for i in 0..200u8 {
            let part = vec![i; usize::from(i % 7)];
            append(&mut buf, &part);
            expected.extend_from_slice(&part);
        }
        append(&mut buf, &[]);
        assert_eq!(&buf[..], &expected[..]);
    }
}
