//! Soak phase "fork": children forked while the parent's threads use the module (see main.rs).

use super::*;

// ----------------------------------------------------------------- fork --

#[test]
fn soak_forks_neither_hang_nor_lose_writes() {
    let forks = env_or("SOAK_FORKS", 8);
    let mut f = soak_fixture("forks");
    let slot = f.token("forks");
    let logged_in = f.user(slot);
    key_pair(&logged_in, "busy").unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let l = raw();
    let (mut hung, mut failed) = (0, 0);
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                let s = f.p().open_rw_session(slot).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for h in by_label(&s, ObjectClass::PRIVATE_KEY, "busy") {
                        let _ = s.sign(&eddsa(), h, b"busy");
                        let _ = s.update_attributes(h, &[Attribute::Id(vec![1])]);
                    }
                }
            });
        }
        for n in 0..forks {
            std::thread::sleep(Duration::from_millis(3));
            // SAFETY: fork in a test process; the child calls the module
            // through cryptoki and its function list, then _exit.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0);
            if pid == 0 {
                let ok = (|| {
                    let p = Pkcs11::new(module_path()).ok()?;
                    p.initialize(cryptoki::context::CInitializeArgs::new(
                        cryptoki::context::CInitializeFlags::OS_LOCKING_OK,
                    ))
                    .ok()?;
                    let slot = p
                        .get_slots_with_token()
                        .ok()?
                        .into_iter()
                        .find(|s| p.get_token_info(*s).is_ok_and(|t| t.label() == "forks"))?;
                    let s = p.open_rw_session(slot).ok()?;
                    s.login(UserType::User, Some(&pin(USER_PIN))).ok()?;
                    key_pair(&s, &format!("child-{n}")).ok()
                })()
                .is_some();
                let _ = l;
                // SAFETY: leaves the child without the parent's destructors.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let mut status = 0;
                // SAFETY: waits for our own child.
                let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                if r == pid {
                    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                        failed += 1;
                    }
                    break;
                }
                if Instant::now() > deadline {
                    // SAFETY: kills and reaps our own child.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, &mut status, 0);
                    }
                    hung += 1;
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    drop(logged_in);
    f.restart();
    let s = f.user(slot);
    let lost = (0..forks)
        .filter(|n| by_label(&s, ObjectClass::PRIVATE_KEY, &format!("child-{n}")).len() != 1)
        .count();
    println!(
        "soak fork: {forks} children forked under load: {hung} hung, {failed} failed, {lost} writes lost"
    );
    assert_eq!((hung, failed, lost), (0, 0, 0));
}
