//! Module configuration: a TOML file plus environment overrides.
//!
//! Sources, later ones winning:
//! 1. built-in defaults (token directory `$XDG_DATA_HOME/dalek-pkcs11/tokens`,
//!    SQLite storage, logging off);
//! 2. the first TOML file found of: `$DALEK_PKCS11_CONFIG`,
//!    `$XDG_CONFIG_HOME/dalek-pkcs11/config.toml` (or `~/.config/...`),
//!    `/etc/dalek-pkcs11/config.toml`;
//! 3. environment variables `DALEK_PKCS11_TOKEN_DIR`, `DALEK_PKCS11_STORAGE`,
//!    `DALEK_PKCS11_LOG`, `DALEK_PKCS11_LOG_FILE`, `DALEK_PKCS11_KEY_POLICY`.
//!
//! `docs/configuration.md` documents every key.

use crate::error::{Result, err};
use crate::log::Level;
use cryptoki_sys::CKR_GENERAL_ERROR;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Environment variable naming the configuration file.
pub const ENV_CONFIG: &str = "DALEK_PKCS11_CONFIG";
/// Environment variable overriding the token directory.
pub const ENV_TOKEN_DIR: &str = "DALEK_PKCS11_TOKEN_DIR";
/// Environment variable overriding the storage back end (`sqlite`,
/// `memory`, or a PostgreSQL connection string: [`StorageKind::parse`]).
pub const ENV_STORAGE: &str = "DALEK_PKCS11_STORAGE";
/// Environment variable overriding the log level.
pub const ENV_LOG: &str = "DALEK_PKCS11_LOG";
/// Environment variable overriding the log file.
pub const ENV_LOG_FILE: &str = "DALEK_PKCS11_LOG_FILE";
/// Environment variable overriding the key-management policy (`default` or `strict`).
pub const ENV_KEY_POLICY: &str = "DALEK_PKCS11_KEY_POLICY";
/// Overrides `postgres_max_staleness` (seconds).
pub const ENV_POSTGRES_MAX_STALENESS: &str = "DALEK_PKCS11_POSTGRES_MAX_STALENESS";

/// The least PBKDF2-HMAC-SHA256 iteration count accepted for PIN derivation.
pub const MIN_PIN_KDF_ITERATIONS: u32 = 600_000;
/// The most accepted (some seconds per login): a stored count above it is
/// refused rather than run, so an edited token file cannot stall `C_Login`.
pub const MAX_PIN_KDF_ITERATIONS: u32 = 20_000_000;

/// The least RSA modulus `rsa_min_bits` may allow for generated keys
/// (1024: SoftHSM2's legacy floor; below 2048 is legacy strength).
pub const RSA_MIN_BITS_FLOOR: u32 = 1024;
/// The largest RSA modulus the token makes or uses.
pub const RSA_MAX_BITS: u32 = 16384;

/// Where token objects are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageKind {
    /// One SQLite database per token in the token directory.
    Sqlite,
    /// Process memory only: tokens vanish when the process ends.
    Memory,
    /// Rows of a PostgreSQL database ([`Config::postgres`] says which).
    Postgres,
}

impl StorageKind {
    /// `sqlite`, `memory`, or a libpq connection string: a URI
    /// (`postgresql://…` or `postgres://…`) or `key=value` pairs (`host=db
    /// dbname=tokens`), returned as the second value.
    pub fn parse(s: &str) -> Option<(Self, Option<String>)> {
        let t = s.trim();
        match t.to_ascii_lowercase().as_str() {
            "sqlite" => return Some((StorageKind::Sqlite, None)),
            "memory" => return Some((StorageKind::Memory, None)),
            _ => {}
        }
        let lower = t.to_ascii_lowercase();
        (lower.starts_with("postgresql://") || lower.starts_with("postgres://") || t.contains('='))
            .then(|| (StorageKind::Postgres, Some(t.to_string())))
    }
}

/// Where the PostgreSQL store connects, and how long it waits.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresSettings {
    /// The libpq connection string or URI (it may hold a password: never
    /// printed; `Debug` shows it redacted).
    pub conninfo: String,
    /// A password file in libpq's `.pgpass` format (`postgres_password_file`;
    /// else `PGPASSFILE`, else `~/.pgpass`).
    pub password_file: Option<PathBuf>,
    /// The longest a call waits for the database (`postgres_timeout`,
    /// seconds): connecting, or any one statement. Past it the call fails
    /// with `CKR_DEVICE_ERROR` and the connection is made again later.
    pub timeout: std::time::Duration,
    /// How stale a look at the token may be (`postgres_max_staleness`,
    /// seconds). Zero (the default): every look reads the token's row, so
    /// every call sees every write acknowledged before it started. Above
    /// zero: the module listens for the writers' notifications
    /// (`LISTEN`/`NOTIFY`) and reads the row only when one came, the
    /// connection was made again, or this long has passed since it last did.
    pub max_staleness: std::time::Duration,
}

