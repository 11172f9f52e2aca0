//! Soak phase "corruption": single-bit flips in copies of a token (see main.rs).

use super::*;

// ----------------------------------------------------------- corruption --

/// A canonical listing of a token as a consumer sees it: every object's
/// class, label, id and public value, a signature or MAC by every key (all
/// deterministic), or the first error; and whether the token is flagged
/// damaged (`model`, docs/SECURITY.md "A damaged token").
fn listing(p: &Pkcs11) -> Result<(usize, String, bool), String> {
    let slot = p
        .get_slots_with_token()
        .map_err(|e| format!("slots: {e}"))?
        .into_iter()
        .find(|s| p.get_token_info(*s).is_ok_and(|t| t.label() == "victim"))
        .ok_or("token absent")?;
    let flagged = |p: &Pkcs11| {
        p.get_token_info(slot)
            .map(|t| t.model() == "DAMAGED")
            .map_err(|e| format!("info: {e}"))
    };
    let s = p.open_ro_session(slot).map_err(|e| format!("open: {e}"))?;
    s.login(UserType::User, Some(&pin(USER_PIN)))
        .map_err(|e| format!("login: {e}"))?;
    let handles = s.find_objects(&[]).map_err(|e| format!("find: {e}"))?;
    let mut lines = Vec::new();
    for h in &handles {
        let attrs = s
            .get_attributes(
                *h,
                &[
                    AttributeType::Class,
                    AttributeType::Label,
                    AttributeType::Id,
                    AttributeType::EcPoint,
                    AttributeType::Value,
                    AttributeType::Sensitive,
                ],
            )
            .map_err(|e| format!("get: {e}"))?;
        let mut line = format!("{attrs:?}");
        let class = attrs.iter().find_map(|a| match a {
            Attribute::Class(c) => Some(*c),
            _ => None,
        });
        let proof = match class {
            Some(ObjectClass::PRIVATE_KEY) => Some(s.sign(&eddsa(), *h, b"proof")),
            Some(ObjectClass::SECRET_KEY) => Some(s.sign(&Mechanism::Sha256Hmac, *h, b"proof")),
            _ => None,
        };
        if let Some(proof) = proof {
            line.push_str(&format!(" {:?}", proof.map_err(|e| format!("use: {e}"))?));
        }
        lines.push(line);
    }
    lines.sort();
    Ok((handles.len(), lines.join("\n"), flagged(p)?))
}

/// In the worker: one module per token copy in `dirs`, each listed.
pub(super) fn corruption_worker(dirs: &[String]) {
    let mut out = std::io::stdout();
    for (i, dir) in dirs.iter().enumerate() {
        writeln!(out, "start {i}")
            .and_then(|_| out.flush())
            .unwrap();
        // SAFETY: this worker is single-threaded while it changes the
        // environment the module reads at C_Initialize.
        unsafe { std::env::set_var("DALEK_PKCS11_TOKEN_DIR", dir) };
        let p = Pkcs11::new(module_path()).unwrap();
        let r = p
            .initialize(cryptoki::context::CInitializeArgs::new(
                cryptoki::context::CInitializeFlags::OS_LOCKING_OK,
            ))
            .map_err(|e| format!("init: {e}"))
            .and_then(|()| listing(&p));
        let _ = p.finalize();
        let line = match r {
            Ok((n, text, flagged)) => {
                format!("ok {n} {:016x} {flagged}", fnv(text.as_bytes()))
            }
            Err(e) => format!("err {e}"),
        };
        writeln!(out, "result {i} {line}")
            .and_then(|_| out.flush())
            .unwrap();
    }
}

/// The offsets of the bytes that hold something in the root pages of the
/// SQLite indexes of the database `db` (read from a copy made in `scratch`).
fn used_index_bytes(db: &std::path::Path, scratch: &std::path::Path) -> Vec<usize> {
    std::fs::create_dir_all(scratch).unwrap();
    let copy = scratch.join("index-probe.sqlite");
    std::fs::copy(db, &copy).unwrap();
    let bytes = std::fs::read(&copy).unwrap();
    let c = rusqlite::Connection::open(&copy).unwrap();
    let page: usize = c
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as usize;
    let mut stmt = c
        .prepare("SELECT rootpage FROM sqlite_schema WHERE type = 'index'")
        .unwrap();
    let roots: Vec<usize> = stmt
        .query_map([], |r| r.get::<_, i64>(0))
        .unwrap()
        .map(|r| r.unwrap() as usize)
        .collect();
    roots
        .into_iter()
        .flat_map(|root| (root - 1) * page..root * page)
        .filter(|&i| i < bytes.len() && bytes[i] != 0)
        .collect()
}

