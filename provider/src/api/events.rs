//! Slot events for `C_WaitForSlotEvent` (base spec §5.5): a token was
//! initialised in a slot (`C_InitToken` here), or a token created by
//! another process appeared (found by a rescan). Each slot is reported
//! once per change, in the order the changes happened; `C_Finalize` wakes
//! every blocked caller with `CKR_CRYPTOKI_NOT_INITIALIZED`.

use crate::error::{Result, err};
use cryptoki_sys::*;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::time::Duration;

/// How often a blocked `C_WaitForSlotEvent` looks for tokens that other
/// processes created.
pub const RESCAN_EVERY: Duration = Duration::from_millis(500);

#[derive(Default)]
struct State {
    /// Slots with an unreported event, oldest first, each at most once.
    pending: VecDeque<CK_SLOT_ID>,
    /// Set by `C_Finalize`.
    closed: bool,
}

/// The module's slot events.
#[derive(Default)]
pub struct SlotEvents {
    state: Mutex<State>,
    changed: Condvar,
}

impl SlotEvents {
    /// Notes an event in `slot` and wakes one waiter per event.
    pub fn record(&self, slot: CK_SLOT_ID) {
        let mut state = self.state.lock();
        if !state.pending.contains(&slot) {
            state.pending.push_back(slot);
        }
        drop(state);
        self.changed.notify_all();
    }

    /// `C_Finalize`: every waiter returns `CKR_CRYPTOKI_NOT_INITIALIZED`.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.changed.notify_all();
    }

    /// True once [`close`](Self::close) ran: the module is finalised.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// The oldest unreported event; with `CKF_DONT_BLOCK`, `CKR_NO_EVENT`
    /// when there is none, else waits for one, calling `rescan` (which may
    /// [`record`](Self::record)) before the first look and every
    /// [`RESCAN_EVERY`].
    ///
    /// Once closed, it returns `CKR_CRYPTOKI_NOT_INITIALIZED` whatever is
    /// pending (§5.4 C_Finalize: blocked callers return with it), and calls
    /// `rescan` no more: a finalised module opens no token again.
    pub fn wait(&self, flags: CK_FLAGS, rescan: impl Fn()) -> Result<CK_SLOT_ID> {
        let mut state = self.state.lock();
        let mut look_around = true;
        loop {
            if state.closed {
                return Err(err(CKR_CRYPTOKI_NOT_INITIALIZED));
            }
            if look_around {
                look_around = false;
                drop(state);
                rescan();
                state = self.state.lock();
                continue;
            }
            if let Some(slot) = state.pending.pop_front() {
                return Ok(slot);
            }
            if flags & CKF_DONT_BLOCK != 0 {
                return Err(err(CKR_NO_EVENT));
            }
            let timed_out = self.changed.wait_for(&mut state, RESCAN_EVERY).timed_out();
            look_around = timed_out && state.pending.is_empty();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn events_are_reported_once_in_order() {
        let e = SlotEvents::default();
        assert_eq!(
            e.wait(CKF_DONT_BLOCK, || ()).unwrap_err().rv(),
            CKR_NO_EVENT
        );
        e.record(3);
        e.record(1);
        e.record(3);
        assert_eq!(e.wait(CKF_DONT_BLOCK, || ()).unwrap(), 3);
        assert_eq!(e.wait(CKF_DONT_BLOCK, || ()).unwrap(), 1);
        assert_eq!(
            e.wait(CKF_DONT_BLOCK, || ()).unwrap_err().rv(),
            CKR_NO_EVENT
        );
        // A rescan may find an event itself.
        assert_eq!(e.wait(CKF_DONT_BLOCK, || e.record(7)).unwrap(), 7);
    }

    #[test]
    fn a_closed_queue_reports_nothing_and_never_rescans() {
        let e = SlotEvents::default();
        e.record(2);
        e.close();
        e.record(3);
        let rescanned = std::sync::atomic::AtomicUsize::new(0);
        let rescan = || {
            rescanned.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            e.record(4);
        };
        for flags in [0, CKF_DONT_BLOCK] {
            assert_eq!(
                e.wait(flags, rescan).unwrap_err().rv(),
                CKR_CRYPTOKI_NOT_INITIALIZED
            );
        }
        assert_eq!(
            rescanned.into_inner(),
            0,
            "a finalised module scanned again"
        );
    }

    #[test]
    fn a_blocked_wait_is_woken_by_an_event_and_by_close() {
        let e = Arc::new(SlotEvents::default());
        let waiter = {
            let e = e.clone();
            std::thread::spawn(move || e.wait(0, || ()))
        };
        std::thread::sleep(Duration::from_millis(50));
        e.record(5);
        assert_eq!(waiter.join().unwrap().unwrap(), 5);
        let waiter = {
            let e = e.clone();
            std::thread::spawn(move || e.wait(0, || ()))
        };
        std::thread::sleep(Duration::from_millis(50));
        e.close();
        assert_eq!(
            waiter.join().unwrap().unwrap_err().rv(),
            CKR_CRYPTOKI_NOT_INITIALIZED
        );
    }
}
