//! The messages between `hsm-bench run`, which schedules the suite and
//! writes the results but never loads a module, and each module's worker
//! process (`commands/run_worker.rs`): one JSON document per line over a
//! Unix socket. Nothing crosses it inside a timed region: a round is one
//! request and one answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{Receiver, channel};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::measure::job::JobInfo;
use crate::report::result::BenchResult;
use crate::token::info::ModuleMeta;

/// Longest message accepted from the other side. A worker shares its
/// address space with a module that may scribble over it: what it sends is
/// bounded and parsed, never trusted (`--raw-samples` of a long run is the
/// largest legitimate message, ~20 bytes a sample).
pub const MAX_MESSAGE: u64 = 1 << 30;

/// The environment variable that makes `hsm-bench run` a module's worker:
/// `SOCKET\tINDEX\tTEMPORARY\tREPLICA` (the scheduler's socket, the
/// module's index on the command line, `1` when the worker is to make the
/// temporary token the scheduler prepared, and which of the module's
/// processes it is, 0 for the first). Internal: set only by the scheduler.
/// The worker's first message on the socket is [`ToWorker::Join`].
pub const WORKER_ENV: &str = "HSM_BENCH_WORKER";

/// Where a worker reports to and which module it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The scheduler's socket.
    pub socket: std::path::PathBuf,
    /// Index of the module on the command line.
    pub index: usize,
    /// The scheduler made a temporary token for it.
    pub temporary: bool,
    /// Which of the module's worker processes this is (`--processes`), 0
    /// for the first.
    pub replica: usize,
}

impl Endpoint {
    /// The value of [`WORKER_ENV`].
    pub fn encode(&self) -> std::ffi::OsString {
        let mut v = self.socket.clone().into_os_string();
        v.push(format!(
            "\t{}\t{}\t{}",
            self.index,
            u8::from(self.temporary),
            self.replica
        ));
        v
    }

    /// Parse [`WORKER_ENV`]'s value.
    pub fn decode(v: &std::ffi::OsStr) -> Option<Endpoint> {
        use std::os::unix::ffi::OsStrExt;
        let mut parts = v.as_bytes().rsplitn(4, |&b| b == b'\t');
        let replica = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
        let temporary = match parts.next()? {
            b"1" => true,
            b"0" => false,
            _ => return None,
        };
        let index = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
        let socket = std::ffi::OsStr::from_bytes(parts.next()?).into();
        Some(Endpoint {
            socket,
            index,
            temporary,
            replica,
        })
    }

    /// This process's endpoint, when it is a worker.
    pub fn from_env() -> Option<Endpoint> {
        Endpoint::decode(&std::env::var_os(WORKER_ENV)?)
    }
}

/// The scheduler's requests.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToWorker {
    /// The ops of the suite (ids, in order) and the keys' description; the
    /// worker answers with its job list.
    Ops {
        /// Op ids.
        ids: Vec<String>,
        /// Recorded in every result.
        key: String,
    },
    /// Prepare job `job` (keys, sessions, inputs).
    Prepare {
        /// Index into the job list.
        job: usize,
    },
    /// The first message of every worker, before it opens its module: the
    /// temporary token the module's first process made (label and PIN), to
    /// log in to (the module's other processes under `--processes`, and a
    /// first one restarted), or none (open the module as always).
    Join(Option<Share>),
    /// Run a round of the prepared job.
    Round {
        /// Round index.
        round: u32,
        /// Say [`FromWorker::Ready`] when warm and wait for [`ToWorker::Go`]
        /// before measuring (several processes measure together).
        gate: bool,
        /// The op's time left on this module, milliseconds.
        remaining_ms: Option<u64>,
        /// Progress bar label; no bar when `None`.
        bar: Option<String>,
    },
    /// Start measuring (every process of the module is warm).
    Go,
    /// The job's results; its workers go.
    EndJob,
    /// How the keys were made.
    Describe,
    /// Destroy the keys, finalize the module, exit.
    Finish,
}

/// What the worker found when it opened its module.
#[derive(Debug, Serialize, Deserialize)]
pub struct Opened {
    /// For the report's metadata.
    pub meta: ModuleMeta,
    /// The ops this module's key or mechanism allows (`--key-label`,
    /// `--mechanism`), or why it allows none; empty otherwise.
    pub ops: Result<Vec<String>, String>,
    /// The existing key's type (`--key-label`).
    pub key_kind: Option<String>,
    /// Of `ops`, those the token can run.
    pub supported: Vec<String>,
    /// The temporary token this worker made, for the module's other
    /// processes (`--processes`).
    pub share: Option<Share>,
}

