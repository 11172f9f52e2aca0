//! `C_WaitForSlotEvent` (base spec §5.5) through the raw function list:
//! events for tokens initialised here and by another process, each
//! reported once, blocking waits woken by an event and by `C_Finalize`.

mod common;

use common::*;
use cryptoki_sys::*;
use std::ptr::null_mut;

/// `C_WaitForSlotEvent(flags)`: the slot, or the error code.
fn wait(flags: CK_FLAGS) -> Result<CK_SLOT_ID, CK_RV> {
    let mut slot: CK_SLOT_ID = CK_ULONG::MAX;
    // SAFETY: a valid out-pointer and NULL reserved.
    let rv = unsafe { raw().C_WaitForSlotEvent.unwrap()(flags, &mut slot, null_mut()) };
    if rv == CKR_OK { Ok(slot) } else { Err(rv) }
}

/// Reports every pending event, oldest first.
fn drain() -> Vec<CK_SLOT_ID> {
    std::iter::from_fn(|| wait(CKF_DONT_BLOCK).ok()).collect()
}

#[test]
fn initialising_a_token_is_an_event_reported_once() {
    let f = Fixture::new();
    drain();
    assert_eq!(wait(CKF_DONT_BLOCK), Err(CKR_NO_EVENT));
    let first = f.token("events-a");
    let second = f.token("events-b");
    assert_eq!(drain(), vec![first.id(), second.id()]);
    assert_eq!(wait(CKF_DONT_BLOCK), Err(CKR_NO_EVENT));
    // Re-initialising a token is an event too.
    let so = pin(SO_PIN);
    f.p().init_token(first, &so, "events-a2").unwrap();
    assert_eq!(drain(), vec![first.id()]);
    // Arguments.
    let mut slot: CK_SLOT_ID = 0;
    // SAFETY: NULL out-pointer and non-NULL reserved must be refused.
    unsafe {
        assert_eq!(
            raw().C_WaitForSlotEvent.unwrap()(CKF_DONT_BLOCK, null_mut(), null_mut()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            raw().C_WaitForSlotEvent.unwrap()(
                CKF_DONT_BLOCK,
                &mut slot,
                (&mut slot as *mut CK_SLOT_ID).cast()
            ),
            CKR_ARGUMENTS_BAD
        );
    }
}

#[test]
fn a_blocked_wait_wakes_for_an_event_and_for_finalize() {
    let mut f = Fixture::new();
    drain();
    let waiter = std::thread::spawn(|| wait(0));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let slot = f.token("events-block");
    assert_eq!(waiter.join().unwrap(), Ok(slot.id()));
    let waiter = std::thread::spawn(|| wait(0));
    std::thread::sleep(std::time::Duration::from_millis(200));
    f.stop();
    assert_eq!(waiter.join().unwrap(), Err(CKR_CRYPTOKI_NOT_INITIALIZED));
    assert_eq!(wait(CKF_DONT_BLOCK), Err(CKR_CRYPTOKI_NOT_INITIALIZED));
    f.start();
}

/// A token another process initialises is an event here: for a blocked
/// wait (found by its periodic rescan) and for a non-blocking one.
#[test]
fn a_token_made_by_another_process_is_an_event() {
    let f = Fixture::new();
    drain();
    let waiter = std::thread::spawn(|| wait(0));
    finish_worker(f.spawn_worker("EVENTS_WORKER", "events-elsewhere"));
    let slot = waiter.join().unwrap().expect("event");
    let info = f
        .p()
        .get_token_info(cryptoki::slot::Slot::try_from(slot).unwrap());
    assert_eq!(info.unwrap().label(), "events-elsewhere");
    finish_worker(f.spawn_worker("EVENTS_WORKER", "events-elsewhere2"));
    let slot = wait(CKF_DONT_BLOCK).expect("event");
    let info = f
        .p()
        .get_token_info(cryptoki::slot::Slot::try_from(slot).unwrap());
    assert_eq!(info.unwrap().label(), "events-elsewhere2");
    assert_eq!(wait(CKF_DONT_BLOCK), Err(CKR_NO_EVENT));
}

/// Worker process: initialises a token labelled `$EVENTS_WORKER` in the
/// free slot.
#[test]
#[ignore = "runs only as the second process of the test above"]
fn worker() {
    let Ok(label) = std::env::var("EVENTS_WORKER") else {
        return;
    };
    let p = cryptoki::context::Pkcs11::new(module_path()).unwrap();
    p.initialize(cryptoki::context::CInitializeArgs::new(
        cryptoki::context::CInitializeFlags::OS_LOCKING_OK,
    ))
    .unwrap();
    let free = p
        .get_all_slots()
        .unwrap()
        .into_iter()
        .find(|s| !p.get_token_info(*s).unwrap().token_initialized())
        .unwrap();
    p.init_token(free, &pin(SO_PIN), &label).unwrap();
    p.finalize().unwrap();
}

/// `rounds` times: a thread blocked in `C_WaitForSlotEvent` (flags 0),
/// then `C_Finalize` from this thread, after anything from no time at all
/// (the waiter may not have entered yet) to a few milliseconds. The waiter
/// must get `CKR_CRYPTOKI_NOT_INITIALIZED` every time (§5.4 C_Finalize,
/// §5.5 C_WaitForSlotEvent). `before(f, round)` runs first, with the
/// module initialised; its events are drained before the waiter starts.
/// With `scanning`, another thread lists the slots meanwhile (a rescan of
/// the token directory, as the waiter's own).
fn finalize_under_waiters(
    f: &mut Fixture,
    rounds: usize,
    scanning: bool,
    before: impl Fn(&Fixture, usize),
) {
    let mut wrong = Vec::new();
    for i in 0..rounds {
        before(f, i);
        drain();
        let waiter = std::thread::spawn(|| wait(0));
        let scanner = scanning.then(|| {
            std::thread::spawn(|| {
                for _ in 0..3 {
                    let mut n: CK_ULONG = 0;
                    // SAFETY: a count query: NULL list, valid out-pointer.
                    unsafe { raw().C_GetSlotList.unwrap()(0, null_mut(), &mut n) };
                }
            })
        });
        std::thread::sleep(std::time::Duration::from_micros((i % 13 * 250) as u64));
        f.stop();
        let got = waiter.join().unwrap();
        if got != Err(CKR_CRYPTOKI_NOT_INITIALIZED) {
            wrong.push((i, got));
        }
        if let Some(s) = scanner {
            s.join().unwrap();
        }
        f.start();
    }
    assert!(
        wrong.is_empty(),
        "waiters that C_Finalize woke got {wrong:?}"
    );
}

#[test]
fn finalize_always_ends_a_blocked_wait_with_not_initialized() {
    let mut f = Fixture::new();
    finalize_under_waiters(&mut f, 200, false, |_, _| ());
}

/// As above with tokens in the directory (opened by every `C_Initialize`,
/// closed by every `C_Finalize`), one more made here every 20 rounds, and
/// slot lists (rescans) meanwhile.
#[test]
fn finalize_always_ends_a_blocked_wait_among_tokens() {
    let mut f = Fixture::new();
    finalize_under_waiters(&mut f, 200, true, |f, i| {
        if i % 20 == 0 {
            f.token(&format!("around-{i}"));
        }
    });
}
