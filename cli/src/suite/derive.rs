//! Key agreement: ECDH (`CKM_ECDH1_DERIVE`, no KDF, PKCS#11 3.0 mechanisms
//! §2.3.14) on P-256, P-384 and P-521, X25519 (the same mechanism with
//! Montgomery keys, §2.3.9), and finite-field Diffie-Hellman
//! (`CKM_DH_PKCS_DERIVE`, §2.5) in RFC 7919's ffdhe2048 group (the peer's
//! `CKA_VALUE` as the parameter, a 256-byte secret). The timed region is one `C_DeriveKey` of a
//! generic secret as long as the field (32, 48, 66 bytes; X25519 32: see
//! [`DeriveAlg::secret_len`]) from the op's private key and a peer's public
//! value; the derived key is destroyed after the timer stops.
//!
//! Checks: while preparing, a second key pair (the peer) is generated and the
//! secret is derived from both sides (ours × peer, peer × ours): the two
//! values (`CKA_VALUE`, derived extractable and not sensitive) must be of the
//! field's length and equal. A sample of the timed derivations (see
//! [`check::Sampler`]) is read back and compared with that agreed value
//! (length, then value).
//! The peer's public value is passed raw (as the mechanisms spec has it; the
//! uncompressed point, 133 bytes on P-521); modules that want the DER `OCTET
//! STRING` of `CKA_EC_POINT` (long-form length on P-521) get that form
//! instead.

use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::Curve;
use super::alg::DeriveAlg;
use super::alg::KeySpec;
use super::check;
use super::failure::Failure;
use super::failure::ck;
use super::keys;
use super::keyset::KeyHandles;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use crate::token::ckr::ckr_name;
use crate::token::raw::{Mech, RawModule, Template};

impl DeriveAlg {
    fn stem(&self) -> &'static str {
        match self {
            DeriveAlg::Ecdh(c) => c.id(),
            DeriveAlg::X25519 => "x25519",
            DeriveAlg::Ffdhe2048 => "ffdhe2048",
        }
    }

    fn title(&self) -> String {
        match self {
            DeriveAlg::Ecdh(c) => format!("ECDH {}", c.title()),
            DeriveAlg::X25519 => "X25519".into(),
            DeriveAlg::Ffdhe2048 => "DH ffdhe2048".into(),
        }
    }

    /// The key pair it uses.
    pub fn key(&self) -> KeySpec {
        match self {
            DeriveAlg::Ecdh(c) => KeySpec::EcDerive(*c),
            DeriveAlg::X25519 => KeySpec::X25519,
            DeriveAlg::Ffdhe2048 => KeySpec::DhFfdhe2048,
        }
    }

    /// The timed mechanism.
    pub fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            DeriveAlg::Ffdhe2048 => CKM_DH_PKCS_DERIVE,
            _ => CKM_ECDH1_DERIVE,
        }
    }

    /// The mechanism deriving against the peer's public value `public`
    /// (DH: its `CKA_VALUE` as the parameter).
    fn mech(&self, public: &[u8]) -> Mech {
        match self {
            DeriveAlg::Ffdhe2048 => Mech::with_bytes(CKM_DH_PKCS_DERIVE, public),
            _ => Mech::ecdh(public),
        }
    }

    /// Length of the shared secret in bytes: the x-coordinate, as long as
    /// the field (PKCS#11 3.0 mechanisms, ECDH with `CKD_NULL`; SEC 1 §3.3.1,
    /// the field element converted by §2.3.5: P-521's 521 bits take 66
    /// bytes), or X25519's 32.
    pub fn secret_len(&self) -> usize {
        match self {
            DeriveAlg::Ecdh(c) => (c.bits() as usize).div_ceil(8),
            DeriveAlg::X25519 => 32,
            DeriveAlg::Ffdhe2048 => 256,
        }
    }
}

/// The derive op of `a`.
pub fn derive_op(a: DeriveAlg) -> OpDef {
    let key = a.key();
    OpDef {
        id: match a {
            DeriveAlg::Ffdhe2048 => format!("{}-dh-derive", a.stem()),
            _ => format!("{}-ecdh-derive", a.stem()),
        },
        title: format!("{} key agreement (C_DeriveKey)", a.title()),
        kind: OpKind::Derive(a),
        mechanism: a.mechanism(),
        also_needs: key.gen_mechanism().into_iter().collect(),
        key: Some(key),
        key_bits: match a {
            DeriveAlg::Ecdh(c) => Some(u64::from(c.bits())),
            DeriveAlg::X25519 => None,
            DeriveAlg::Ffdhe2048 => Some(2048),
        },
        data: DataSpec::Fixed(0),
    }
}

