//! The key worker of the memory hygiene test (role `MEMORY_KEYS`;
//! docs/SECURITY.md, "Memory hygiene"): unwraps the token key from the
//! token file with a PIN by its own code (PBKDF2 and AES-GCM straight from
//! the crates) and prints it and the PIN's key-encryption key, masked.

use super::*;

/// `MEMORY_KEYS=<token file>;<user|so>;<masked PIN>`: prints the token key
/// and the key-encryption key of that PIN's wrap in the file, masked.
pub(crate) fn key_worker(spec: &str) {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let mut parts = spec.splitn(3, ';');
    let (path, role, pin) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let mut pin_bytes = vec![0u8; masked_len(pin)];
    unmask_into(pin, &mut pin_bytes);
    let db = rusqlite::Connection::open(path).unwrap();
    let json: Vec<u8> = db
        .query_row("SELECT value FROM meta WHERE name = 'token'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let meta: dalek_pkcs11::storage::TokenMeta = serde_json::from_slice(&json).unwrap();
    let wrap = if role == "so" {
        meta.so_pin
    } else {
        meta.user_pin
    }
    .expect("PIN set");
    let mut kek = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(&pin_bytes, &unhex(&wrap.salt), wrap.iterations, &mut kek);
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
        .expect("the PIN opens the wrap");
    println!("token-key {}", mask(&key));
    println!("kek {}", mask(&kek));
}

/// The token file in the test's token directory.
fn token_file() -> String {
    let dir = std::env::var("DALEK_PKCS11_TOKEN_DIR").unwrap();
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .unwrap()
        .display()
        .to_string()
}

/// Runs the key worker for the masked PIN `pin` of `role` (`user` or
/// `so`): (token key, KEK), masked.
pub(crate) fn keys_of(role: &str, pin: &str) -> (String, String) {
    let out = worker_command()
        .env_remove("MEMORY_SCAN")
        .env("MEMORY_KEYS", format!("{};{role};{pin}", token_file()))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |tag: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(tag))
            .unwrap_or_else(|| panic!("{text}{}", String::from_utf8_lossy(&out.stderr)))
            .to_string()
    };
    (line("token-key "), line("kek "))
}
