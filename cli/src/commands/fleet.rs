//! `hsm-bench run`'s worker processes: per module, as many as the largest
//! `--processes` asks for, each loading the module (`measure/remote.rs`).
//! The first opens the module as always (and makes its temporary token);
//! the others log in to the same token, so one token is driven by several
//! processes, as by service replicas.

use std::path::Path;
use std::time::Duration;

use crate::error::{CliError, Result};
use crate::measure::bench::{self, StartError};
use crate::measure::ipc::{Opened, Share};
use crate::measure::remote::Remote;
use crate::token::choice::ModuleChoice;

/// Per module: its worker processes, what its first one opened, and the
/// token that first one made for the others (a temporary token).
pub type Workers = (Vec<Vec<Remote>>, Vec<Opened>, Vec<Option<Share>>);

/// Start `procs` worker processes for every module (its `temporary` token
/// flag, sockets in `dir`), each given `step` to open its module; a module
/// that cannot be opened ends the run with its error, naming the process.
pub fn start_workers(
    choices: &[ModuleChoice],
    temporary: &[bool],
    dir: &Path,
    procs: usize,
    step: Duration,
) -> Result<Workers> {
    let mut remotes: Vec<Vec<Remote>> = Vec::new();
    let mut opened = Vec::new();
    let mut shares = Vec::new();
    for (i, c) in choices.iter().enumerate() {
        let mut group = Vec::with_capacity(procs);
        let mut share = None;
        for k in 0..procs {
            let spawn = bench::Spawn {
                dir,
                index: i,
                replica: k,
                name: &c.name,
                temporary: temporary[i],
                env: &c.options.env,
                share: share.as_ref(),
            };
            match bench::start_worker(&spawn, step) {
                Ok((r, o)) => {
                    group.push(r);
                    if k == 0 {
                        share = o.share.clone();
                        opened.push(o);
                    }
                }
                Err(StartError::Refused(message, code)) => {
                    let message = if k == 0 {
                        message
                    } else {
                        format!("process {} of {procs}: {message}", k + 1)
                    };
                    return Err(CliError { code, message });
                }
                Err(StartError::Lost(l)) => {
                    return Err(CliError::usage(format!(
                        "module {} ({}){}: {}",
                        c.name,
                        c.path.display(),
                        if k == 0 {
                            String::new()
                        } else {
                            format!(", process {} of {procs}", k + 1)
                        },
                        l.describe()
                    )));
                }
            }
        }
        remotes.push(group);
        shares.push(share);
    }
    Ok((remotes, opened, shares))
}