/// True when SQLite's `integrity_check` fails on the database `db` (or
/// cannot run on it).
fn sqlite_sees_damage(db: &std::path::Path) -> bool {
    let Ok(c) = rusqlite::Connection::open(db) else {
        return true;
    };
    let first: rusqlite::Result<String> = c.query_row("PRAGMA integrity_check", [], |r| r.get(0));
    first.map_or(true, |l| l != "ok")
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[test]
fn soak_corruption_is_never_served_silently() {
    let trials = env_or("SOAK_CORRUPTIONS", 24) as usize;
    let mut rng = seeded_rng("corruption");
    let mut f = Fixture::new();
    let slot = f.token("victim");
    {
        let s = f.user(slot);
        for i in 0..4 {
            key_pair(&s, &format!("pair-{i}")).unwrap();
        }
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Token(true),
            Attribute::Sign(true),
            Attribute::Label(b"mac".to_vec()),
            Attribute::Value(vec![5; 32]),
        ])
        .unwrap();
        s.create_object(&[
            Attribute::Class(ObjectClass::DATA),
            Attribute::Token(true),
            Attribute::Private(false),
            Attribute::Label(b"data".to_vec()),
            Attribute::Value(b"public data".to_vec()),
        ])
        .unwrap();
    }
    f.stop(); // the log is folded into the database file
    let pristine = f.dir.path().join("tokens");
    let db_name = std::fs::read_dir(&pristine)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().into_string().unwrap())
        .find(|n| n.ends_with(".sqlite"))
        .unwrap();
    let db = std::fs::read(pristine.join(&db_name)).unwrap();
    let used: Vec<usize> = (0..db.len()).filter(|&i| db[i] != 0).collect();
    let index_bytes = used_index_bytes(&pristine.join(&db_name), &f.dir.path().join("probe"));
    assert!(!index_bytes.is_empty());
    let work = f.dir.path().join("copies");
    let mut dirs = vec![pristine.display().to_string()];
    // Per copy: whether SQLite's integrity check fails on it.
    let mut sqlite_damaged = vec![false];
    for t in 0..trials {
        let dir = work.join(format!("t{t}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes = db.clone();
        // A third of the flips anywhere, a third in bytes that hold
        // something (most of a small database is empty page space), a
        // third in bytes of SQLite's indexes (damage outside the records,
        // which their MACs do not cover).
        let at = match t % 3 {
            0 => rng.below(bytes.len() as u64) as usize,
            1 => used[rng.below(used.len() as u64) as usize],
            _ => index_bytes[rng.below(index_bytes.len() as u64) as usize],
        };
        bytes[at] ^= 1 << rng.below(8);
        std::fs::write(dir.join(&db_name), bytes).unwrap();
        // What SQLite's own check says of the copy (in this process: the
        // copy is a file of its own, which the module here never opens),
        // on a copy of the copy, since a check may write a log beside it.
        let probe = work.join("probe.sqlite");
        std::fs::copy(dir.join(&db_name), &probe).unwrap();
        sqlite_damaged.push(sqlite_sees_damage(&probe));
        for side in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{side}", probe.display()));
        }
        dirs.push(dir.display().to_string());
    }
    // Batches of copies per worker process, so a crash or hang costs one
    // trial: the next batch starts after the trial that failed.
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    // The outcomes of the copies SQLite's own check finds damaged.
    let mut outside: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reference: Option<(usize, String)> = None;
    let mut next = 0;
    while next < dirs.len() {
        let batch = &dirs[next..(next + 64).min(dirs.len())];
        let mut child = f.spawn_worker("SOAK_WORKER", &format!("corrupt {}", batch.join(" ")));
        let deadline = Instant::now() + Duration::from_secs(30 + 2 * batch.len() as u64);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut finished = 0;
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("result ") else {
                continue;
            };
            let mut parts = rest.splitn(4, ' ');
            let i: usize = parts.next().unwrap().parse().unwrap();
            finished = finished.max(i + 1);
            let global = next + i;
            let kind = parts.next().unwrap();
            if global == 0 {
                assert_eq!(kind, "ok", "the pristine token must list: {line}");
                let n = parts.next().unwrap().parse().unwrap();
                let (hash, flagged) = parts.next().unwrap().split_once(' ').unwrap();
                assert_eq!(flagged, "false", "the pristine token is not flagged");
                reference = Some((n, hash.to_string()));
                continue;
            }
            let (n_ref, hash_ref) = reference.as_ref().unwrap();
            let seen_by_sqlite = sqlite_damaged[global];
            let outcome = if kind == "err" {
                "refused with an error"
            } else {
                let n: usize = parts.next().unwrap().parse().unwrap();
                let (hash, flagged) = parts.next().unwrap().split_once(' ').unwrap();
                let flagged = flagged == "true";
                if n == *n_ref && hash == hash_ref {
                    match (flagged, seen_by_sqlite) {
                        (true, _) => "identical, flagged damaged (read-only)",
                        (false, false) => "identical (unused bytes)",
                        (false, true) => "SILENTLY DAMAGED (SQLite's check fails, not flagged)",
                    }
                } else if n < *n_ref {
                    "SILENTLY MISSING"
                } else {
                    "SILENTLY DIFFERENT"
                }
            };
            *outcomes.entry(outcome).or_default() += 1;
            if seen_by_sqlite {
                *outside.entry(outcome).or_default() += 1;
            }
            if outcome.starts_with("SILENTLY") {
                println!("soak corruption: {} -> {outcome}", batch[i]);
            }
        }
        if finished < batch.len() {
            let what = if status.is_none() { "HANG" } else { "CRASH" };
            *outcomes.entry(what).or_default() += 1;
            println!("soak corruption: {} -> {what}", batch[finished]);
            finished += 1;
        }
        next += finished;
    }
    println!("soak corruption: {trials} single-bit flips: {outcomes:?}");
    println!(
        "soak damage: {} of the copies fail SQLite's integrity check (damage outside the records too): {outside:?}",
        sqlite_damaged.iter().filter(|d| **d).count()
    );
    let bad: usize = outcomes
        .iter()
        .filter(|(k, _)| k.starts_with("SILENTLY") || **k == "HANG" || **k == "CRASH")
        .map(|(_, v)| v)
        .sum();
    assert_eq!(bad, 0, "{outcomes:?}");
}
