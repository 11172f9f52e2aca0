//! C_GenerateRandom, C_SeedRandom, and C_GetSessionInfo (a call without cryptography that shows
//! the per-call overhead of the module and of the harness).

use std::sync::Arc;

use cryptoki_sys::*;

use super::check;
use super::failure::Failure;
use super::failure::ck;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use super::op::test_data;
use crate::token::raw::RawModule;

/// Random and overhead ops of the catalogue.
pub fn ops() -> Vec<OpDef> {
    vec![
        OpDef {
            id: "random32".into(),
            title: "Random (32 bytes)".into(),
            kind: OpKind::Random(32),
            mechanism: 0,
            also_needs: vec![],
            key: None,
            key_bits: None,
            data: DataSpec::Fixed(32),
        },
        OpDef {
            id: "seed-random32".into(),
            title: "C_SeedRandom (32 bytes)".into(),
            kind: OpKind::SeedRandom(32),
            mechanism: 0,
            also_needs: vec![],
            key: None,
            key_bits: None,
            data: DataSpec::Fixed(32),
        },
        OpDef {
            id: "session-info".into(),
            title: "C_GetSessionInfo (call overhead)".into(),
            kind: OpKind::SessionInfo,
            mechanism: 0,
            also_needs: vec![],
            key: None,
            key_bits: None,
            data: DataSpec::Fixed(0),
        },
    ]
}

struct RandomWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    out: Vec<u8>,
    prev: Vec<u8>,
}

/// Random output cannot be checked for correctness; what can be checked: the
/// whole buffer was written (no 16-byte block, nor a shorter buffer, left all
/// zero, which a real generator does with probability 2^-128 or, for short
/// buffers, rarely) and two outputs in a row differ.
fn check_random(out: &[u8], prev: &[u8]) -> Result<(), Failure> {
    if out
        .chunks(16)
        .any(|c| c.len() >= 8 && c.iter().all(|&b| b == 0))
    {
        return Err(check::failed(
            "random output not fully written (zero block)",
        ));
    }
    if out.len() >= 8 && out == prev {
        return Err(check::failed("two random outputs in a row are equal"));
    }
    Ok(())
}

impl Worker for RandomWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        self.raw.generate_random(self.s, &mut self.out)
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        let r = check_random(&self.out, &self.prev);
        // Keep this output; clear the buffer, so that a call that returns
        // CKR_OK without writing is noticed.
        std::mem::swap(&mut self.out, &mut self.prev);
        self.out.fill(0);
        r
    }
}

/// Worker drawing `n` random bytes.
pub fn random_worker(n: usize, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    Ok(Box::new(RandomWorker {
        raw: p.raw.clone(),
        s: p.session,
        out: vec![0u8; n],
        prev: vec![0u8; n],
    }))
}

/// Why a C_SeedRandom return value means the token does not offer seeding.
pub fn seed_refusal(rv: CK_RV) -> Option<String> {
    match rv {
        CKR_RANDOM_SEED_NOT_SUPPORTED | CKR_FUNCTION_NOT_SUPPORTED | CKR_RANDOM_NO_RNG => {
            Some(format!(
                "the token refuses C_SeedRandom ({})",
                crate::token::ckr::ckr_name(rv)
            ))
        }
        _ => None,
    }
}

struct SeedWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    seed: Vec<u8>,
    counter: u64,
    out: Vec<u8>,
    prev: Vec<u8>,
    sampler: check::Sampler,
}

impl Worker for SeedWorker {
    fn before(&mut self) {
        // The same seed every time but for a counter: seeding must mix into
        // the generator's state, never replace it.
        self.counter += 1;
        self.seed[..8].copy_from_slice(&self.counter.to_be_bytes());
    }

    #[inline]
    fn call(&mut self) -> CK_RV {
        self.raw.seed_random(self.s, &mut self.seed)
    }

    /// C_SeedRandom has no output. Checked on a sample: after seeding, the
    /// generator still gives fully written outputs that differ from the last
    /// one (a token that reset its generator to the seed would repeat them
    /// for equal seeds, see [`seed_worker`]).
    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        let (raw, s, out, prev) = (&self.raw, self.s, &mut self.out, &mut self.prev);
        self.sampler
            .sample(|| {
                ck(raw.generate_random(s, out))?;
                let r = check_random(out, prev);
                std::mem::swap(out, prev);
                out.fill(0);
                r
            })
            .unwrap_or(Ok(()))
    }
}

/// Worker calling C_SeedRandom with `n` bytes. While preparing: a token that
/// refuses seeding makes the op unsupported; seeding twice with one seed
/// must not make C_GenerateRandom repeat itself.
pub fn seed_worker(n: usize, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let mut seed = test_data(n.max(8), 5);
    let mut outs = [vec![0u8; 32], vec![0u8; 32]];
    for out in &mut outs {
        let rv = p.raw.seed_random(p.session, &mut seed);
        if let Some(why) = seed_refusal(rv) {
            return Err(Failure::Unsupported(why));
        }
        ck(rv)?;
        ck(p.raw.generate_random(p.session, out))?;
    }
    check_random(&outs[1], &outs[0])
        .map_err(|_| check::failed("C_GenerateRandom repeats itself after equal seeds"))?;
    Ok(Box::new(SeedWorker {
        raw: p.raw.clone(),
        s: p.session,
        seed,
        counter: 0,
        out: vec![0u8; 32],
        prev: std::mem::take(&mut outs[1]),
        sampler: check::Sampler::default(),
    }))
}

struct SessionInfoWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    info: CK_SESSION_INFO,
}

impl Worker for SessionInfoWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        self.raw.session_info(self.s, &mut self.info)
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)
    }
}

/// Worker calling C_GetSessionInfo.
pub fn session_info_worker(p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    Ok(Box::new(SessionInfoWorker {
        raw: p.raw.clone(),
        s: p.session,
        info: CK_SESSION_INFO {
            slotID: 0,
            state: 0,
            flags: 0,
            ulDeviceError: 0,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeding_refusals_are_unsupported_other_codes_are_errors() {
        for rv in [
            CKR_RANDOM_SEED_NOT_SUPPORTED,
            CKR_FUNCTION_NOT_SUPPORTED,
            CKR_RANDOM_NO_RNG,
        ] {
            assert!(seed_refusal(rv).unwrap().contains("C_SeedRandom"), "{rv}");
        }
        assert!(seed_refusal(CKR_OK).is_none());
        assert!(seed_refusal(CKR_SESSION_HANDLE_INVALID).is_none());
        assert_eq!(Failure::Unsupported("x".into()).name(), "UNSUPPORTED(x)");
        let o = ops();
        let seed = o.iter().find(|o| o.id == "seed-random32").unwrap();
        assert_eq!(seed.kind, OpKind::SeedRandom(32));
        assert_eq!(seed.mechanism_name(), "none");
    }

    #[test]
    fn random_outputs_must_be_written_and_differ() {
        let a: Vec<u8> = (1..=32).collect();
        let b: Vec<u8> = (2..=33).collect();
        assert!(check_random(&a, &b).is_ok());
        assert!(check_random(&a, &a).is_err(), "repeated output");
        let mut half = a.clone();
        half[16..].fill(0);
        assert!(check_random(&half, &b).is_err(), "half written");
        assert!(check_random(&[0u8; 32], &b).is_err(), "not written");
    }
}
