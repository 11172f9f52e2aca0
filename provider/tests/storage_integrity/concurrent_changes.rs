//! Changes from several processes and threads (base spec §5.7,
//! `C_SetAttributeValue`, `C_DestroyObject`): a failed set changes nothing,
//! a stale handle never revives a destroyed object, and concurrent writers
//! keep each other's changes.

use super::*;

#[test]
fn a_failed_set_changes_nothing() {
    let mut f = Fixture::new();
    f.token("failed");
    finish_worker(spawn(&f, "failed failed-set"));
    f.restart();
    let slot = f.p().get_slots_with_token().unwrap()[0];
    let s = f.user(slot);
    assert!(
        find(&s, b"failed").is_empty(),
        "the failed label was stored"
    );
    let h = find(&s, b"before");
    assert_eq!(h.len(), 1);
    assert_eq!(get(&s, h[0], AttributeType::Id), b"later");
}

#[test]
fn a_stale_handle_never_revives_a_destroyed_object() {
    let mut f = Fixture::new();
    let slot = f.token("stale");
    let s = f.user(slot);
    let (public, private) = key_pair(&s, b"doomed");
    let data = secret_key(&s, b"doomed-data");
    finish_worker(spawn(&f, "stale destroy doomed"));
    finish_worker(spawn(&f, "stale destroy doomed-data"));
    // This process still holds handles from before the destruction.
    assert_rv!(
        s.update_attributes(private, &[Attribute::Label(b"back".to_vec())]),
        ObjectHandleInvalid
    );
    assert_rv!(
        s.update_attributes(public, &[Attribute::Id(b"back".to_vec())]),
        ObjectHandleInvalid
    );
    assert_rv!(
        s.copy_object(data, &[Attribute::Label(b"back".to_vec())]),
        ObjectHandleInvalid
    );
    assert_rv!(s.destroy_object(data), ObjectHandleInvalid);
    drop(s);
    f.restart();
    let s = f.user(slot);
    assert!(find(&s, b"back").is_empty(), "a destroyed object came back");
    assert!(find(&s, b"doomed").is_empty());
    assert!(
        s.find_objects(&[Attribute::Id(b"back".to_vec())])
            .unwrap()
            .is_empty()
    );
}

#[test]
fn two_processes_keep_each_others_changes() {
    let mut f = Fixture::new();
    let slot = f.token("lost");
    let s = f.user(slot);
    let h = secret_key(&s, b"first");
    // Another process relabels the object; this one, on its old view, sets
    // only CKA_ID and must not put the old label back.
    finish_worker(spawn(&f, "lost relabel first second"));
    s.update_attributes(h, &[Attribute::Id(b"mine".to_vec())])
        .unwrap();
    assert_eq!(get(&s, h, AttributeType::Label), b"second");
    drop(s);
    f.restart();
    let s = f.user(slot);
    let found = find(&s, b"second");
    assert_eq!(found.len(), 1, "the other process's label was lost");
    assert_eq!(get(&s, found[0], AttributeType::Id), b"mine");
    // A copy through the old view copies the object as it is now.
    let copy = s.copy_object(found[0], &[Attribute::Token(false)]).unwrap();
    assert_eq!(get(&s, copy, AttributeType::Label), b"second");
}

#[test]
fn threads_setting_one_object_all_succeed_and_keep_each_others_changes() {
    let f = Fixture::new();
    let slot = f.token("set-race");
    let s = f.user(slot);
    let h = secret_key(&s, b"raced");
    const ROUNDS: usize = 200;
    const THREADS: u8 = 6;
    let f = &f;
    std::thread::scope(|sc| {
        for t in 0..THREADS {
            sc.spawn(move || {
                let s = f.p().open_rw_session(slot).unwrap();
                for i in 0..ROUNDS {
                    let v = format!("{t}-{i}").into_bytes();
                    let attr = match t {
                        0 => Attribute::Label(v),
                        // A usage flag the key-management policy lets
                        // widen on a protected secret key (CKA_DERIVE,
                        // CKA_SIGN or CKA_ENCRYPT would not).
                        1 => Attribute::Verify(i.is_multiple_of(2)),
                        _ => Attribute::Id(v),
                    };
                    // Every set succeeds: no retry budget runs out because
                    // the other threads keep writing the same object.
                    s.update_attributes(h, &[attr]).unwrap();
                    s.find_objects(&[]).unwrap();
                }
            });
        }
    });
    let last = |t: u8| format!("{t}-{}", ROUNDS - 1).into_bytes();
    assert_eq!(get(&s, h, AttributeType::Label), last(0));
    assert_eq!(
        s.get_attributes(h, &[AttributeType::Verify]).unwrap(),
        vec![Attribute::Verify((ROUNDS - 1).is_multiple_of(2))]
    );
    let id = get(&s, h, AttributeType::Id);
    assert!((2..THREADS).any(|t| id == last(t)), "{id:?}");
}
