//! `dalek-pkcs11-util`: the operator's tool for dalek-pkcs11 tokens, as
//! `softhsm2-util` is SoftHSM2's: make a token in the free slot, delete one,
//! show what is there, change PINs, raise the PIN KDF cost. It reads the same
//! configuration and environment variables as the module
//! (`DALEK_PKCS11_CONFIG`, `DALEK_PKCS11_TOKEN_DIR`, …) and works through the
//! module's own code (its safe API layer and storage), never around it: a
//! token it makes or changes is exactly what `C_InitToken`, `C_InitPIN` and
//! `C_SetPIN` would have made.
//!
//! Exit codes: 0 done; 1 a check found a problem (`verify`, `repair` that could
//! not repair, `restore` of a damaged backup); 2 bad usage or a failed
//! operation (one line on stderr).

mod asn1;
mod files;
mod items;
mod kdf;
mod keyfile;
mod migrate;
mod objects;
mod output;
mod pin;
mod pqc;
mod tokens;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use pin::PinArgs;

/// The operator's tool for dalek-pkcs11 tokens.
#[derive(Parser, Debug)]
#[command(name = "dalek-pkcs11-util", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Print the result as JSON (for scripts).
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Slots, tokens, object counts by class, PIN state, storage file and
    /// PIN KDF parameters.
    List,
    /// Initialise a token in the free slot and set its user PIN.
    InitToken(InitTokenArgs),
    /// Delete a token (its database file) for good.
    DeleteToken(DeleteTokenArgs),
    /// Change the user PIN (or, with --so, the SO PIN).
    ChangePin(ChangePinArgs),
    /// Re-wrap the token key under PIN-derived keys of a new PBKDF2 cost.
    SetKdf(SetKdfArgs),
    /// Check a token: every record's authentication, the record set's
    /// digest, the IV counters, tombstones; for a file also SQLite's
    /// integrity and leftover files (exit 1 when something is wrong).
    Verify(VerifyArgs),
    /// Rebuild a token file's indexes from its authenticated records (what
    /// `verify` reports as SQLite integrity problems); checks before and
    /// after (exit 1 when it cannot be repaired).
    Repair(RepairArgs),
    /// Copy a token while it is in use to a SQLite file (SQLite's online
    /// backup, or one snapshot of a PostgreSQL token; still encrypted as at
    /// rest).
    Backup(BackupArgs),
    /// Put a backup back as its token (in a SQLite directory or a
    /// PostgreSQL database, as configured), after checking it.
    Restore(RestoreArgs),
    /// Copy a token, while it is in use, into another store: SQLite to
    /// PostgreSQL or back (a move: point the configuration at the copy,
    /// then delete the original).
    CopyToken(CopyTokenArgs),
    /// Import a private key (PKCS#8, PKCS#1 or SEC1; PEM or DER) with its
    /// public key, and/or an X.509 certificate, as token objects.
    Import(ImportArgs),
    /// Write a public key as a PEM (or DER) SubjectPublicKeyInfo.
    ExportPublic(ExportArgs),
    /// Write a certificate as PEM (or DER).
    ExportCert(ExportArgs),
    /// Copy every object of another PKCS#11 module's token (SoftHSM2, …)
    /// into a token of ours; lists what could not be moved (exit 1).
    Migrate(MigrateArgs),
}

/// `migrate`.
#[derive(Args, Debug)]
struct MigrateArgs {
    /// The source PKCS#11 module (e.g. /usr/lib/softhsm/libsofthsm2.so).
    #[arg(long, value_name = "PATH")]
    from_module: std::path::PathBuf,
    /// Label of the source token.
    #[arg(long, value_name = "LABEL")]
    from_token: String,
    /// Environment variable holding the source token's user PIN (else it
    /// is asked for without echo, or read from standard input).
    #[arg(long, value_name = "VAR")]
    pin_env: Option<String>,
    /// Label of our token to copy into.
    #[arg(long, value_name = "LABEL")]
    to_token: String,
    /// Environment variable holding our token's user PIN (default: the
    /// source token's PIN).
    #[arg(long, value_name = "VAR")]
    to_pin_env: Option<String>,
    /// Say what would be moved and how, changing nothing.
    #[arg(long)]
    dry_run: bool,
}

