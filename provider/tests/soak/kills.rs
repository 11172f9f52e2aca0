//! Soak phase "kills": a journaling writer SIGKILLed at random moments (see main.rs).

use super::*;

// ---------------------------------------------------------------- kills --

/// The writer's calls, in order: for step i, create pair `k-i`; on every
/// third step set its CKA_ID; on odd steps destroy the pair of step i-1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Create(u64),
    SetId(u64),
    Destroy(u64),
}

fn ops() -> impl Iterator<Item = Op> {
    (0..).flat_map(|i| {
        let mut v = vec![Op::Create(i)];
        if i % 3 == 0 {
            v.push(Op::SetId(i));
        }
        if i % 2 == 1 {
            v.push(Op::Destroy(i - 1));
        }
        v
    })
}

/// What the token holds after the first `n` calls: label → CKA_ID of the
/// private key (the public key has the same label).
fn state_after(n: usize) -> BTreeMap<String, Vec<u8>> {
    let mut state = BTreeMap::new();
    for op in ops().take(n) {
        match op {
            Op::Create(i) => {
                state.insert(format!("k-{i}"), Vec::new());
            }
            Op::SetId(i) => {
                state.insert(format!("k-{i}"), format!("id-{i}").into_bytes());
            }
            Op::Destroy(i) => {
                state.remove(&format!("k-{i}"));
            }
        }
    }
    state
}

pub(super) fn journal_writer(label: &str) {
    let (p, slot) = worker_module(label);
    let s = p.open_rw_session(slot).unwrap();
    s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
    let mut out = std::io::stdout();
    for (n, op) in ops().enumerate() {
        match op {
            Op::Create(i) => {
                key_pair(&s, &format!("k-{i}")).unwrap();
            }
            Op::SetId(i) => {
                let h = by_label(&s, ObjectClass::PRIVATE_KEY, &format!("k-{i}"));
                s.update_attributes(h[0], &[Attribute::Id(format!("id-{i}").into_bytes())])
                    .unwrap();
            }
            Op::Destroy(i) => {
                // One pair, two calls: private first, public second, each
                // journaled (a kill between them leaves the public half).
                let label = format!("k-{i}");
                for h in by_label(&s, ObjectClass::PRIVATE_KEY, &label) {
                    s.destroy_object(h).unwrap();
                }
                writeln!(out, "half {n}").and_then(|_| out.flush()).unwrap();
                for h in by_label(&s, ObjectClass::PUBLIC_KEY, &label) {
                    s.destroy_object(h).unwrap();
                }
            }
        }
        writeln!(out, "done {n}").and_then(|_| out.flush()).unwrap();
    }
}

#[test]
fn soak_kills_lose_nothing() {
    let kills = env_or("SOAK_KILLS", 12);
    let mut rng = seeded_rng("kills");
    let mut f = soak_fixture("kills");
    let slot = f.token("journal");
    let (mut lost, mut checks, mut max_step) = (0u64, 0u64, 0usize);
    for round in 0..kills {
        let mut child = f.spawn_worker("SOAK_WORKER", "journal journal");
        std::thread::sleep(Duration::from_millis(20 + rng.below(400)));
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        // Complete lines only: the last one may have been cut by the kill.
        let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        let done = complete
            .lines()
            .filter_map(|l| l.strip_prefix("done "))
            .filter_map(|n| n.parse::<usize>().ok())
            .max()
            .map_or(0, |n| n + 1);
        let half = complete
            .lines()
            .filter_map(|l| l.strip_prefix("half "))
            .filter_map(|n| n.parse::<usize>().ok())
            .any(|n| n == done);
        f.restart();
        let s = f.user(slot);
        let seen = observed(&s).map_err(|e| format!("round {round}: {e}"));
        drop(s);
        let seen = match seen {
            Ok(seen) => seen,
            Err(e) => {
                println!("soak kills: {e}");
                lost += 1;
                continue;
            }
        };
        // Before or after the call in flight (a destroy may be half done).
        let candidates = [state_after(done), state_after(done + 1)];
        let fits = |state: &BTreeMap<String, Vec<u8>>, half_destroyed: Option<&str>| {
            let whole = seen.iter().all(|(label, (private, public, id))| {
                if Some(label.as_str()) == half_destroyed && *private == 0 && *public == 1 {
                    return true;
                }
                state
                    .get(label)
                    .is_some_and(|want| *private == 1 && *public == 1 && id == want)
            });
            whole && state.keys().all(|l| seen.contains_key(l))
        };
        let in_flight_destroy = ops().nth(done).and_then(|op| match op {
            Op::Destroy(i) => Some(format!("k-{i}")),
            _ => None,
        });
        let ok = fits(&candidates[0], None)
            || fits(&candidates[1], None)
            || (half || in_flight_destroy.is_some())
                && fits(&candidates[0], in_flight_destroy.as_deref());
        checks += 1;
        if !ok {
            lost += 1;
            println!("soak kills: round {round} after {done} calls: token {seen:?}");
        }
        max_step = max_step.max(done);
        // The next writer continues on the same token: start it afresh.
        reset_tokens(&mut f, "kills");
        f.token("journal");
    }
    println!(
        "soak kills: {kills} kills, {checks} checks, {lost} lost or inconsistent, \
         up to {max_step} committed calls before a kill"
    );
    assert_eq!(lost, 0);
}
