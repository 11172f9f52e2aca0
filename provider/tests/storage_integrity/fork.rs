//! The module across `fork()` (base spec §5.4, `C_Initialize` in a forked
//! child): a child's writes are kept and it sees others', and a child
//! forked while other threads use the module never hangs.

use super::*;

/// Waits for `pid` for at most `secs` seconds; kills it and returns `None`
/// if it is still running then (a hang), else `Some(exited with 0)`.
fn wait_child(pid: libc::pid_t, secs: u64) -> Option<bool> {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child, writing its status to a local.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Some(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        }
        if std::time::Instant::now() > end {
            // SAFETY: kills and reaps our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// In a forked child: the module initialised again, a user session on the
/// token labelled `label`.
fn child_session(label: &str) -> Option<(cryptoki::context::Pkcs11, Session)> {
    let p = cryptoki::context::Pkcs11::new(module_path()).ok()?;
    p.initialize(cryptoki::context::CInitializeArgs::new(
        cryptoki::context::CInitializeFlags::OS_LOCKING_OK,
    ))
    .ok()?;
    let slot = p.get_slots_with_token().ok()?.into_iter().find(|s| {
        p.get_token_info(*s)
            .map(|t| t.label() == label)
            .unwrap_or(false)
    })?;
    let s = p.open_rw_session(slot).ok()?;
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .ok()?;
    Some((p, s))
}

#[test]
fn a_forked_childs_writes_are_kept_and_it_sees_others() {
    const N: usize = 8;
    let mut f = Fixture::new();
    let slot = f.token("forked");
    let s = f.user(slot);
    secret_key(&s, b"parent-early");
    let (mut to_parent, mut to_child) = ([0i32; 2], [0i32; 2]);
    // SAFETY: two pipes into local arrays; fork in a test process whose
    // child uses the module, the pipes and _exit only.
    let pid = unsafe {
        assert_eq!(libc::pipe(to_parent.as_mut_ptr()), 0);
        assert_eq!(libc::pipe(to_child.as_mut_ptr()), 0);
        libc::fork()
    };
    assert!(pid >= 0);
    if pid == 0 {
        let byte = |fd: i32, write: bool| {
            let mut b = [1u8];
            // SAFETY: one byte through a pipe end this process holds.
            let n = unsafe {
                if write {
                    libc::write(fd, b.as_ptr().cast(), 1)
                } else {
                    libc::read(fd, b.as_mut_ptr().cast(), 1)
                }
            };
            n == 1
        };
        let ok = (|| {
            let (_p, s) = child_session("forked")?;
            for _ in 0..N {
                secret_key(&s, b"child-first");
            }
            (byte(to_parent[1], true) && byte(to_child[0], false)).then_some(())?;
            // The parent finalised and initialised again meanwhile, and
            // wrote an object: the child sees it, and keeps writing.
            (count(&s, b"parent-late") == 1).then_some(())?;
            for _ in 0..N {
                secret_key(&s, b"child-second");
            }
            Some(())
        })()
        .is_some();
        // SAFETY: leaves the child without running the parent's destructors.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut b = [0u8];
    // SAFETY: one byte through our pipe ends.
    assert_eq!(
        unsafe { libc::read(to_parent[0], b.as_mut_ptr().cast(), 1) },
        1,
        "the child did not get through its first writes"
    );
    drop(s);
    f.restart();
    let s = f.user(slot);
    assert_eq!(count(&s, b"child-first"), N, "the child's writes vanished");
    secret_key(&s, b"parent-late");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::write(to_child[1], b.as_ptr().cast(), 1) }, 1);
    assert_eq!(wait_child(pid, 60), Some(true), "child failed or hung");
    drop(s);
    f.restart();
    let s = f.user(slot);
    assert_eq!(count(&s, b"child-second"), N);
    assert_eq!(count(&s, b"parent-early"), 1);
    for fd in to_parent.into_iter().chain(to_child) {
        // SAFETY: closes our own pipe ends.
        unsafe { libc::close(fd) };
    }
}

#[test]
fn a_child_forked_while_other_threads_use_the_module_never_hangs() {
    let f = Fixture::new();
    let slot = f.token("busy-fork");
    let logged_in = f.user(slot);
    secret_key(&logged_in, b"busy");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let l = raw();
    let hung = std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                let s = f.p().open_rw_session(slot).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for h in find(&s, b"busy") {
                        let _ = s.get_attributes(h, &[AttributeType::Label]);
                    }
                    s.update_attributes(find(&s, b"busy")[0], &[Attribute::Id(vec![1])])
                        .unwrap();
                }
            });
        }
        let mut hung = 0;
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            // SAFETY: fork in a test process; the child calls the module
            // through its function list, then _exit.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0);
            if pid == 0 {
                // SAFETY: C calls with valid arguments, then _exit.
                unsafe {
                    let mut count: CK_ULONG = 0;
                    let ok = l.C_Initialize.unwrap()(std::ptr::null_mut()) == CKR_OK
                        && l.C_GetSlotList.unwrap()(0, std::ptr::null_mut(), &mut count) == CKR_OK
                        && l.C_Finalize.unwrap()(std::ptr::null_mut()) == CKR_OK;
                    libc::_exit(if ok { 0 } else { 1 });
                }
            }
            match wait_child(pid, 20) {
                Some(true) => {}
                Some(false) => panic!("a child got an error"),
                None => hung += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        hung
    });
    assert_eq!(hung, 0, "children hung in C_Initialize");
}