/// `import`.
#[derive(Args, Debug)]
struct ImportArgs {
    #[command(flatten)]
    token: TokenChoice,
    /// CKA_LABEL of the objects made.
    #[arg(long)]
    label: String,
    /// CKA_ID in hex (default: the SHA-1 of the public key, as GnuTLS and
    /// OpenSC compute it, so a key and its certificate match).
    #[arg(long, value_name = "HEX")]
    id: Option<String>,
    /// The key or certificate file (PEM or DER).
    #[arg(long, value_name = "FILE")]
    file: std::path::PathBuf,
    /// CKA_SENSITIVE of the private key: its secret values can never be read.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    sensitive: bool,
    /// CKA_EXTRACTABLE of the private key: it may leave the token wrapped.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    extractable: bool,
    /// Do not make a public key object beside the private key.
    #[arg(long)]
    no_public_key: bool,
    /// Environment variable holding the passphrase of an encrypted PKCS#8
    /// key file (asked for without echo at a terminal otherwise).
    #[arg(long, value_name = "VAR")]
    file_pin_env: Option<String>,
    /// The most memory an encrypted key file's scrypt may use, in MiB
    /// (its work may be 4 times that); a file asking for more is refused.
    #[arg(long, value_name = "MIB", default_value_t = kdf::Limits::DEFAULT.memory_mib,
          value_parser = clap::value_parser!(u64).range(1..=kdf::Limits::MAX_MEMORY_MIB))]
    max_kdf_memory: u64,
    /// The most PBKDF2 iterations an encrypted key file may ask for; a file
    /// asking for more is refused.
    #[arg(long, value_name = "N", default_value_t = kdf::Limits::DEFAULT.iterations,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(kdf::Limits::MAX_ITERATIONS)))]
    max_kdf_iterations: u32,
    #[command(flatten)]
    pin: PinArgs,
}

/// Which object: by label, id or both.
#[derive(Args, Debug)]
#[group(required = true, multiple = true)]
struct ObjectChoice {
    /// CKA_LABEL of the object.
    #[arg(long)]
    label: Option<String>,
    /// CKA_ID of the object, in hex.
    #[arg(long, value_name = "HEX")]
    id: Option<String>,
}

/// `export-public` and `export-cert`.
#[derive(Args, Debug)]
struct ExportArgs {
    #[command(flatten)]
    token: TokenChoice,
    #[command(flatten)]
    object: ObjectChoice,
    /// The file to write (must not exist); standard output if not given.
    #[arg(long, value_name = "FILE")]
    out: Option<std::path::PathBuf>,
    /// DER instead of PEM.
    #[arg(long)]
    der: bool,
    /// Log in (a PIN source given) to reach private objects too.
    #[command(flatten)]
    pin: PinArgs,
}

/// `verify`.
#[derive(Args, Debug)]
struct VerifyArgs {
    #[command(flatten)]
    token: TokenChoice,
}

/// `repair`.
#[derive(Args, Debug)]
struct RepairArgs {
    #[command(flatten)]
    token: TokenChoice,
}

/// `backup`.
#[derive(Args, Debug)]
struct BackupArgs {
    #[command(flatten)]
    token: TokenChoice,
    /// The backup file to write (must not exist).
    #[arg(long, value_name = "FILE")]
    out: std::path::PathBuf,
}

/// `restore`.
#[derive(Args, Debug)]
struct RestoreArgs {
    /// A file written by `backup`.
    #[arg(long, value_name = "FILE")]
    file: std::path::PathBuf,
    /// Replace the token of the same serial if it exists.
    #[arg(long)]
    replace: bool,
}

