//! Where PINs come from: an environment variable named on the command line
//! (`--pin-env VAR`), the command line itself only when asked for explicitly
//! (`--pin PIN`, as softhsm2-util allows; it shows in `ps`), or else the
//! terminal without echo (a new PIN is asked twice), or one line of standard
//! input when that is not a terminal (scripts). PINs are zeroized when
//! dropped.

use std::io::{BufRead, IsTerminal};

use clap::Args;
use zeroize::Zeroizing;

use crate::Failure;

/// The user PIN's source.
#[derive(Args, Debug, Default)]
pub struct PinArgs {
    /// Environment variable holding the user PIN.
    #[arg(long, value_name = "VAR", conflicts_with = "pin")]
    pub pin_env: Option<String>,
    /// The user PIN itself (visible to other users in `ps`; prefer --pin-env).
    #[arg(long, value_name = "PIN")]
    pub pin: Option<String>,
}

/// The SO PIN's source.
#[derive(Args, Debug, Default)]
pub struct SoPinArgs {
    /// Environment variable holding the SO PIN.
    #[arg(long, value_name = "VAR", conflicts_with = "so_pin")]
    pub so_pin_env: Option<String>,
    /// The SO PIN itself (visible to other users in `ps`; prefer --so-pin-env).
    #[arg(long, value_name = "PIN")]
    pub so_pin: Option<String>,
}

/// A PIN, zeroized on drop.
pub type Pin = Zeroizing<Vec<u8>>;

/// Whether a PIN being read is a new one (asked twice at a terminal).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An existing PIN.
    Current,
    /// A PIN being set.
    New,
}

/// Read the PIN `what` (e.g. "user PIN") from `env`, `given`, or the terminal.
pub fn read(
    what: &str,
    env: Option<&str>,
    given: Option<&str>,
    kind: Kind,
) -> Result<Pin, Failure> {
    if let Some(var) = env {
        return match std::env::var(var) {
            Ok(v) if !v.is_empty() => Ok(Zeroizing::new(v.into_bytes())),
            _ => Err(Failure::new(format!(
                "the {what} variable {var} is not set (or empty)"
            ))),
        };
    }
    if let Some(p) = given {
        return Ok(Zeroizing::new(p.as_bytes().to_vec()));
    }
    if std::io::stdin().is_terminal() {
        let first = prompt(what)?;
        if kind == Kind::New {
            let again = prompt(&format!("{what} again"))?;
            if *first != *again {
                return Err(Failure::new(format!("the two {what}s differ")));
            }
        }
        return Ok(first);
    }
    let mut line = Zeroizing::new(String::new());
    // A PIN is at most 255 bytes (the module refuses longer ones): a line
    // is read up to a bound, never to the end of whatever is piped in.
    std::io::Read::take(std::io::stdin().lock(), MAX_LINE + 1)
        .read_line(&mut line)
        .map_err(|e| Failure::new(format!("reading the {what} from standard input: {e}")))?;
    if line.len() as u64 > MAX_LINE {
        return Err(Failure::new(format!(
            "the {what} on standard input is longer than {MAX_LINE} bytes"
        )));
    }
    let pin = line.trim_end_matches(['\r', '\n']);
    if pin.is_empty() {
        return Err(Failure::new(format!(
            "no {what}: give it with an environment variable (see --help) or on standard input"
        )));
    }
    Ok(Zeroizing::new(pin.as_bytes().to_vec()))
}

/// The longest line read from standard input (a PIN, a confirmation).
pub const MAX_LINE: u64 = 1024;

fn prompt(what: &str) -> Result<Pin, Failure> {
    rpassword::prompt_password(format!("{what}: "))
        .map(|p| Zeroizing::new(p.into_bytes()))
        .map_err(|e| Failure::new(format!("reading the {what}: {e}")))
}

impl PinArgs {
    /// The user PIN.
    pub fn read(&self, kind: Kind) -> Result<Pin, Failure> {
        read(
            "user PIN",
            self.pin_env.as_deref(),
            self.pin.as_deref(),
            kind,
        )
    }
}

impl SoPinArgs {
    /// The SO PIN.
    pub fn read(&self, kind: Kind) -> Result<Pin, Failure> {
        read(
            "SO PIN",
            self.so_pin_env.as_deref(),
            self.so_pin.as_deref(),
            kind,
        )
    }
}
