//! Diffie-Hellman keys and domain parameters (mechanisms spec 3.0 §2.5.2–
//! §2.5.6): import checks, key-pair generation, parameter generation.

use super::groups::{Group, MAX_CHECKED_BITS, MIN_BITS, minimal};
use super::key::{PrivateKey, PublicKey};
use crate::attributes::Attributes;
use crate::error::{Result, err};
use crate::mechanisms::material::{GeneratedPair, KeyMaterial};
use crate::mechanisms::random::os_fill;
use crypto_bigint::{BoxedUint, Resize};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroizing;

fn get(attrs: &Attributes, ty: CK_ATTRIBUTE_TYPE) -> Result<&[u8]> {
    attrs.bytes(ty).ok_or(err(CKR_TEMPLATE_INCOMPLETE))
}

fn group_of(attrs: &Attributes) -> Result<Arc<Group>> {
    Group::from_values(get(attrs, CKA_PRIME)?, get(attrs, CKA_BASE)?)
}

fn set_group(attrs: &mut Attributes, group: &Group) {
    attrs.set_bytes(CKA_PRIME, &group.prime());
    attrs.set_bytes(CKA_BASE, &group.base());
}

/// x as an integer, checked: 1 ≤ x < q. It is kept at the precision of
/// its length (whole 64-bit words), which `CKA_VALUE_BITS` makes public
/// anyway: the exponentiations are constant time over that many bits, not
/// over all of p's (a 224-bit x on a 2048-bit group costs a ninth).
fn private_value(group: &Group, x: &[u8]) -> Result<Zeroizing<BoxedUint>> {
    let bad = || err(CKR_ATTRIBUTE_VALUE_INVALID);
    let x = Zeroizing::new(group.integer(x).ok_or_else(bad)?);
    if bool::from(x.is_zero()) || *x >= *group.order() {
        return Err(bad());
    }
    let words = x.bits().div_ceil(64).max(1);
    // Copied into a new buffer (resizing in place could free the old one
    // unwiped); the full-precision value is wiped on drop.
    Ok(Zeroizing::new(Resize::resize_unchecked(&*x, words * 64)))
}

/// y as an integer, checked: 1 < y < p − 1 and y^q = 1 mod p.
fn public_value(group: &Group, y: &[u8]) -> Result<BoxedUint> {
    let bad = || err(CKR_ATTRIBUTE_VALUE_INVALID);
    let y = group.integer(y).ok_or_else(bad)?;
    if !group.in_subgroup(&y) {
        return Err(bad());
    }
    Ok(y)
}

/// The minimal big-endian bytes of a secret; the full-width copy is wiped.
fn minimal_secret(n: &BoxedUint) -> Zeroizing<Vec<u8>> {
    let full = Zeroizing::new(n.to_be_bytes());
    Zeroizing::new(super::groups::trim(&full).to_vec())
}

/// Checks an imported public key, private key or domain-parameters object
/// and stores its integers minimally encoded; computes `CKA_VALUE_BITS`
/// (private keys) or `CKA_PRIME_BITS` (domain parameters).
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let group = group_of(attrs)?;
    match class {
        CKO_PUBLIC_KEY => {
            let y = public_value(&group, get(attrs, CKA_VALUE)?)?;
            attrs.set_bytes(CKA_VALUE, &minimal(&y));
        }
        CKO_PRIVATE_KEY => {
            let x = private_value(&group, get(attrs, CKA_VALUE)?)?;
            attrs.set_bytes(CKA_VALUE, &minimal_secret(&x));
            attrs.set_ulong(CKA_VALUE_BITS, CK_ULONG::from(x.bits()));
        }
        _ => attrs.set_ulong(CKA_PRIME_BITS, group.bits() as CK_ULONG),
    }
    set_group(attrs, &group);
    Ok(())
}

/// Parses a stored private key (`CKA_PRIME`, `CKA_BASE`, `CKA_VALUE`).
pub fn load_private(p: &[u8], g: &[u8], x: &[u8]) -> Result<KeyMaterial> {
    let bad = |_| err(CKR_KEY_HANDLE_INVALID);
    let group = Group::from_values(p, g).map_err(bad)?;
    let x = private_value(&group, x).map_err(bad)?;
    Ok(KeyMaterial::DhPrivate(Box::new(PrivateKey::new(group, x))))
}

