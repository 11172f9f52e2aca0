//! The scheduler's handle on one module's worker process: start it (the
//! same `hsm-bench` executable and command line, told by
//! [`WORKER_ENV`](crate::measure::ipc::WORKER_ENV) which module it runs),
//! ask it something with a deadline, and, when it dies or stops answering,
//! say how: the signal or exit status, and what it was doing.
//!
//! A worker runs in a process group of its own, so a Ctrl-C in the
//! terminal reaches only the scheduler, which then stops the workers; it
//! dies with the scheduler (`PR_SET_PDEATHSIG`, set by the worker), and it
//! writes nothing to standard output (its stdout is the scheduler's
//! stderr, so a module that prints cannot corrupt a JSON report on stdout).

use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::measure::ipc::{self, Endpoint, FromWorker, Incoming, ToWorker, WORKER_ENV};

/// How long a new worker may take to connect (its own start, before it
/// loads anything).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a wait looks at Ctrl-C.
const POLL: Duration = Duration::from_millis(50);

/// Why a worker gave no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Lost {
    /// It died (or broke the protocol): how, and what it was doing.
    Died(String),
    /// It did not answer in time and was killed: what it was doing.
    Hung(String),
    /// Ctrl-C while waiting (the worker still runs).
    Interrupted,
}

impl Lost {
    /// One line for a result's reason or an error message.
    pub fn describe(&self) -> String {
        match self {
            Lost::Died(why) | Lost::Hung(why) => why.clone(),
            Lost::Interrupted => "interrupted".into(),
        }
    }
}

/// A module's worker.
pub struct Remote {
    /// The module's name (for messages).
    pub name: String,
    child: Child,
    stream: UnixStream,
    rx: Receiver<Incoming<FromWorker>>,
    /// What the worker was last asked or said it was doing.
    pub phase: String,
    dead: Option<Lost>,
}

/// The name of a signal that ends processes.
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV (segmentation fault)".into(),
        libc::SIGABRT => "SIGABRT (abort)".into(),
        libc::SIGBUS => "SIGBUS (bus error)".into(),
        libc::SIGILL => "SIGILL (illegal instruction)".into(),
        libc::SIGFPE => "SIGFPE (arithmetic exception)".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGTRAP => "SIGTRAP".into(),
        libc::SIGSYS => "SIGSYS (bad system call)".into(),
        n => format!("signal {n}"),
    }
}

/// This process's stderr, for a child's stdout: whatever a module prints
/// there cannot corrupt a report this process writes on its stdout.
pub fn stderr_as_stdout() -> std::io::Result<Stdio> {
    Ok(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?))
}

/// How a process ended, in words.
pub fn describe_exit(status: ExitStatus) -> String {
    match (status.signal(), status.code()) {
        (Some(sig), _) => format!(
            "was killed by {}{}",
            signal_name(sig),
            if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            }
        ),
        (None, Some(code)) => format!("exited with status {code}"),
        (None, None) => "ended".into(),
    }
}