/// Derive ops of the catalogue.
pub fn ops() -> Vec<OpDef> {
    [
        DeriveAlg::Ecdh(Curve::P256),
        DeriveAlg::Ecdh(Curve::P384),
        DeriveAlg::Ecdh(Curve::P521),
        DeriveAlg::X25519,
        DeriveAlg::Ffdhe2048,
    ]
    .into_iter()
    .map(derive_op)
    .collect()
}

/// The point inside a DER `OCTET STRING`, if `v` is one (as `CKA_EC_POINT`
/// is); `v` itself otherwise.
pub fn unwrap_octet_string(v: &[u8]) -> &[u8] {
    let (Some(&0x04), Some(&first)) = (v.first(), v.get(1)) else {
        return v;
    };
    let (len, header) = match first {
        n if n < 0x80 => (n as usize, 2),
        0x81 => match v.get(2) {
            Some(&n) => (n as usize, 3),
            None => return v,
        },
        _ => return v,
    };
    if v.len() == header + len {
        &v[header..]
    } else {
        v
    }
}

/// The generic-secret template of a derived key of `len` bytes.
fn derived_template(len: usize, token: bool) -> Template {
    Template::new()
        .ulong(CKA_CLASS, CKO_SECRET_KEY)
        .ulong(CKA_KEY_TYPE, CKK_GENERIC_SECRET)
        .ulong(CKA_VALUE_LEN, len as CK_ULONG)
        .bool(CKA_TOKEN, token)
        .bool(CKA_SENSITIVE, false)
        .bool(CKA_EXTRACTABLE, true)
}

struct DeriveWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    setup: CK_SESSION_HANDLE,
    mech: Mech,
    key: CK_OBJECT_HANDLE,
    template: Template,
    made: CK_OBJECT_HANDLE,
    agreed: Vec<u8>,
    peer: KeyHandles,
    sampler: check::Sampler,
}

impl Worker for DeriveWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let (rv, h) = self
            .raw
            .derive_key(self.s, &mut self.mech, self.key, &mut self.template);
        self.made = h;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        let h = std::mem::take(&mut self.made);
        check::made_key(
            &self.raw,
            self.s,
            h,
            &self.agreed,
            &mut self.sampler,
            "derived secret",
        )
    }
}

impl Drop for DeriveWorker {
    fn drop(&mut self) {
        for h in [self.peer.public, self.peer.private].into_iter().flatten() {
            let _ = self.raw.destroy_object(self.setup, h);
        }
    }
}

/// One derivation outside the timer: the derived value, or the failure.
fn derive_value(
    a: DeriveAlg,
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    private: CK_OBJECT_HANDLE,
    peer_public: &[u8],
    len: usize,
    token: bool,
) -> Result<Vec<u8>, Failure> {
    let (rv, h) = raw.derive_key(
        s,
        &mut a.mech(peer_public),
        private,
        &mut derived_template(len, token),
    );
    ck(rv)?;
    let value = raw.attribute(s, h, CKA_VALUE);
    let _ = raw.destroy_object(s, h);
    value.map_err(|rv| {
        Failure::Unsupported(format!(
            "the derived secret cannot be read back ({}), so the agreement cannot be checked",
            ckr_name(rv)
        ))
    })
}