impl std::fmt::Debug for PostgresSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSettings")
            .field("conninfo", &"(redacted)")
            .field("password_file", &self.password_file)
            .field("timeout", &self.timeout)
            .field("max_staleness", &self.max_staleness)
            .finish()
    }
}

/// A `postgres_max_staleness` in seconds, if it is one (0 to 3600).
fn staleness(seconds: Option<f64>) -> Option<std::time::Duration> {
    seconds
        .filter(|t| (0.0..=3600.0).contains(t))
        .map(std::time::Duration::from_secs_f64)
}

/// The default of `postgres_timeout`.
pub const DEFAULT_POSTGRES_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// When SQLite waits for the disk (`PRAGMA synchronous` in WAL mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Commits are atomic and survive a crash of the process at any
    /// moment; a power loss may undo the last commits, never corrupt.
    Normal,
    /// Every commit waits for the disk (fsync): survives power loss too,
    /// at about a millisecond or more per change.
    Full,
}

/// The key-management policy (`docs/SECURITY.md`, "Key-management policy"):
/// which of the known PKCS#11 key-management attacks the token stops by
/// refusing calls the specification allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyPolicy {
    /// Every defence that keeps the specification's behaviour for the
    /// consumers in `scripts/test`: no derivation, wrap or MAC yields a key
    /// or an oracle weaker than its base, wrapping keys at least as strong
    /// as what they wrap, key-management usage flags of protected keys never
    /// widened, wrap/decrypt separation.
    Default,
    /// The secure configuration of Bortolozzo et al. (CCS 2010) and more:
    /// every usage flag sticky, conflicting roles refused on any key,
    /// wrapping only under keys no caller can know, private objects never
    /// copied public, unwrapped keys always sensitive.
    Strict,
}

impl KeyPolicy {
    fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "default" => Some(KeyPolicy::Default),
            "strict" => Some(KeyPolicy::Strict),
            _ => None,
        }
    }

    /// True under [`KeyPolicy::Strict`].
    pub fn is_strict(self) -> bool {
        self == KeyPolicy::Strict
    }
}

/// The file format; every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    token_dir: Option<PathBuf>,
    storage: Option<String>,
    postgres_password_file: Option<PathBuf>,
    postgres_timeout: Option<f64>,
    postgres_max_staleness: Option<f64>,
    log_level: Option<String>,
    log_file: Option<PathBuf>,
    pin_kdf_iterations: Option<u32>,
    durability: Option<Durability>,
    wrap_separation: Option<bool>,
    rsa_min_bits: Option<u32>,
    key_policy: Option<KeyPolicy>,
}

/// The effective configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Directory holding one database file per token.
    pub token_dir: PathBuf,
    /// Storage back end.
    pub storage: StorageKind,
    /// The database of [`StorageKind::Postgres`] (its `conninfo` is empty
    /// for the other kinds).
    pub postgres: PostgresSettings,
    /// Log level.
    pub log_level: Level,
    /// Log destination; `None` is standard error.
    pub log_file: Option<PathBuf>,
    /// PBKDF2 iterations for PINs set from now on (existing tokens keep theirs
    /// until the PIN is changed).
    pub pin_kdf_iterations: u32,
    /// SQLite commit durability.
    pub durability: Durability,
    /// Key-wrap separation (on by default): a key allowed to wrap or unwrap
    /// (`CKA_WRAP` / `CKA_UNWRAP`) is refused for `C_Encrypt` / `C_Decrypt`
    /// with the mechanisms that wrap keys, so what it wrapped cannot be
    /// decrypted back out (see `docs/SECURITY.md`).
    pub wrap_separation: bool,
    /// Smallest RSA modulus `C_GenerateKeyPair` makes, in bits (default
    /// 1024 for test suites written against SoftHSM2; 2048 or more for
    /// keys that must resist factoring today).
    pub rsa_min_bits: u32,
    /// Key-management policy (default [`KeyPolicy::Default`]).
    pub key_policy: KeyPolicy,
}