/// Parses a stored public key.
pub fn load_public(p: &[u8], g: &[u8], y: &[u8]) -> Result<KeyMaterial> {
    let bad = |_| err(CKR_KEY_HANDLE_INVALID);
    let group = Group::from_values(p, g).map_err(bad)?;
    public_value(&group, y).map_err(bad)?;
    Ok(KeyMaterial::DhPublic(Box::new(PublicKey::new(group))))
}

/// The length of x for a new key: `CKA_VALUE_BITS` of the private template,
/// from twice the group's strength to the length of q (SP 800-56A Rev. 3
/// §5.6.1.1.4: 2s ≤ N ≤ len(q)); twice the strength by default.
fn exponent_bits(group: &Group, private_template: &Attributes) -> Result<usize> {
    let least = 2 * group.strength();
    match private_template.ulong(CKA_VALUE_BITS) {
        None => Ok(least),
        Some(n) => {
            let n = usize::try_from(n).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?;
            if (least..=group.q_bits()).contains(&n) {
                Ok(n)
            } else {
                Err(err(CKR_ATTRIBUTE_VALUE_INVALID))
            }
        }
    }
}

/// A random x of exactly `n` bits (top bit set) below q: SP 800-56A Rev. 3
/// §5.6.1.1.4 draws from [1, 2^N − 1]; setting the top bit costs one bit of
/// the N and makes `CKA_VALUE_BITS` the length of x. Candidates at or above
/// q (possible only when N is the length of q) are drawn again.
fn random_exponent(group: &Group, n: usize) -> Result<Zeroizing<BoxedUint>> {
    let len = n.div_ceil(8);
    let mut bytes = Zeroizing::new(vec![0u8; len]);
    for _ in 0..128 {
        os_fill(&mut bytes)?;
        let excess = len * 8 - n;
        bytes[0] &= 0xff >> excess;
        bytes[0] |= 0x80 >> excess;
        if let Ok(x) = private_value(group, &bytes) {
            return Ok(x);
        }
    }
    Err(err(CKR_FUNCTION_FAILED))
}

/// `CKM_DH_PKCS_KEY_PAIR_GEN` (§2.5.5): p and g from the public template,
/// the length of x from the private template's `CKA_VALUE_BITS`.
pub fn generate(
    public_template: &Attributes,
    private_template: &Attributes,
) -> Result<GeneratedPair> {
    let group = group_of(public_template)?;
    let n = exponent_bits(&group, private_template)?;
    let x = random_exponent(&group, n)?;
    let y = group.public_value(&x);
    let mut public = Attributes::new();
    set_group(&mut public, &group);
    public.set_bytes(CKA_VALUE, &minimal(&y));
    let mut private = Attributes::new();
    set_group(&mut private, &group);
    private.set_bytes(CKA_VALUE, &minimal_secret(&x));
    private.set_ulong(CKA_VALUE_BITS, n as CK_ULONG);
    Ok(GeneratedPair {
        public,
        private,
        key_type: CKK_DH,
    })
}

