//! Lists a module fills in two calls (base spec §5.2, "Conventions for
//! functions returning output in a variable-length buffer"): a size query
//! with a NULL list, then the call with a list of that size. The size is
//! bounded (`bounds.rs`) before anything is allocated, and the count of the
//! second call must fit the list.

use std::ptr;

use cryptoki_sys::*;

use crate::token::bounds::bounded;
use crate::token::ckr::call_failed;

/// How often the size query is repeated when the list grew between the two
/// calls (`CKR_BUFFER_TOO_SMALL`) before giving up.
const TRIES: usize = 4;

/// The list `get` fills: `get(NULL, &n)` for the count, then
/// `get(list, &n)`. `call` and `what` name it in errors (e.g.
/// "C_GetSlotList reports 1099511627776 slots, more than hsm-bench accepts
/// (4096)").
pub fn fetch<T: Copy + Default>(
    call: &str,
    what: &str,
    max: usize,
    mut get: impl FnMut(*mut T, &mut CK_ULONG) -> CK_RV,
) -> Result<Vec<T>, String> {
    for _ in 0..TRIES {
        let mut n: CK_ULONG = 0;
        let rv = get(ptr::null_mut(), &mut n);
        if rv != CKR_OK {
            return Err(call_failed(call, rv));
        }
        let room = bounded(call, what, n, max)?;
        if room == 0 {
            return Ok(Vec::new());
        }
        let mut v = vec![T::default(); room];
        let mut got = room as CK_ULONG;
        match get(v.as_mut_ptr(), &mut got) {
            CKR_OK => {
                return match usize::try_from(got) {
                    Ok(got) if got <= room => {
                        v.truncate(got);
                        Ok(v)
                    }
                    _ => Err(format!(
                        "{call} returned CKR_OK claiming {got} {what} in a list of {room}"
                    )),
                };
            }
            // The list grew between the two calls: ask again.
            CKR_BUFFER_TOO_SMALL => continue,
            rv => return Err(call_failed(call, rv)),
        }
    }
    Err(format!(
        "{call} answered CKR_BUFFER_TOO_SMALL {TRIES} times for the size it had reported"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake list call: reports `claim` on the size query, writes `items`
    /// and reports `written` on the second call.
    fn fake(
        claim: CK_ULONG,
        items: &'static [u64],
        written: CK_ULONG,
    ) -> impl FnMut(*mut u64, &mut CK_ULONG) -> CK_RV {
        move |list, n| {
            if list.is_null() {
                *n = claim;
            } else {
                let room = *n as usize;
                for (i, x) in items.iter().take(room).enumerate() {
                    // SAFETY: `list` has `room` elements (fetch's contract).
                    unsafe { *list.add(i) = *x };
                }
                *n = written;
            }
            CKR_OK
        }
    }

    #[test]
    fn lists_are_bounded_before_allocating_and_checked_after() {
        assert_eq!(
            fetch("C_X", "slots", 8, fake(2, &[5, 6], 2)),
            Ok(vec![5, 6])
        );
        assert_eq!(
            fetch("C_X", "slots", 8, fake(3, &[5, 6], 2)),
            Ok(vec![5, 6])
        );
        assert_eq!(fetch("C_X", "slots", 8, fake(0, &[], 0)), Ok(vec![]));
        let e = fetch("C_X", "slots", 8, fake(1 << 40, &[], 0)).unwrap_err();
        assert!(
            e.contains("1099511627776 slots") && e.contains("(8)"),
            "{e}"
        );
        let e = fetch("C_X", "slots", 8, fake(2, &[5, 6], 4096)).unwrap_err();
        assert_eq!(e, "C_X returned CKR_OK claiming 4096 slots in a list of 2");
        let e = fetch::<u64>("C_X", "slots", 8, |_, _| CKR_DEVICE_ERROR).unwrap_err();
        assert_eq!(e, "C_X failed: CKR_DEVICE_ERROR");
        let e = fetch::<u64>("C_X", "slots", 8, |l, n| {
            if l.is_null() {
                *n = 1;
                CKR_OK
            } else {
                CKR_BUFFER_TOO_SMALL
            }
        })
        .unwrap_err();
        assert!(e.contains("CKR_BUFFER_TOO_SMALL 4 times"), "{e}");
    }
}