impl Config {
    /// Reads the configuration from the files and environment described above.
    pub fn load() -> Result<Config> {
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let file = match env(ENV_CONFIG) {
            Some(p) => Some(PathBuf::from(p)),
            None => default_config_paths().into_iter().find(|p| p.is_file()),
        };
        let mut cfg = Config::defaults();
        if let Some(path) = file {
            cfg.apply_file(&path)?;
        }
        if let Some(dir) = env(ENV_TOKEN_DIR) {
            cfg.token_dir = PathBuf::from(dir);
        }
        if let Some(s) = env(ENV_STORAGE) {
            // Not echoed: a connection string may hold a password.
            cfg.set_storage(&s.to_string_lossy()).ok_or_else(|| {
                config_error(format_args!(
                    "{ENV_STORAGE} is not sqlite, memory or a postgresql:// connection string"
                ))
            })?;
        }
        if let Some(s) = env(ENV_LOG) {
            cfg.log_level = Level::parse(&s.to_string_lossy())
                .ok_or_else(|| config_error(format_args!("{ENV_LOG}={s:?} is not a log level")))?;
        }
        if let Some(f) = env(ENV_LOG_FILE) {
            cfg.log_file = Some(PathBuf::from(f));
        }
        if let Some(v) = env(ENV_POSTGRES_MAX_STALENESS) {
            let text = v.to_string_lossy();
            cfg.postgres.max_staleness = staleness(text.trim().parse().ok()).ok_or_else(|| {
                config_error(format_args!(
                    "{ENV_POSTGRES_MAX_STALENESS}={text:?} is not from 0 to 3600 seconds"
                ))
            })?;
        }
        if let Some(s) = env(ENV_KEY_POLICY) {
            cfg.key_policy = KeyPolicy::parse(&s.to_string_lossy()).ok_or_else(|| {
                config_error(format_args!(
                    "{ENV_KEY_POLICY}={s:?} is not default or strict"
                ))
            })?;
        }
        Ok(cfg)
    }

    /// Sets the storage kind (and the PostgreSQL connection string) from a
    /// `storage` value; `None` if it names none.
    pub fn set_storage(&mut self, value: &str) -> Option<()> {
        let (kind, conninfo) = StorageKind::parse(value)?;
        self.storage = kind;
        if let Some(c) = conninfo {
            self.postgres.conninfo = c;
        }
        Some(())
    }

    /// The defaults, before any file or variable.
    pub fn defaults() -> Config {
        Config {
            token_dir: data_home().join("dalek-pkcs11").join("tokens"),
            storage: StorageKind::Sqlite,
            postgres: PostgresSettings {
                conninfo: String::new(),
                password_file: None,
                timeout: DEFAULT_POSTGRES_TIMEOUT,
                max_staleness: std::time::Duration::ZERO,
            },
            log_level: Level::Off,
            log_file: None,
            pin_kdf_iterations: MIN_PIN_KDF_ITERATIONS,
            durability: Durability::Normal,
            wrap_separation: true,
            rsa_min_bits: RSA_MIN_BITS_FLOOR,
            key_policy: KeyPolicy::Default,
        }
    }

    fn apply_file(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| config_error(format_args!("cannot read {}: {e}", path.display())))?;
        let file: FileConfig = toml::from_str(&text)
            .map_err(|e| config_error(format_args!("{}: {e}", path.display())))?;
        if let Some(d) = file.token_dir {
            self.token_dir = d;
        }
        if let Some(t) = file.postgres_timeout {
            if !(0.1..=3600.0).contains(&t) {
                return Err(config_error(format_args!(
                    "postgres_timeout {t} is not from 0.1 to 3600 seconds"
                )));
            }
            self.postgres.timeout = std::time::Duration::from_secs_f64(t);
        }
        if let Some(t) = file.postgres_max_staleness {
            self.postgres.max_staleness = staleness(Some(t)).ok_or_else(|| {
                config_error(format_args!(
                    "postgres_max_staleness {t} is not from 0 to 3600 seconds"
                ))
            })?;
        }
        if let Some(f) = file.postgres_password_file {
            self.postgres.password_file = Some(f);
        }
        if let Some(s) = file.storage {
            self.set_storage(&s).ok_or_else(|| {
                config_error(format_args!(
                    "{}: storage is not sqlite, memory or a postgresql:// connection string",
                    path.display()
                ))
            })?;
        }
        if let Some(l) = file.log_level {
            self.log_level = Level::parse(&l)
                .ok_or_else(|| config_error(format_args!("log_level {l:?} is not a log level")))?;
        }
        if let Some(f) = file.log_file {
            self.log_file = Some(f);
        }
        if let Some(d) = file.durability {
            self.durability = d;
        }
        if let Some(p) = file.key_policy {
            self.key_policy = p;
        }
        if let Some(w) = file.wrap_separation {
            self.wrap_separation = w;
        }
        if let Some(bits) = file.rsa_min_bits {
            if !(RSA_MIN_BITS_FLOOR..=RSA_MAX_BITS).contains(&bits) || bits % 8 != 0 {
                return Err(config_error(format_args!(
                    "rsa_min_bits {bits} is not a multiple of 8 from {RSA_MIN_BITS_FLOOR} to {RSA_MAX_BITS}"
                )));
            }
            self.rsa_min_bits = bits;
        }
        if let Some(n) = file.pin_kdf_iterations {
            if n < MIN_PIN_KDF_ITERATIONS {
                return Err(config_error(format_args!(
                    "pin_kdf_iterations {n} is below the minimum {MIN_PIN_KDF_ITERATIONS}"
                )));
            }
            if n > MAX_PIN_KDF_ITERATIONS {
                return Err(config_error(format_args!(
                    "pin_kdf_iterations {n} is above the maximum {MAX_PIN_KDF_ITERATIONS}"
                )));
            }
            self.pin_kdf_iterations = n;
        }
        Ok(())
    }
}

