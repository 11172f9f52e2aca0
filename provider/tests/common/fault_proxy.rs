//! A fault proxy between the module and a PostgreSQL server, for tests:
//! it forwards TCP connections and, on command, adds latency, stalls
//! traffic (connections stay open, nothing moves), resets every
//! connection, or cuts one at a chosen point of a transaction. It reads
//! the client's side of the wire protocol (PostgreSQL protocol 3.0,
//! "Message Formats": the startup message untyped, every later one a type
//! byte and a length), so cuts fall on message boundaries: before a
//! transaction's first statement, before its `COMMIT`, or after the
//! `COMMIT` reached the server but before its reply reaches the client.
//! The connection strings through it must say `sslmode=disable` (the proxy
//! reads the messages).
//!
//! Every fault that fired is counted ([`FaultProxy::fired`]), so a test
//! can tell a fault that happened from one that never did.

#![allow(dead_code)] // each test binary uses a part

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does to traffic from now on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// Forward as it comes.
    None,
    /// Hold every message this long, both ways.
    Latency(Duration),
    /// Move nothing until told otherwise (connections stay open).
    Stall,
    /// In the next transaction that gets this far, the `n`-th client
    /// message after `BEGIN` (n ≥ 1; a statement is a few: bind, execute,
    /// sync) never leaves: the connection is reset there (once).
    CutInTransaction(u32),
    /// The next `COMMIT` never reaches the server: the connection is reset
    /// instead (once).
    CutBeforeCommit,
    /// The next `COMMIT` reaches the server, its reply never reaches the
    /// client: the connection is reset when that reply comes, so the
    /// server has committed (once).
    CutAfterCommit,
    /// Reset a connection at a client message with this probability
    /// (in millionths), anywhere: in a transaction or between them.
    Random(u32),
}

#[derive(Default)]
struct Shared {
    fault: Mutex<Option<Fault>>,
    fired: AtomicU64,
    conns: Mutex<Vec<Arc<Link>>>,
    seed: AtomicU64,
    stop: AtomicBool,
}

/// One proxied connection: both sockets, and whether it is cut.
struct Link {
    client: TcpStream,
    server: TcpStream,
    cut: AtomicBool,
    /// Server replies are dropped (after a forwarded COMMIT).
    deaf: AtomicBool,
}

