//! The largest counts and lengths hsm-bench accepts from a module.
//!
//! A module's counts and lengths are numbers it chose; hsm-bench allocates
//! for them and slices with them. Each is checked against a bound here before
//! it reaches an allocator or a slice, and one over it is an error naming the
//! call (`docs/benchmarking.md`, "When a module misbehaves"). The bounds are
//! far above what real tokens report and low enough that the allocation
//! cannot fail. Text fields (`CK_INFO`, `CK_SLOT_INFO`, `CK_TOKEN_INFO`) are
//! fixed-size arrays: their size is the bound, and they are decoded lossily.
//! Output lengths are bounded by the caller's buffer (the module must not
//! claim more than it holds, see `entries.rs`).

use cryptoki_sys::CK_ULONG;

/// Slots `C_GetSlotList` may report: 4096. SoftHSM2 shows one slot per token
/// plus a free one; network HSMs a few dozen partitions; p11-kit's proxy the
/// sum over its modules.
pub const MAX_SLOTS: usize = 4096;

/// Mechanisms `C_GetMechanismList` may report: 65536. The PKCS#11 3.1 registry
/// defines about 600 `CKM_*` values; vendors add tens.
pub const MAX_MECHANISMS: usize = 65536;

/// Bytes an attribute value may have (`C_GetAttributeValue`): 1 MiB. The
/// largest values hsm-bench reads are RSA moduli (2 KiB at 16384 bits), EC
/// points and parameters, key values and labels.
pub const MAX_ATTRIBUTE_LEN: usize = 1 << 20;

/// Objects one search (`C_FindObjectsInit` … `C_FindObjectsFinal`) may return
/// before hsm-bench gives up: 1048576 handles (8 MiB). The scaling ops make
/// 10000 objects; a module whose `C_FindObjects` never reports the end is
/// stopped here.
pub const MAX_FOUND: usize = 1 << 20;

/// The bound of a call that reports a length, as text (for error messages).
pub fn bound_of(call: &str) -> String {
    match call {
        "C_GetSlotList" => format!("{MAX_SLOTS} slots"),
        "C_GetMechanismList" => format!("{MAX_MECHANISMS} mechanisms"),
        "C_GetAttributeValue" => format!("{MAX_ATTRIBUTE_LEN} bytes"),
        "C_FindObjects" => format!("{MAX_FOUND} objects"),
        _ => "the caller's buffer".to_string(),
    }
}

/// `n` as a `usize` when it is at most `max`; otherwise an error naming the
/// call, what it reported and the bound.
pub fn bounded(call: &str, what: &str, n: CK_ULONG, max: usize) -> Result<usize, String> {
    match usize::try_from(n) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!(
            "{call} reports {n} {what}, more than hsm-bench accepts ({max})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_over_the_bound_are_errors_naming_the_call() {
        assert_eq!(bounded("C_GetSlotList", "slots", 3, MAX_SLOTS), Ok(3));
        assert_eq!(bounded("C_GetSlotList", "slots", 4096, MAX_SLOTS), Ok(4096));
        let e = bounded("C_GetSlotList", "slots", 1 << 40, MAX_SLOTS).unwrap_err();
        assert_eq!(
            e,
            "C_GetSlotList reports 1099511627776 slots, more than hsm-bench accepts (4096)"
        );
        assert_eq!(bound_of("C_GetAttributeValue"), "1048576 bytes");
    }
}
