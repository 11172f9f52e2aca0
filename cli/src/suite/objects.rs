//! Object search: find one object by label among n session objects. The objects
//! are created while preparing and destroyed when the worker is dropped.

use std::sync::Arc;

use cryptoki_sys::*;

use super::failure::Failure;
use super::failure::ck;
use super::failure::overlong;
use super::keyset::may_refuse_session_objects;
use super::keyset::token_key_prefix;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use crate::token::entries::{Broken, broken};
use crate::token::random::random_bytes;
use crate::token::raw::{RawModule, Template};

/// A find op among `n` objects (`find-object` for one object).
pub fn find_op(n: usize) -> OpDef {
    OpDef {
        id: if n == 1 {
            "find-object".into()
        } else {
            format!("find-object-{n}")
        },
        title: format!("Find object ({n} on token)"),
        kind: OpKind::FindObject(n),
        mechanism: 0,
        also_needs: vec![],
        key: None,
        key_bits: None,
        data: DataSpec::Fixed(0),
    }
}

/// Object ops of the catalogue.
pub fn ops() -> Vec<OpDef> {
    [1, 10, 1000, 10000].into_iter().map(find_op).collect()
}

/// A data object to search among: a public session object, or a private
/// token object (tpm2-pkcs11 refuses public ones: "CKA_PRIVATE cannot be
/// CK_FALSE"; the run is logged in, so either is found).
fn data_object(label: &str, token: bool) -> Template {
    Template::new()
        .ulong(CKA_CLASS, CKO_DATA)
        .bool(CKA_TOKEN, token)
        .bool(CKA_PRIVATE, token)
        .bytes(CKA_LABEL, label.as_bytes())
        .bytes(CKA_VALUE, b"hsm-bench")
}

/// Times `C_FindObjectsInit` + `C_FindObjects` + `C_FindObjectsFinal` with a
/// template that must match exactly one object, `target`.
pub struct FindOne {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    template: Template,
    target: CK_OBJECT_HANDLE,
    found: [CK_OBJECT_HANDLE; 2],
    n: usize,
    rv_final: CK_RV,
}

impl FindOne {
    /// A search in session `s` that must find `target` alone.
    pub fn new(
        raw: Arc<RawModule>,
        s: CK_SESSION_HANDLE,
        template: Template,
        target: CK_OBJECT_HANDLE,
    ) -> Self {
        FindOne {
            raw,
            s,
            template,
            target,
            found: [0; 2],
            n: 0,
            rv_final: CKR_OK,
        }
    }
}

impl Worker for FindOne {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let rv = self.raw.find_objects_init(self.s, &mut self.template);
        if rv != CKR_OK {
            return rv;
        }
        let (rv, n) = self.raw.find_objects(self.s, &mut self.found);
        self.n = n;
        self.rv_final = self.raw.find_objects_final(self.s);
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        if let Some(Broken::Overlong(call)) = broken(rv) {
            return Err(overlong(
                &self.raw,
                call,
                self.n,
                self.found.len(),
                "objects",
            ));
        }
        ck(rv)?;
        ck(self.rv_final)?;
        if self.n != 1 || self.found[0] != self.target {
            return Err(Failure::Check(format!(
                "found {} objects, expected the one",
                self.n
            )));
        }
        Ok(())
    }
}

/// [`FindOne`] among session objects it made, destroyed when dropped.
struct FindWorker {
    find: FindOne,
    setup: CK_SESSION_HANDLE,
    created: Vec<CK_OBJECT_HANDLE>,
}

impl Worker for FindWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        self.find.call()
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        self.find.check(rv)
    }
}

impl Drop for FindWorker {
    fn drop(&mut self) {
        for h in self.created.drain(..) {
            let _ = self.find.raw.destroy_object(self.setup, h);
        }
    }
}

/// Worker finding its own target object among `n` objects it created:
/// session objects, or token objects labelled with [`token_key_prefix`] as
/// `--key-store` says (by default when the token refuses session objects).
pub fn find_worker(n: usize, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let tag: String = random_bytes::<4>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // Made before the objects, so that a failure half-way destroys them.
    let mut w = FindWorker {
        find: FindOne::new(p.raw.clone(), p.session, Template::new(), 0),
        setup: p.setup,
        created: Vec::with_capacity(n),
    };
    let mut token = !p.store.session_first();
    let stem = |token: bool| {
        let base = if token {
            token_key_prefix()
        } else {
            "hsm-bench-"
        };
        format!("{base}find-{tag}-{}", p.thread)
    };
    let target_label = |token: bool| format!("{}-target", stem(token));
    // The target first: it decides where the objects go.
    let (mut rv, mut target) = p
        .raw
        .create_object(p.setup, &mut data_object(&target_label(token), token));
    if rv != CKR_OK && !token && p.store.falls_back() && may_refuse_session_objects(rv) {
        let refused = rv;
        (rv, target) = p
            .raw
            .create_object(p.setup, &mut data_object(&target_label(true), true));
        if rv == CKR_OK {
            token = true;
            eprintln!(
                "note: the module refused a session object ({}); find-object makes token \
                 objects labelled {}, destroyed at the end of the op",
                crate::token::ckr::ckr_name(refused),
                stem(true)
            );
        } else {
            return Err(Failure::Check(format!(
                "the module refused a session object ({}) and a token object ({})",
                crate::token::ckr::ckr_name(refused),
                crate::token::ckr::ckr_name(rv)
            )));
        }
    }
    ck(rv)?;
    w.created.push(target);
    for i in 1..n {
        let (rv, h) = p.raw.create_object(
            p.setup,
            &mut data_object(&format!("{}-{i}", stem(token)), token),
        );
        ck(rv)?;
        w.created.push(h);
    }
    w.find.target = target;
    w.find.template = Template::new()
        .ulong(CKA_CLASS, CKO_DATA)
        .bytes(CKA_LABEL, target_label(token).as_bytes());
    Ok(Box::new(w))
}
