//! Soak phase "load": processes and threads on one token with a reader (see main.rs).

use super::*;

// ----------------------------------------------------------------- load --

/// `f` until it succeeds: under `SOAK_FAULTS` the database may be down
/// for a moment when a session is opened or the user logs in.
fn until_ok<T>(mut f: impl FnMut() -> cryptoki::error::Result<T>) -> T {
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) if Instant::now() > give_up => panic!("still failing after 60 s: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

pub(super) fn load_worker(label: &str, threads: usize, millis: u64) {
    let (p, slot) = worker_module(label);
    let login = until_ok(|| p.open_rw_session(slot));
    until_ok(|| match login.login(UserType::User, Some(&pin(USER_PIN))) {
        Err(cryptoki::error::Error::Pkcs11(cryptoki::error::RvError::UserAlreadyLoggedIn, _)) => {
            Ok(())
        }
        other => other,
    });
    let end = Instant::now() + Duration::from_millis(millis);
    let pid = std::process::id();
    type Outcome = (u64, Vec<String>, Vec<String>, Vec<String>);
    let results: Vec<Outcome> = std::thread::scope(|sc| {
        let p = &p;
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                sc.spawn(move || {
                    let s = until_ok(|| p.open_rw_session(slot));
                    let (mut errors, mut live, mut gone, mut uncertain) =
                        (0u64, Vec::new(), Vec::new(), Vec::new());
                    let mut i = 0;
                    while Instant::now() < end {
                        let label = format!("l-{pid}-{t}-{i}");
                        i += 1;
                        let Ok((public, private)) = key_pair(&s, &label) else {
                            errors += 1;
                            uncertain.push(label);
                            continue;
                        };
                        let ok = s
                            .sign(&eddsa(), private, label.as_bytes())
                            .and_then(|sig| s.verify(&eddsa(), public, label.as_bytes(), &sig))
                            .is_ok()
                            && by_label(&s, ObjectClass::PRIVATE_KEY, &label).len() == 1
                            && s.update_attributes(private, &[Attribute::Id(vec![t as u8])])
                                .is_ok();
                        if !ok {
                            errors += 1;
                        }
                        if i % 2 == 0 {
                            if s.destroy_object(private).is_err()
                                || s.destroy_object(public).is_err()
                            {
                                errors += 1;
                                uncertain.push(label);
                            } else {
                                gone.push(label);
                            }
                        } else {
                            live.push(label);
                        }
                    }
                    (errors, live, gone, uncertain)
                })
            })
            .collect();
        // A reader: everything it finds signs, or was destroyed meanwhile.
        let reader = sc.spawn(move || {
            let s = until_ok(|| p.open_ro_session(slot));
            let mut errors = 0u64;
            while Instant::now() < end {
                let Ok(keys) = s.find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY)]) else {
                    errors += 1;
                    continue;
                };
                for k in keys.into_iter().take(20) {
                    if let Err(cryptoki::error::Error::Pkcs11(rv, _)) = s.sign(&eddsa(), k, b"r")
                        && rv != cryptoki::error::RvError::KeyHandleInvalid
                        && rv != cryptoki::error::RvError::ObjectHandleInvalid
                    {
                        errors += 1;
                    }
                }
            }
            (errors, Vec::new(), Vec::new(), Vec::new())
        });
        let mut all: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        all.push(reader.join().unwrap());
        all
    });
    for (errors, live, gone, uncertain) in results {
        println!("errors {errors}");
        for l in live {
            println!("live {l}");
        }
        for l in uncertain {
            println!("uncertain {l}");
        }
        for l in gone {
            println!("gone {l}");
        }
    }
}