fn config_error(msg: std::fmt::Arguments<'_>) -> crate::error::Error {
    // The log may not be configured yet: a bad configuration is always reported.
    eprintln!("dalek-pkcs11: configuration error: {msg}");
    err(CKR_GENERAL_ERROR)
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

fn data_home() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".local").join("share"))
}

fn default_config_paths() -> Vec<PathBuf> {
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".config"));
    vec![
        config_home.join("dalek-pkcs11").join("config.toml"),
        PathBuf::from("/etc/dalek-pkcs11/config.toml"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_keys_apply() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "token_dir = \"/x/y\"\nstorage = \"memory\"\nlog_level = \"debug\"\npin_kdf_iterations = 700000\ndurability = \"full\"\n",
        )
        .unwrap();
        let mut c = Config::defaults();
        c.apply_file(&path).unwrap();
        assert_eq!(c.token_dir, PathBuf::from("/x/y"));
        assert_eq!(c.storage, StorageKind::Memory);
        assert_eq!(c.log_level, Level::Debug);
        assert_eq!(c.pin_kdf_iterations, 700_000);
        assert_eq!(c.durability, Durability::Full);
    }

    #[test]
    fn weak_kdf_and_unknown_keys_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "pin_kdf_iterations = 1000\n").unwrap();
        assert!(Config::defaults().apply_file(&path).is_err());
        // A count that would stall every login is refused too.
        std::fs::write(&path, "pin_kdf_iterations = 4000000000\n").unwrap();
        assert!(Config::defaults().apply_file(&path).is_err());
        std::fs::write(&path, "pin_kdf_iterations = 20000000\n").unwrap();
        assert!(Config::defaults().apply_file(&path).is_ok());
        std::fs::write(&path, "tokendir = \"/x\"\n").unwrap();
        assert!(Config::defaults().apply_file(&path).is_err());
    }

    #[test]
    fn rsa_min_bits_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        assert_eq!(Config::defaults().rsa_min_bits, 1024);
        for (bits, ok) in [
            (512, false),
            (1020, false),
            (2047, false),
            (16392, false),
            (1024, true),
            (3072, true),
            (16384, true),
        ] {
            std::fs::write(&path, format!("rsa_min_bits = {bits}\n")).unwrap();
            let mut c = Config::defaults();
            assert_eq!(c.apply_file(&path).is_ok(), ok, "{bits}");
            if ok {
                assert_eq!(c.rsa_min_bits, bits);
            }
        }
    }

    #[test]
    fn key_policy_from_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        assert_eq!(Config::defaults().key_policy, KeyPolicy::Default);
        std::fs::write(&path, "key_policy = \"strict\"\n").unwrap();
        let mut c = Config::defaults();
        c.apply_file(&path).unwrap();
        assert_eq!(c.key_policy, KeyPolicy::Strict);
        std::fs::write(&path, "key_policy = \"lax\"\n").unwrap();
        assert!(Config::defaults().apply_file(&path).is_err());
        assert_eq!(KeyPolicy::parse(" Strict "), Some(KeyPolicy::Strict));
        assert_eq!(KeyPolicy::parse("off"), None);
    }

    #[test]
    fn storage_names() {
        assert_eq!(
            StorageKind::parse("SQLite"),
            Some((StorageKind::Sqlite, None))
        );
        assert_eq!(
            StorageKind::parse("memory"),
            Some((StorageKind::Memory, None))
        );
        assert_eq!(StorageKind::parse("disk"), None);
        for pg in [
            "postgresql://dalek@db.example/tokens?sslmode=verify-full",
            "postgres://db/tokens",
            "host=/run/postgresql dbname=tokens",
        ] {
            assert_eq!(
                StorageKind::parse(pg),
                Some((StorageKind::Postgres, Some(pg.to_string())))
            );
        }
        let settings = PostgresSettings {
            conninfo: "postgresql://u:hunter2@h/d".into(),
            password_file: None,
            timeout: DEFAULT_POSTGRES_TIMEOUT,
            max_staleness: std::time::Duration::ZERO,
        };
        assert!(!format!("{settings:?}").contains("hunter2"));
    }
}