/// A token that a module's other worker processes log in to.
#[derive(Clone, Serialize, Deserialize)]
pub struct Share {
    /// Its label.
    pub label: String,
    /// The user PIN (random, for a temporary token; never printed).
    pub pin: String,
}

impl std::fmt::Debug for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Share")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// How a module's keys were made.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct KeysInfo {
    /// Labels of token-object keys.
    pub token_key_labels: Vec<String>,
    /// Whether session-object keys were made.
    pub made_session_keys: bool,
    /// Role-separated wrapping keys made where the usual ones were refused.
    pub role_separated: Vec<String>,
}

/// The worker's answers.
#[derive(Debug, Serialize, Deserialize)]
pub enum FromWorker {
    /// What the worker is about to do (named if it never answers).
    Phase(String),
    /// The module is open and logged in.
    Opened(Box<Opened>),
    /// The module could not be opened (message and exit code of the error).
    Failed {
        /// One line.
        message: String,
        /// The exit code `run` would have.
        code: i32,
    },
    /// The job list.
    Jobs(Vec<JobInfo>),
    /// Prepared; or the result saying why the job cannot run.
    Prepared(Option<Box<BenchResult>>),
    /// Warm, waiting for [`ToWorker::Go`] (a gated round).
    Ready,
    /// A round ran.
    RoundDone {
        /// Stopped at the op's time limit.
        cut_short: bool,
        /// Later rounds are not worth running.
        skip_rest: bool,
        /// Results of the rounds so far.
        results: Vec<BenchResult>,
    },
    /// The job's results.
    Results(Vec<BenchResult>),
    /// Answer to [`ToWorker::Describe`].
    Keys(KeysInfo),
    /// Keys destroyed, module finalized.
    Finished,
}

/// Send one message (a line of JSON).
pub fn send<T: Serialize>(mut stream: &UnixStream, msg: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)
}

/// Read one message; `Ok(None)` at the end of the stream.
pub fn receive<T: DeserializeOwned>(reader: &mut impl BufRead) -> std::io::Result<Option<T>> {
    let mut line = Vec::new();
    let n = reader.take(MAX_MESSAGE).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(std::io::Error::other(if n as u64 >= MAX_MESSAGE {
            "a message longer than 1 GiB"
        } else {
            "a message cut off"
        }));
    }
    serde_json::from_slice(&line)
        .map(Some)
        .map_err(|e| std::io::Error::other(format!("a malformed message ({e})")))
}

/// A message, the end of the stream, or why the stream is unreadable.
pub type Incoming<T> = Result<Option<T>, String>;

/// Read messages on a thread of their own, so the reader can wait with a
/// deadline and look at Ctrl-C meanwhile. The channel ends after the end of
/// the stream or the first unreadable message.
pub fn reader<T: DeserializeOwned + Send + 'static>(stream: UnixStream) -> Receiver<Incoming<T>> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stream);
        loop {
            let m = receive(&mut r).map_err(|e| e.to_string());
            let end = !matches!(m, Ok(Some(_)));
            if tx.send(m).is_err() || end {
                return;
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_cross_the_socket_and_the_end_is_seen() {
        let (a, b) = UnixStream::pair().unwrap();
        send(&a, &ToWorker::Prepare { job: 7 }).unwrap();
        send(&a, &FromWorker::Phase("C_Finalize".into())).unwrap();
        drop(a);
        let mut r = BufReader::new(b);
        assert!(matches!(
            receive::<ToWorker>(&mut r).unwrap(),
            Some(ToWorker::Prepare { job: 7 })
        ));
        assert!(matches!(
            receive::<FromWorker>(&mut r).unwrap(),
            Some(FromWorker::Phase(p)) if p == "C_Finalize"
        ));
        assert!(receive::<FromWorker>(&mut r).unwrap().is_none());
    }

    #[test]
    fn endpoints_round_trip_through_the_environment_value() {
        let e = Endpoint {
            socket: "/tmp/x\ty/w0.sock".into(),
            index: 3,
            temporary: true,
            replica: 2,
        };
        assert_eq!(Endpoint::decode(&e.encode()), Some(e));
        assert_eq!(Endpoint::decode("nonsense".as_ref()), None);
    }

    #[test]
    fn garbage_and_cut_off_messages_are_errors_not_panics() {
        for bytes in [
            &b"{\"Prepare\":{\"job\":-1}}\n"[..],
            b"\xff\xfe\n",
            b"{\"Finished\"",
        ] {
            let (mut a, b) = UnixStream::pair().unwrap();
            a.write_all(bytes).unwrap();
            drop(a);
            let mut r = BufReader::new(b);
            assert!(receive::<ToWorker>(&mut r).is_err(), "{bytes:?}");
        }
    }
}