impl Link {
    /// Resets both sides (linger 0: an RST, as a dropped route gives).
    fn cut(&self) {
        if self.cut.swap(true, Ordering::SeqCst) {
            return;
        }
        for s in [&self.client, &self.server] {
            let _ = s.set_linger_zero();
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

trait LingerZero {
    fn set_linger_zero(&self) -> std::io::Result<()>;
}

impl LingerZero for TcpStream {
    fn set_linger_zero(&self) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let linger = [1i32, 0i32]; // struct linger { l_onoff, l_linger }
        // SAFETY: setsockopt(2) on this socket's open descriptor, reading
        // the 8-byte struct linger on this stack for the call.
        let rc = unsafe {
            setsockopt(
                self.as_raw_fd(),
                1,  // SOL_SOCKET
                13, // SO_LINGER
                linger.as_ptr().cast(),
                8,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

unsafe extern "C" {
    fn setsockopt(fd: i32, level: i32, name: i32, value: *const u8, len: u32) -> i32;
}

/// A running proxy; it stops (and resets its connections) when dropped.
pub struct FaultProxy {
    port: u16,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// Listens on a free port of 127.0.0.1 and forwards to `upstream`
    /// (`host:port`).
    pub fn start(upstream: &str) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        shared.seed.store(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
        let upstream = upstream.to_string();
        let sh = shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if sh.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue; // the client sees its connection closed
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let link = Arc::new(Link {
                    client,
                    server,
                    cut: AtomicBool::new(false),
                    deaf: AtomicBool::new(false),
                });
                sh.conns.lock().unwrap().push(link.clone());
                let (a, b) = (sh.clone(), link.clone());
                std::thread::spawn(move || client_to_server(&a, &b));
                let (a, b) = (sh.clone(), link);
                std::thread::spawn(move || server_to_client(&a, &b));
            }
        });
        FaultProxy { port, shared }
    }

    /// A proxy in front of the server of `uri` (`postgresql://`, with a
    /// host and port).
    pub fn in_front_of(uri: &str) -> FaultProxy {
        let rest = uri.split_once("://").unwrap().1;
        let at = rest.find('@').map_or(0, |i| i + 1);
        let end = rest[at..].find(['/', '?']).map_or(rest.len(), |i| at + i);
        Self::start(&rest[at..end])
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `uri` (a `postgresql://` URI) with its host and port replaced by
    /// the proxy's, and `sslmode=disable`.
    pub fn uri(&self, uri: &str) -> String {
        let (scheme, rest) = uri.split_once("://").unwrap();
        let at = rest.find('@').map_or(0, |i| i + 1);
        let end = rest[at..].find(['/', '?']).map_or(rest.len(), |i| at + i);
        let rewritten = format!(
            "{scheme}://{}127.0.0.1:{}{}",
            &rest[..at],
            self.port,
            &rest[end..]
        );
        let sep = if rewritten.contains('?') { '&' } else { '?' };
        format!("{rewritten}{sep}sslmode=disable")
    }

    pub fn set(&self, fault: Fault) {
        *self.shared.fault.lock().unwrap() = Some(fault);
    }

    /// Faults that fired so far.
    pub fn fired(&self) -> u64 {
        self.shared.fired.load(Ordering::SeqCst)
    }

    /// Resets every open connection now; returns how many.
    pub fn reset_all(&self) -> usize {
        let conns = std::mem::take(&mut *self.shared.conns.lock().unwrap());
        let n = conns
            .iter()
            .filter(|c| !c.cut.load(Ordering::SeqCst))
            .count();
        for c in &conns {
            c.cut();
        }
        self.shared.fired.fetch_add(n as u64, Ordering::SeqCst);
        n
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wakes accept
        for c in self.shared.conns.lock().unwrap().drain(..) {
            c.cut();
        }
    }
}

fn fault(sh: &Shared) -> Fault {
    sh.fault.lock().unwrap().unwrap_or(Fault::None)
}

/// Waits out a stall and the latency; false when the link was cut.
fn delay(sh: &Shared, link: &Link) -> bool {
    loop {
        if link.cut.load(Ordering::SeqCst) || sh.stop.load(Ordering::SeqCst) {
            return false;
        }
        match fault(sh) {
            Fault::Stall => std::thread::sleep(Duration::from_millis(5)),
            Fault::Latency(d) => {
                std::thread::sleep(d);
                return !link.cut.load(Ordering::SeqCst);
            }
            _ => return true,
        }
    }
}

/// Fires a one-shot fault: true when this caller took it.
fn take(sh: &Shared, which: Fault) -> bool {
    let mut f = sh.fault.lock().unwrap();
    if *f == Some(which) {
        *f = Some(Fault::None);
        sh.fired.fetch_add(1, Ordering::SeqCst);
        true
    } else {
        false
    }
}

/// A uniform draw below 1,000,000 (xorshift over a shared state).
fn draw(sh: &Shared) -> u32 {
    let mut x = sh.seed.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    sh.seed.store(x, Ordering::Relaxed);
    (x % 1_000_000) as u32
}

/// Reads one whole client message: the untyped startup (or SSL/GSS
/// request) first, typed ones after. `None` at the end of the stream.
fn read_message(from: &mut TcpStream, typed: bool) -> Option<Vec<u8>> {
    let head = if typed { 5 } else { 4 };
    let mut msg = vec![0u8; head];
    from.read_exact(&mut msg).ok()?;
    let len = u32::from_be_bytes(msg[head - 4..head].try_into().unwrap()) as usize;
    if !(4..=(1 << 30)).contains(&len) {
        return None;
    }
    msg.resize(head - 4 + len, 0);
    from.read_exact(&mut msg[head..]).ok()?;
    Some(msg)
}

/// A simple query (`Q`) one of whose statements starts with `word` (the
/// module sends `NOTIFY …; COMMIT` as one query).
fn is_query(msg: &[u8], word: &str) -> bool {
    if msg.first() != Some(&b'Q') || msg.len() <= 5 {
        return false;
    }
    msg[5..].split(|b| *b == b';').any(|statement| {
        let t = statement.trim_ascii_start();
        t.get(..word.len())
            .is_some_and(|t| t.eq_ignore_ascii_case(word.as_bytes()))
    })
}

fn client_to_server(sh: &Shared, link: &Link) {
    let (Ok(mut from), Ok(mut to)) = (link.client.try_clone(), link.server.try_clone()) else {
        link.cut();
        return;
    };
    let mut typed = false;
    let mut in_transaction = false;
    let mut since_begin = 0u32;
    while let Some(msg) = read_message(&mut from, typed) {
        // An SSL or GSS request (8 bytes, codes 80877103/80877104) is
        // answered with one byte and followed by the startup message.
        let request = !typed && msg.len() == 8 && msg[4..6] == [0x04, 0xd2];
        typed = typed || !request;
        if !delay(sh, link) {
            break;
        }
        let begin = is_query(&msg, "BEGIN");
        let commit = is_query(&msg, "COMMIT");
        if in_transaction && !commit {
            since_begin += 1;
            if let Fault::CutInTransaction(n) = fault(sh)
                && since_begin >= n
                && take(sh, Fault::CutInTransaction(n))
            {
                break;
            }
        }
        if commit && take(sh, Fault::CutBeforeCommit) {
            break;
        }
        if let Fault::Random(p) = fault(sh)
            && draw(sh) < p
        {
            sh.fired.fetch_add(1, Ordering::SeqCst);
            break;
        }
        if to.write_all(&msg).is_err() {
            break;
        }
        if commit && take(sh, Fault::CutAfterCommit) {
            // The reply cuts the link (`server_to_client`).
            link.deaf.store(true, Ordering::SeqCst);
        }
        if begin {
            since_begin = 0;
        }
        in_transaction = (in_transaction || begin) && !commit && !is_query(&msg, "ROLLBACK");
    }
    link.cut();
}

fn server_to_client(sh: &Shared, link: &Link) {
    let (Ok(mut from), Ok(mut to)) = (link.server.try_clone(), link.client.try_clone()) else {
        link.cut();
        return;
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !delay(sh, link) {
            break;
        }
        if link.deaf.load(Ordering::SeqCst) {
            break; // the COMMIT's reply: the server has committed
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    link.cut();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_are_found_in_multi_statement_queries() {
        let q = |text: &str| {
            let mut m = vec![b'Q', 0, 0, 0, 0];
            m.extend_from_slice(text.as_bytes());
            m.push(0);
            m
        };
        assert!(is_query(&q("COMMIT"), "COMMIT"));
        assert!(is_query(&q("NOTIFY dalek_t_1; COMMIT"), "COMMIT"));
        assert!(!is_query(&q("NOTIFY dalek_t_1"), "COMMIT"));
        assert!(is_query(
            &q("BEGIN ISOLATION LEVEL REPEATABLE READ"),
            "BEGIN"
        ));
    }

    #[test]
    fn uris_are_pointed_at_the_proxy() {
        let p = FaultProxy {
            port: 7,
            shared: Arc::new(Shared::default()),
        };
        assert_eq!(
            p.uri("postgresql://dalek@127.0.0.1:5432/tokens?options=x"),
            "postgresql://dalek@127.0.0.1:7/tokens?options=x&sslmode=disable"
        );
        assert_eq!(
            p.uri("postgresql://h:1/db"),
            "postgresql://127.0.0.1:7/db?sslmode=disable"
        );
    }
}
