//! The token key leaves no copy in the process after `C_Logout` and
//! `C_Finalize`: the test reads every writable mapping of its own process
//! (the module is loaded in it, as in any consumer) and looks for the key.
//!
//! The key itself comes from a second process (this binary again, as the
//! ignored test `worker`), which unwraps it from the token file with the
//! user PIN by its own code — PBKDF2 and AES-GCM straight from the crates —
//! and prints it in hex, so this process holds exactly one copy of it, at a
//! known place the scan skips.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, KeyType, ObjectClass};
use cryptoki::session::UserType;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;

/// Entry point of the worker process (skipped in a normal run): prints the
/// token key of the token file named in `MEMORY_WORKER`.
#[test]
#[ignore = "runs only as the second process of the tests below"]
fn worker() {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let Ok(path) = std::env::var("MEMORY_WORKER") else {
        return;
    };
    let db = rusqlite::Connection::open(path).unwrap();
    let json: Vec<u8> = db
        .query_row("SELECT value FROM meta WHERE name = 'token'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let meta: dalek_pkcs11::storage::TokenMeta = serde_json::from_slice(&json).unwrap();
    let wrap = meta.user_pin.expect("user PIN set");
    let mut kek = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(
        USER_PIN.as_bytes(),
        &unhex(&wrap.salt),
        wrap.iterations,
        &mut kek,
    );
    let sealed = unhex(&wrap.sealed);
    let cipher = aes_gcm::Aes256Gcm::new(&kek.into());
    let nonce: [u8; 12] = sealed[..12].try_into().unwrap();
    let key = cipher
        .decrypt(
            &nonce.into(),
            Payload {
                msg: &sealed[12..],
                aad: wrap.kdf.as_bytes(),
            },
        )
        .unwrap();
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    println!("token-key {hex}");
}

/// The token key of the token in `dir`, from the worker: one copy, in a
/// page of its own (skipped by the scan).
fn token_key(f: &Fixture) -> Box<[u8; 32]> {
    let file = std::fs::read_dir(f.dir.path().join("tokens"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .unwrap();
    let out = f.spawn_worker("MEMORY_WORKER", &file.display().to_string());
    let out = out.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = text
        .lines()
        .find_map(|l| l.strip_prefix("token-key "))
        .unwrap_or_else(|| panic!("{text}{}", String::from_utf8_lossy(&out.stderr)));
    let mut key = Box::new([0u8; 32]);
    for (i, k) in key.iter_mut().enumerate() {
        *k = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    key
}

/// Writable mappings of this process, as address ranges.
fn writable_mappings() -> Vec<Range<usize>> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let range = parts.next()?;
            let perms = parts.next()?;
            let name = l.split_whitespace().nth(5).unwrap_or("");
            if !perms.starts_with("rw") || name.starts_with("[v") {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            let range = usize::from_str_radix(a, 16).ok()?..usize::from_str_radix(b, 16).ok()?;
            // Terabyte-sized reservations (a sanitizer's shadow memory) hold
            // no data of ours.
            (range.len() <= 1 << 32).then_some(range)
        })
        .collect()
}

/// Addresses in writable memory where `needle` is found, skipping the
/// needle's own address. The chunk buffer is one anonymous mapping of its
/// own, skipped too, and cleared after each chunk.
fn find_in_memory(needle: &[u8; 32]) -> Vec<usize> {
    const CHUNK: usize = 1 << 20;
    let own = needle.as_ptr() as usize;
    // SAFETY: a private anonymous mapping, unmapped below; nothing else
    // aliases it.
    let buf = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            CHUNK + 32,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        std::slice::from_raw_parts_mut(p as *mut u8, CHUNK + 32)
    };
    let buf_range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    let mut mem = std::fs::File::open("/proc/self/mem").unwrap();
    let mut found = Vec::new();
    for region in writable_mappings() {
        if region.start < buf_range.end && buf_range.start < region.end {
            continue;
        }
        let mut at = region.start;
        while at < region.end {
            // Chunks overlap by 31 bytes so no match is split.
            let len = (region.end - at).min(CHUNK + 31);
            if mem.seek(SeekFrom::Start(at as u64)).is_err() {
                break;
            }
            let n = mem.read(&mut buf[..len]).unwrap_or(0);
            if n < 32 {
                break;
            }
            for (i, w) in buf[..n].windows(32).enumerate() {
                if w == needle && at + i != own {
                    found.push(at + i);
                }
            }
            buf[..n].fill(0);
            at += n.saturating_sub(31).max(1);
        }
    }
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
    found.sort_unstable();
    found.dedup();
    found
}

/// Where copies were found: the mapping of each (a thread's stack shows as
/// an anonymous mapping around the stack pointer of that thread).
fn describe(found: &[usize]) -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let here = &maps as *const String as usize;
    found
        .iter()
        .map(|a| {
            let line = maps.lines().find(|l| {
                let r = l.split(' ').next().unwrap_or("");
                let (x, y) = r.split_once('-').unwrap_or(("0", "0"));
                let range = usize::from_str_radix(x, 16).unwrap_or(0)
                    ..usize::from_str_radix(y, 16).unwrap_or(0);
                range.contains(a)
            });
            format!(
                "{a:#x} ({} bytes from this frame) in {line:?}",
                here.abs_diff(*a)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn no_copy_of_the_token_key_survives_logout_or_finalize() {
    // A sanitizer moves stack frames onto heap "fake stacks" and keeps freed
    // memory in quarantine: what it leaves says nothing about the module.
    if std::env::var_os("DALEK_PKCS11_SANITIZER").is_some() {
        eprintln!("skipped under a sanitizer: its fake stacks and quarantine hold stale frames");
        return;
    }
    let mut f = Fixture::new();
    let slot = f.token("hygiene");
    let key = token_key(&f);
    // The scan does find a copy where one lives.
    let copy = Box::new(*key);
    assert_eq!(find_in_memory(&key), vec![copy.as_ptr() as usize]);
    drop(copy);
    for round in 0..2 {
        let s = f.p().open_rw_session(slot).unwrap();
        s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
        // Work that unseals and seals with the token key.
        let k = s
            .generate_key(
                &Mechanism::AesKeyGen,
                &[
                    Attribute::ValueLen(32.into()),
                    Attribute::Token(true),
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(KeyType::AES),
                ],
            )
            .unwrap();
        s.encrypt(&Mechanism::AesEcb, k, &[0u8; 16]).unwrap();
        assert!(
            !find_in_memory(&key).is_empty(),
            "round {round}: logged in, the key is in use somewhere"
        );
        if round == 0 {
            s.logout().unwrap();
            let left = find_in_memory(&key);
            assert!(left.is_empty(), "after C_Logout: {}", describe(&left));
            drop(s);
        } else {
            std::mem::forget(s);
            f.stop();
            let left = find_in_memory(&key);
            assert!(left.is_empty(), "after C_Finalize: {}", describe(&left));
            f.start();
        }
    }
}