/// Faults from the proxy until `end`, a cycle of: connections reset at
/// random messages, a cut before a `COMMIT`, a cut after one (its reply
/// lost), a cut a few messages into a transaction, latency, every
/// connection reset at once, and a stall longer than the module's timeout
/// (5 s). Returns what fired.
fn proxy_faults(proxy: &FaultProxy, end: Instant) -> String {
    let mut rng = seeded_rng("proxy");
    let mut counts = BTreeMap::<&str, u64>::new();
    let mut step = 0usize;
    let pause = |d: u64| std::thread::sleep(Duration::from_millis(d));
    while Instant::now() + Duration::from_secs(7) < end {
        let before = proxy.fired();
        let name = match step % 7 {
            0 => {
                proxy.set(Fault::Random(5_000));
                pause(2000);
                "random resets"
            }
            1 => {
                proxy.set(Fault::CutBeforeCommit);
                pause(1000);
                "cuts before COMMIT"
            }
            2 => {
                proxy.set(Fault::CutAfterCommit);
                pause(1000);
                "cuts after COMMIT"
            }
            3 => {
                proxy.set(Fault::CutInTransaction(1 + (rng.next() % 12) as u32));
                pause(1000);
                "cuts mid-transaction"
            }
            4 => {
                proxy.set(Fault::Latency(Duration::from_millis(3)));
                pause(2000);
                "latency spells"
            }
            5 => {
                proxy.reset_all();
                pause(1000);
                "reset-all"
            }
            _ => {
                proxy.set(Fault::Stall);
                pause(6000);
                "stalls"
            }
        };
        proxy.set(Fault::None);
        // A latency spell or a stall counts once (the proxy counts cuts).
        let spell = u64::from(matches!(step % 7, 4 | 6));
        *counts.entry(name).or_default() += (proxy.fired() - before).max(spell);
        step += 1;
    }
    let total: u64 = counts.values().sum();
    assert!(total > 0, "the proxy faulted nothing");
    let detail: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    format!("{total} faults fired: {}", detail.join(", "))
}

#[test]
fn soak_processes_and_threads_lose_nothing() {
    let seconds = env_or("SOAK_SECONDS", 2);
    let processes = env_or("SOAK_PROCESSES", 2);
    let threads = env_or("SOAK_THREADS", 2);
    let storage = postgres_storage("load");
    // SOAK_PROXY: the module reaches the database through a fault proxy.
    let proxy = storage
        .as_ref()
        .filter(|_| std::env::var_os("SOAK_PROXY").is_some())
        .map(|uri| FaultProxy::in_front_of(uri));
    let faults = proxy.is_some() || std::env::var_os("SOAK_FAULTS").is_some();
    let mut f = match (&storage, &proxy) {
        (Some(uri), Some(proxy)) => Fixture::with_storage(&proxy.uri(uri)),
        (Some(uri), None) => Fixture::with_storage(uri),
        _ => Fixture::new(),
    };
    let slot = f.token("load");
    let children: Vec<_> = (0..processes)
        .map(|_| {
            f.spawn_worker(
                "SOAK_WORKER",
                &format!("load load {threads} {}", seconds * 1000),
            )
        })
        .collect();
    // The schedule ends before the children's load does.
    let end = Instant::now() + Duration::from_secs(seconds.saturating_sub(3));
    let schedule = proxy.as_ref().map(|proxy| proxy_faults(proxy, end));
    let (mut errors, mut live, mut gone, mut uncertain) =
        (0u64, Vec::new(), Vec::new(), Vec::new());
    for c in children {
        for line in finish_worker(c).lines() {
            if let Some(n) = line.strip_prefix("errors ") {
                errors += n.parse::<u64>().unwrap();
            } else if let Some(l) = line.strip_prefix("live ") {
                live.push(l.to_string());
            } else if let Some(l) = line.strip_prefix("gone ") {
                gone.push(l.to_string());
            } else if let Some(l) = line.strip_prefix("uncertain ") {
                uncertain.push(l.to_string());
            }
        }
    }
    f.restart();
    let s = f.user(slot);
    let seen = observed(&s).unwrap();
    let lost = live
        .iter()
        .filter(|l| seen.get(*l).is_none_or(|(pr, pu, _)| *pr != 1 || *pu != 1))
        .count();
    let revived = gone.iter().filter(|l| seen.contains_key(*l)).count();
    let known: HashSet<&String> = live.iter().chain(&gone).chain(&uncertain).collect();
    let strays = seen.keys().filter(|l| !known.contains(l)).count();
    // A pair the failed call left: both halves or neither (one transaction).
    // (A destruction is two calls: one of them failing may leave half.)
    let uncertain_set: HashSet<&String> = uncertain.iter().collect();
    let torn = seen
        .iter()
        .filter(|(l, (pr, pu, _))| (*pr != 1 || *pu != 1) && !uncertain_set.contains(l))
        .count();
    println!(
        "soak load: {processes} processes x {threads} threads x {seconds} s: \
         {} pairs kept, {} destroyed, {} calls failed and were left to chance, \
         {errors} errors, {lost} lost, {revived} revived, {strays} unexplained, {torn} torn",
        live.len(),
        gone.len(),
        uncertain.len()
    );
    if let Some(fired) = schedule {
        println!("soak proxy: {fired}");
    }
    if !faults {
        assert_eq!(errors, 0);
    }
    assert_eq!((lost, revived, strays, torn), (0, 0, 0, 0));
}