impl Remote {
    /// Start worker process `replica` of module `index` (named `name`),
    /// with the module's own environment variables `env` (`,env=`), and
    /// wait until it connects to a socket in `dir`.
    pub fn spawn(
        dir: &Path,
        index: usize,
        replica: usize,
        name: &str,
        temporary: bool,
        env: &[(String, String)],
    ) -> Result<Remote, Lost> {
        let died = |why: String| Lost::Died(format!("its worker process {why}"));
        let socket: PathBuf = (0u32..)
            .map(|k| dir.join(format!("w{index}-{replica}-{k}.sock")))
            .find(|p| !p.exists())
            .expect("an unused name");
        let listener =
            UnixListener::bind(&socket).map_err(|e| died(format!("has no socket: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| died(format!("has no socket: {e}")))?;
        let exe = std::env::current_exe()
            .map_err(|e| died(format!("cannot start: no executable path: {e}")))?;
        let stdout = stderr_as_stdout().map_err(|e| died(format!("cannot start: {e}")))?;
        let endpoint = Endpoint {
            socket: socket.clone(),
            index,
            temporary,
            replica,
        };
        let mut child = Command::new(exe)
            .args(std::env::args_os().skip(1))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env(WORKER_ENV, endpoint.encode())
            .stdin(Stdio::null())
            .stdout(stdout)
            .process_group(0)
            .spawn()
            .map_err(|e| died(format!("cannot start: {e}")))?;
        let started = Instant::now();
        let stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(died(format!("did not connect: {e}")));
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(died(format!(
                    "{} before it connected",
                    describe_exit(status)
                )));
            }
            if started.elapsed() > CONNECT_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(died(format!(
                    "did not connect within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let _ = std::fs::remove_file(&socket);
        stream
            .set_nonblocking(false)
            .map_err(|e| died(format!("has no socket: {e}")))?;
        let rx = ipc::reader(
            stream
                .try_clone()
                .map_err(|e| died(format!("has no socket: {e}")))?,
        );
        Ok(Remote {
            name: name.to_string(),
            child,
            stream,
            rx,
            phase: "starting (loading the module, C_Initialize, opening the token)".into(),
            dead: None,
        })
    }

    /// Why the worker is gone, if it is.
    pub fn gone(&self) -> Option<&Lost> {
        self.dead.as_ref()
    }

    /// Send `msg` (its phase: `phase`) and wait at most `limit` for the answer.
    pub fn ask(
        &mut self,
        msg: &ToWorker,
        phase: &str,
        limit: Duration,
    ) -> Result<FromWorker, Lost> {
        if let Some(l) = &self.dead {
            return Err(l.clone());
        }
        self.phase = phase.to_string();
        // A failed send means the worker is dying or dead: the wait says how.
        let _ = ipc::send(&self.stream, msg);
        self.answer(limit)
    }

    /// Wait at most `limit` for the worker's next answer (its phase reports
    /// are taken in passing). On Ctrl-C: [`Lost::Interrupted`], the worker
    /// left running; past `limit`: the worker is killed.
    pub fn answer(&mut self, limit: Duration) -> Result<FromWorker, Lost> {
        self.wait(limit, true)
    }

    /// Ask the worker to destroy its keys, finalize the module and exit,
    /// waiting at most `limit` (also after Ctrl-C: this is the way out);
    /// the answer to an earlier request still under way is passed over.
    pub fn finish(&mut self, limit: Duration) -> Result<(), Lost> {
        if let Some(l) = &self.dead {
            return Err(l.clone());
        }
        self.phase = "finishing (destroying its keys, C_Finalize)".into();
        let _ = ipc::send(&self.stream, &ToWorker::Finish);
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.wait(left, false)? {
                FromWorker::Finished => {
                    let _ = self.child.wait();
                    self.dead = Some(Lost::Died("its worker process has finished".into()));
                    return Ok(());
                }
                _ => continue,
            }
        }
    }

    fn wait(&mut self, limit: Duration, interruptible: bool) -> Result<FromWorker, Lost> {
        if let Some(l) = &self.dead {
            return Err(l.clone());
        }
        let deadline = Instant::now() + limit;
        loop {
            if interruptible && crate::measure::interrupt::requested() {
                return Err(Lost::Interrupted);
            }
            let now = Instant::now();
            if now >= deadline {
                let why = format!(
                    "no answer within {} while {}: the worker was killed",
                    fmt_secs(limit),
                    self.phase
                );
                self.kill();
                return Err(self.bury(Lost::Hung(why)));
            }
            match self.rx.recv_timeout(POLL.min(deadline - now)) {
                Ok(Ok(Some(FromWorker::Phase(p)))) => self.phase = p,
                Ok(Ok(Some(m))) => return Ok(m),
                Ok(Ok(None)) | Err(RecvTimeoutError::Disconnected) => {
                    let how = self.reap();
                    let why = format!("its worker process {how} while {}", self.phase);
                    return Err(self.bury(Lost::Died(why)));
                }
                Ok(Err(e)) => {
                    self.kill();
                    let why = format!("its worker process sent {e} while {}", self.phase);
                    return Err(self.bury(Lost::Died(why)));
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// A protocol error: the worker answered something else.
    pub fn unexpected(&mut self, got: &FromWorker) -> Lost {
        self.kill();
        let why = format!(
            "its worker process answered {} while {}",
            variant(got),
            self.phase
        );
        self.bury(Lost::Died(why))
    }

    fn bury(&mut self, l: Lost) -> Lost {
        self.dead = Some(l.clone());
        l
    }

    /// How the exited worker ended (waiting a little for the exit that
    /// follows the end of its stream; killed if it lingers).
    fn reap(&mut self) -> String {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return describe_exit(status),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => {
                    self.kill();
                    return "closed its connection and was killed".into();
                }
            }
        }
    }

    /// Send `msg` without waiting for an answer (the go of a gated round);
    /// a worker that is gone says so at the next wait.
    pub fn tell(&mut self, msg: &ToWorker) {
        if self.dead.is_none() {
            let _ = ipc::send(&self.stream, msg);
        }
    }

    /// Ask a running round to stop (Ctrl-C, as the worker's own handler
    /// takes it).
    pub fn interrupt(&self) {
        if self.dead.is_none()
            && let Ok(pid) = i32::try_from(self.child.id())
        {
            // SAFETY: kill(2) with a child's pid that is not yet reaped
            // (the child is waited for only in `reap`/`kill`).
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
    }

    /// Kill the worker (SIGKILL) and reap it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.dead.is_none() {
            self.dead = Some(Lost::Died("its worker process was stopped".into()));
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if self.dead.is_none() {
            self.kill();
        }
    }
}

/// The name of a message (for a protocol error).
fn variant(m: &FromWorker) -> &'static str {
    match m {
        FromWorker::Phase(_) => "Phase",
        FromWorker::Opened(_) => "Opened",
        FromWorker::Failed { .. } => "Failed",
        FromWorker::Jobs(_) => "Jobs",
        FromWorker::Prepared(_) => "Prepared",
        FromWorker::Ready => "Ready",
        FromWorker::RoundDone { .. } => "RoundDone",
        FromWorker::Results(_) => "Results",
        FromWorker::Keys(_) => "Keys",
        FromWorker::Finished => "Finished",
    }
}

/// `3 s`, `1.5 s`.
pub fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_and_signals_read_as_words() {
        assert_eq!(
            describe_exit(ExitStatus::from_raw(libc::SIGSEGV)),
            "was killed by SIGSEGV (segmentation fault)"
        );
        assert_eq!(
            describe_exit(ExitStatus::from_raw(libc::SIGABRT | 0x80)),
            "was killed by SIGABRT (abort), core dumped"
        );
        assert_eq!(
            describe_exit(ExitStatus::from_raw(3 << 8)),
            "exited with status 3"
        );
        assert_eq!(fmt_secs(Duration::from_secs(3)), "3 s");
        assert_eq!(fmt_secs(Duration::from_millis(1500)), "1.5 s");
    }
}
