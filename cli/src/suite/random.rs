//! C_GenerateRandom, and C_GetSessionInfo (a call without cryptography that shows
//! the per-call overhead of the module and of the harness).

use std::sync::Arc;

use cryptoki_sys::*;

use super::{DataSpec, Failure, OpDef, OpKind, Prep, Worker, ck};
use crate::raw::RawModule;

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
}

impl Worker for RandomWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        self.raw.generate_random(self.s, &mut self.out)
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        if self.out.len() >= 16 && self.out.iter().all(|&b| b == 0) {
            return Err(Failure::Check("random output is all zero".into()));
        }
        // Clear, so that a call that returns CKR_OK without writing is noticed.
        self.out.fill(0);
        Ok(())
    }
}

/// Worker drawing `n` random bytes.
pub fn random_worker(n: usize, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    Ok(Box::new(RandomWorker {
        raw: p.raw.clone(),
        s: p.session,
        out: vec![0u8; n],
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
