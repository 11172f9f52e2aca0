//! Running one module's part of a command (`list`) in a child process: the
//! same executable with the same subcommand for that one module, told by
//! [`CHILD_ENV`] where to hand its result over (a JSON file in a private
//! temporary directory). A module that crashes, aborts or hangs there
//! becomes a one-line error naming it and how its process ended, never a
//! crash of hsm-bench. (`run` has its own, longer-lived workers:
//! `measure/remote.rs`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{CliError, Result};
use crate::measure::remote::{describe_exit, stderr_as_stdout};

/// Set in the child: the file its result goes to.
pub const CHILD_ENV: &str = "HSM_BENCH_CHILD_RESULT";

/// How long the child may take.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

/// The result file, when this process is such a child.
pub fn child_result_path() -> Option<PathBuf> {
    std::env::var_os(CHILD_ENV).map(PathBuf::from)
}

/// Hand the child's result over (in the child).
pub fn hand_over<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string(value)
        .map_err(|e| CliError::usage(format!("cannot encode the result: {e}")))?;
    std::fs::write(path, text)
        .map_err(|e| CliError::usage(format!("cannot hand the result over: {e}")))
}

/// Run this executable with `args` as a child and read back what it hands
/// over; `who` names the module in messages. A child that fails with its
/// own message (already on stderr) gives its exit code and no second line.
pub fn in_child<T: DeserializeOwned>(args: &[&str], who: &str) -> Result<T> {
    let failed = |why: String| CliError::usage(format!("{who}: {why}"));
    let dir = tempfile::Builder::new()
        .prefix("hsm-bench-child-")
        .tempdir()
        .map_err(|e| failed(format!("cannot create a temporary directory: {e}")))?;
    let file = dir.path().join("result.json");
    let exe = std::env::current_exe().map_err(|e| failed(format!("no executable path: {e}")))?;
    let stdout = stderr_as_stdout().map_err(|e| failed(e.to_string()))?;
    let mut child = Command::new(exe)
        .args(args)
        .env(CHILD_ENV, &file)
        .stdin(Stdio::null())
        .stdout(stdout)
        .spawn()
        .map_err(|e| failed(format!("cannot start a process for it: {e}")))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if started.elapsed() < CHILD_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "no answer within {} s: its process was killed",
                    CHILD_TIMEOUT.as_secs()
                )));
            }
            Err(e) => return Err(failed(e.to_string())),
        }
    };
    match status.code() {
        Some(0) => {}
        // The child said why on stderr, as a one-line error.
        Some(code) => {
            return Err(CliError {
                code,
                message: String::new(),
            });
        }
        None => return Err(failed(format!("its process {}", describe_exit(status)))),
    }
    let text = std::fs::read_to_string(&file)
        .map_err(|e| failed(format!("its process handed nothing over: {e}")))?;
    serde_json::from_str(&text).map_err(|e| failed(format!("its process handed over {e}")))
}