/// Worker deriving from the op's private key and a peer's public value
/// (checks: see the module documentation).
pub fn worker(a: DeriveAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let k = p.key()?;
    let (ours_private, ours_public) = (k.private_key()?, k.public_key()?);
    let token = !p.store.session_first();
    let peer = keys::generate(p.raw, p.setup, a.key(), p.store, 1000 + p.thread)?;
    // From here on the worker owns the peer's objects (destroyed on drop).
    let mut w = DeriveWorker {
        raw: p.raw.clone(),
        s: p.session,
        setup: p.setup,
        mech: Mech::ecdh(&[]),
        key: ours_private,
        template: derived_template(a.secret_len(), token),
        made: 0,
        agreed: Vec::new(),
        peer,
        sampler: check::Sampler::default(),
    };
    // The public value: the EC point, or a DH key's CKA_VALUE (y).
    let public_attr = match a {
        DeriveAlg::Ffdhe2048 => CKA_VALUE,
        _ => CKA_EC_POINT,
    };
    let point = |h: CK_OBJECT_HANDLE| {
        p.raw
            .attribute(p.setup, h, public_attr)
            .map_err(Failure::Rv)
    };
    let peer_der = point(w.peer.public_key()?)?;
    let ours_der = point(ours_public)?;
    let forms = |der: &[u8]| {
        let raw_point = match a {
            DeriveAlg::Ffdhe2048 => der.to_vec(),
            _ => unwrap_octet_string(der).to_vec(),
        };
        if raw_point.len() == der.len() {
            vec![raw_point]
        } else {
            vec![raw_point, der.to_vec()]
        }
    };
    let mut last = Failure::Check("no form of the public value was tried".into());
    for (peer_form, ours_form) in forms(&peer_der).into_iter().zip(forms(&ours_der)) {
        let len = a.secret_len();
        let ours = match derive_value(a, p.raw, p.setup, ours_private, &peer_form, len, token) {
            Ok(v) => v,
            Err(Failure::Rv(rv)) => {
                last = Failure::Rv(rv);
                continue;
            }
            Err(other) => return Err(other),
        };
        let theirs = derive_value(
            a,
            p.raw,
            p.setup,
            w.peer.private_key()?,
            &ours_form,
            len,
            token,
        )?;
        check::length("derived secret", ours.len(), len)?;
        if ours != theirs {
            return Err(check::failed(
                "self-check: the two sides derive different secrets",
            ));
        }
        w.agreed = ours;
        w.mech = a.mech(&peer_form);
        return Ok(Box::new(w));
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_octet_strings_are_unwrapped_and_raw_points_kept() {
        let point: Vec<u8> = std::iter::once(0x04).chain(1..=64).collect();
        let mut der = vec![0x04, 65];
        der.extend_from_slice(&point);
        assert_eq!(unwrap_octet_string(&der), &point[..]);
        assert_eq!(unwrap_octet_string(&point), &point[..]);
        let x25519 = [7u8; 32];
        let mut der = vec![0x04, 32];
        der.extend_from_slice(&x25519);
        assert_eq!(unwrap_octet_string(&der), &x25519[..]);
        // P-521: a long-form length.
        let big: Vec<u8> = std::iter::once(0x04)
            .chain((0..132).map(|i| i as u8))
            .collect();
        let mut der = vec![0x04, 0x81, 133];
        der.extend_from_slice(&big);
        assert_eq!(unwrap_octet_string(&der), &big[..]);
    }

    #[test]
    fn ops_name_curve_and_mechanism() {
        let ids: Vec<String> = ops().into_iter().map(|o| o.id).collect();
        assert_eq!(
            ids,
            [
                "p256-ecdh-derive",
                "p384-ecdh-derive",
                "p521-ecdh-derive",
                "x25519-ecdh-derive",
                "ffdhe2048-dh-derive"
            ]
        );
        let dh = derive_op(DeriveAlg::Ffdhe2048);
        assert_eq!(
            (dh.mechanism, dh.key, dh.key_bits),
            (CKM_DH_PKCS_DERIVE, Some(KeySpec::DhFfdhe2048), Some(2048))
        );
        assert_eq!(dh.also_needs, [CKM_DH_PKCS_KEY_PAIR_GEN]);
        assert_eq!(DeriveAlg::Ffdhe2048.secret_len(), 256);
        let p = keys::ffdhe2048_prime();
        assert_eq!((p.len(), p[0], p[255]), (256, 0xff, 0xff));
        assert_eq!(DeriveAlg::Ecdh(Curve::P256).secret_len(), 32);
        assert_eq!(DeriveAlg::Ecdh(Curve::P384).secret_len(), 48);
        assert_eq!(DeriveAlg::Ecdh(Curve::P521).secret_len(), 66);
        assert_eq!(DeriveAlg::X25519.secret_len(), 32);
        for o in ops().into_iter().filter(|o| o.id.contains("-ecdh-")) {
            assert_eq!(o.mechanism, CKM_ECDH1_DERIVE, "{}", o.id);
            let pair_gen = if o.id.starts_with('p') {
                CKM_EC_KEY_PAIR_GEN
            } else {
                CKM_EC_MONTGOMERY_KEY_PAIR_GEN
            };
            assert_eq!(o.also_needs, [pair_gen], "{}", o.id);
        }
    }

    /// P-521's op uses a P-521 key-agreement pair and states its 521-bit
    /// size (checked against the token's `CKM_ECDH1_DERIVE` key-size range).
    #[test]
    fn the_p521_op_uses_a_p521_derive_pair() {
        let p521 = derive_op(DeriveAlg::Ecdh(Curve::P521));
        assert_eq!(
            (p521.key, p521.key_bits),
            (Some(KeySpec::EcDerive(Curve::P521)), Some(521))
        );
        assert_eq!(p521.title, "ECDH P-521 key agreement (C_DeriveKey)");
    }
}