/// `copy-token`.
#[derive(Args, Debug)]
struct CopyTokenArgs {
    #[command(flatten)]
    token: TokenChoice,
    /// Where to: `sqlite:DIR` (a token directory), or a PostgreSQL
    /// connection string (`postgresql://…` or `key=value` pairs; password
    /// from PGPASSFILE, ~/.pgpass or PGPASSWORD). Never printed.
    #[arg(long, value_name = "sqlite:DIR|postgresql://…")]
    to: String,
    /// Replace a token of the same serial there.
    #[arg(long)]
    replace: bool,
}

/// `init-token`.
#[derive(Args, Debug)]
struct InitTokenArgs {
    /// Token label (at most 32 bytes of UTF-8).
    #[arg(long)]
    label: String,
    #[command(flatten)]
    so_pin: pin::SoPinArgs,
    #[command(flatten)]
    pin: PinArgs,
}

/// Which token: by label or serial number.
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
struct TokenChoice {
    /// Label of the token.
    #[arg(long = "token", id = "token", value_name = "LABEL")]
    label: Option<String>,
    /// Serial number of the token (as `list` shows it).
    #[arg(long)]
    serial: Option<String>,
}

/// `delete-token`.
#[derive(Args, Debug)]
struct DeleteTokenArgs {
    #[command(flatten)]
    token: TokenChoice,
    /// Do not ask for confirmation.
    #[arg(long)]
    yes: bool,
}

/// `change-pin`.
#[derive(Args, Debug)]
struct ChangePinArgs {
    #[command(flatten)]
    token: TokenChoice,
    /// Change the SO PIN instead of the user PIN.
    #[arg(long)]
    so: bool,
    /// Environment variable holding the current PIN.
    #[arg(long, value_name = "VAR")]
    old_pin_env: Option<String>,
    /// Environment variable holding the new PIN.
    #[arg(long, value_name = "VAR")]
    new_pin_env: Option<String>,
}

/// `set-kdf`.
#[derive(Args, Debug)]
struct SetKdfArgs {
    #[command(flatten)]
    token: TokenChoice,
    /// PBKDF2-HMAC-SHA256 iterations for the re-wrapped token key.
    #[arg(long)]
    iterations: u32,
    #[command(flatten)]
    so_pin: pin::SoPinArgs,
    #[command(flatten)]
    pin: PinArgs,
    /// Re-wrap only under the user PIN (the SO PIN keeps its cost).
    #[arg(long, conflicts_with = "so_only")]
    user_only: bool,
    /// Re-wrap only under the SO PIN.
    #[arg(long)]
    so_only: bool,
}

/// A failed command: its message (one line) and exit code.
pub struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    /// A failure with exit code 2.
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 2,
        }
    }

    /// A check that found a problem: exit code 1.
    pub fn check(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 1,
        }
    }
}

impl From<dalek_pkcs11::error::Error> for Failure {
    fn from(e: dalek_pkcs11::error::Error) -> Self {
        Failure::new(e.to_string())
    }
}

/// Result of a command.
pub type Outcome = Result<(), Failure>;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                e.exit();
            }
            let text = e.to_string();
            let line = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ");
            eprintln!("dalek-pkcs11-util: error: {line}");
            return ExitCode::from(2);
        }
    };
    let done = match &cli.command {
        Command::List => tokens::list(cli.json),
        Command::InitToken(a) => tokens::init_token(a, cli.json),
        Command::DeleteToken(a) => tokens::delete_token(a, cli.json),
        Command::ChangePin(a) => tokens::change_pin(a, cli.json),
        Command::SetKdf(a) => tokens::set_kdf(a, cli.json),
        Command::Verify(a) => files::verify(a, cli.json),
        Command::Repair(a) => files::repair(a, cli.json),
        Command::Backup(a) => files::backup(a, cli.json),
        Command::Restore(a) => files::restore(a, cli.json),
        Command::CopyToken(a) => files::copy_token(a, cli.json),
        Command::Import(a) => objects::import(a, cli.json),
        Command::ExportPublic(a) => objects::export_public(a, cli.json),
        Command::ExportCert(a) => objects::export_cert(a, cli.json),
        Command::Migrate(a) => migrate::migrate(a, cli.json),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("dalek-pkcs11-util: error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