/// `CKM_DH_PKCS_PARAMETER_GEN` (§2.5.6): a new safe prime p of
/// `CKA_PRIME_BITS` ([`MIN_BITS`] to [`MAX_CHECKED_BITS`]) and a generator
/// of its order-q subgroup: 2 when p ≡ 7 mod 8 (2 is then a square), else
/// 4. A 2048-bit prime takes tens of seconds.
pub fn generate_parameters(template: &Attributes) -> Result<Attributes> {
    let bits = template
        .ulong(CKA_PRIME_BITS)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    let bits = usize::try_from(bits).map_err(|_| err(CKR_KEY_SIZE_RANGE))?;
    if !(MIN_BITS..=MAX_CHECKED_BITS).contains(&bits) {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    let mut rng = rand_core::UnwrapErr(crate::mechanisms::random::OsRng);
    let p: BoxedUint =
        crypto_primes::random_prime(&mut rng, crypto_primes::Flavor::Safe, bits as u32);
    let p = minimal(&p);
    let g = if p[p.len() - 1] & 7 == 7 { 2u8 } else { 4 };
    let group = Group::from_values(&p, &[g]).map_err(|_| err(CKR_FUNCTION_FAILED))?;
    let mut out = Attributes::new();
    set_group(&mut out, &group);
    out.set_ulong(CKA_PRIME_BITS, group.bits() as CK_ULONG);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::dh::group_primes::FFDHE2048;

    fn ffdhe2048() -> Attributes {
        let mut a = Attributes::new();
        let p = (0..FFDHE2048.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&FFDHE2048[i..i + 2], 16).unwrap())
            .collect::<Vec<_>>();
        a.set_bytes(CKA_PRIME, &p);
        a.set_bytes(CKA_BASE, &[2]);
        a
    }

    /// Generated keys have x of the asked length below q and y = g^x in
    /// the subgroup; out-of-range lengths are refused.
    #[test]
    fn generated_keys_have_the_asked_exponent_length() {
        let public = ffdhe2048();
        for (asked, want) in [
            (None, 224),
            (Some(224), 224),
            (Some(2047), 2047),
            (Some(1000), 1000),
        ] {
            let mut private = Attributes::new();
            if let Some(n) = asked {
                private.set_ulong(CKA_VALUE_BITS, n);
            }
            let pair = generate(&public, &private).unwrap();
            assert_eq!(pair.private.ulong(CKA_VALUE_BITS), Some(want));
            let x = pair.private.bytes(CKA_VALUE).unwrap();
            assert_eq!(super::super::groups::bit_len(x), want as usize);
            let mut imported = pair.private.clone();
            complete_import(CKO_PRIVATE_KEY, &mut imported).unwrap();
            let mut imported = pair.public.clone();
            complete_import(CKO_PUBLIC_KEY, &mut imported).unwrap();
        }
        for bad in [223, 2048, 1 << 20] {
            let mut private = Attributes::new();
            private.set_ulong(CKA_VALUE_BITS, bad);
            assert_eq!(
                generate(&public, &private).err().map(|e| e.rv()),
                Some(CKR_ATTRIBUTE_VALUE_INVALID)
            );
        }
    }

    /// Imports check x (1 ≤ x < q) and y (1 < y < p − 1, order q).
    #[test]
    fn imports_check_the_values() {
        let mut attrs = ffdhe2048();
        let p = attrs.bytes(CKA_PRIME).unwrap().to_vec();
        for (class, value) in [
            (CKO_PRIVATE_KEY, vec![0u8]),
            (CKO_PRIVATE_KEY, p.clone()),
            (CKO_PUBLIC_KEY, vec![1u8]),
            (CKO_PUBLIC_KEY, p.clone()),
            (CKO_PUBLIC_KEY, {
                let mut m = p.clone();
                *m.last_mut().unwrap() -= 1;
                m
            }),
        ] {
            attrs.set_bytes(CKA_VALUE, &value);
            assert_eq!(
                complete_import(class, &mut attrs.clone()).unwrap_err().rv(),
                CKR_ATTRIBUTE_VALUE_INVALID,
                "{class} {:x?}",
                &value[value.len().saturating_sub(2)..]
            );
        }
        attrs.set_bytes(CKA_VALUE, &[0, 0, 4]);
        complete_import(CKO_PUBLIC_KEY, &mut attrs).unwrap();
        assert_eq!(attrs.bytes(CKA_VALUE), Some(&[4u8][..]));
    }

    /// Parameter sizes outside 2048–4096 bits are refused before any work.
    #[test]
    fn parameter_generation_sizes_are_bounded() {
        for bits in [0, 1024, 2047, 4097, 8192] {
            let mut t = Attributes::new();
            t.set_ulong(CKA_PRIME_BITS, bits);
            assert_eq!(
                generate_parameters(&t).unwrap_err().rv(),
                CKR_KEY_SIZE_RANGE
            );
        }
        assert_eq!(
            generate_parameters(&Attributes::new()).unwrap_err().rv(),
            CKR_TEMPLATE_INCOMPLETE
        );
    }
}
