//! One store's connection to PostgreSQL: `tokio-postgres` driven on a
//! current-thread runtime the store owns, only inside its own calls (the
//! runtime never starts a thread: no resolver, see `target`, and nothing
//! spawned but the connection's own task), so a host process sees no
//! thread of ours and nothing outlives `C_Finalize` (docs/ARCHITECTURE.md).
//!
//! - Every wait is bounded: connecting and each statement by the store's
//!   timeout (`postgres_timeout`); past it, or when the connection breaks,
//!   the call fails with `CKR_DEVICE_ERROR` and the connection is dropped
//!   (the server rolls back what it had not committed); the next call
//!   connects again, so the module comes back by itself when the database
//!   does.
//! - A forked child never uses its parent's connection or runtime: both
//!   are left alone, not dropped (dropping would send the parent's session
//!   a Terminate and take the parent's sockets out of the shared epoll
//!   instance); the child connects afresh.
//! - A connection found closed by its first use in a call (the server
//!   restarted, a proxy reset it) is made again and that use tried once
//!   more, when nothing of the call has reached the server yet: a read
//!   outside a transaction, or the `BEGIN` of one. So after a restart the
//!   next call succeeds; a connection lost in the middle of a transaction
//!   fails the call (the server rolls it back).
//! - Statements are prepared once per connection.

use super::target::Target;
use crate::error::{Result, err};
use cryptoki_sys::CKR_DEVICE_ERROR;
use std::collections::HashMap;
use std::future::Future;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement};

/// A parameter of a statement.
pub(super) type Param<'a> = &'a (dyn ToSql + Sync);

pub(super) struct Db {
    target: std::sync::Arc<Target>,
    runtime: Option<tokio::runtime::Runtime>,
    client: Option<Client>,
    statements: HashMap<&'static str, Statement>,
    pid: u32,
    /// Inside `BEGIN` … `COMMIT` (a failure drops the connection, which
    /// rolls the transaction back).
    in_transaction: bool,
    /// The connection of the transaction under way is gone: every later
    /// statement of it fails, and none runs on a new connection (it
    /// would run outside the transaction, each statement committed on its
    /// own, without the token row's lock).
    transaction_lost: bool,
    /// The last failure was a lost connection (see `again`).
    lost: bool,
    /// The notification channel this connection listens on, if any
    /// (`listen`), and the notifications heard on it so far, counted by
    /// the connection's task; `connections` counts the connections made,
    /// so a count from an earlier one is never taken for this one's.
    listen: Option<String>,
    heard: std::sync::Arc<std::sync::atomic::AtomicU64>,
    connections: u64,
    /// Since when connecting fails, and when that was last logged (one
    /// line per outage and then one every [`OUTAGE_LOG_EVERY`], not one
    /// per call).
    outage: Option<(std::time::Instant, std::time::Instant)>,
}

/// How often a connection that keeps failing is logged again.
const OUTAGE_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

impl Drop for Db {
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            self.abandon();
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| {
            crate::log::error(format_args!("PostgreSQL storage: no I/O runtime: {e}"));
            err(CKR_DEVICE_ERROR)
        })
}

impl Db {
    /// A connection to `target` (made now, so a bad target fails here).
    pub(super) fn connect(target: std::sync::Arc<Target>) -> Result<Db> {
        let mut db = Db {
            target,
            runtime: Some(runtime()?),
            client: None,
            statements: HashMap::new(),
            pid: std::process::id(),
            in_transaction: false,
            transaction_lost: false,
            lost: false,
            listen: None,
            heard: Default::default(),
            connections: 0,
            outage: None,
        };
        db.live()?;
        Ok(db)
    }

    /// Where it connects, for log lines.
    pub(super) fn shown(&self) -> &str {
        &self.target.shown
    }

    /// Leaks the connection and runtime of another process (the parent of
    /// a fork): see the module documentation.
    fn abandon(&mut self) {
        std::mem::forget(self.client.take());
        std::mem::forget(self.runtime.take());
        std::mem::forget(std::mem::take(&mut self.statements));
    }

    /// Drops the connection after a failure or a timeout (inside a
    /// transaction, the rest of it fails: `transaction_lost`).
    fn disconnect(&mut self) {
        self.client = None;
        self.statements.clear();
        self.transaction_lost |= self.in_transaction;
    }

    /// The outcome of a wait (`wait`): a failure is logged, and drops the
    /// connection if it is broken, timed out, or inside a transaction.
    fn outcome<T>(&mut self, what: &str, r: Waited<T>) -> Result<T> {
        self.lost = false;
        let quiet = what == "connect" && !self.note_connect(r.as_ref().is_ok_and(|r| r.is_ok()));
        match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                let broken = e.is_closed()
                    || self.client.as_ref().is_none_or(Client::is_closed)
                    || ended_the_session(&e);
                self.lost = broken;
                if !quiet {
                    crate::log::error(format_args!(
                        "PostgreSQL {}: {what}: {}{}",
                        self.target.shown,
                        describe(&e),
                        if broken { " (connection lost)" } else { "" }
                    ));
                }
                if broken || self.in_transaction {
                    self.disconnect();
                }
                Err(err(CKR_DEVICE_ERROR))
            }
            Err(_) => {
                crate::log::error(format_args!(
                    "PostgreSQL {}: {what}: no answer within {:?}; the connection is dropped",
                    self.target.shown, self.target.timeout
                ));
                self.disconnect();
                Err(err(CKR_DEVICE_ERROR))
            }
        }
    }

    /// Keeps the outage log: the first failed connection of an outage is
    /// logged (true: log this failure), then one line every
    /// [`OUTAGE_LOG_EVERY`], and the end of it.
    fn note_connect(&mut self, ok: bool) -> bool {
        let now = std::time::Instant::now();
        match (ok, self.outage) {
            (true, Some((since, _))) => {
                crate::log::info(format_args!(
                    "PostgreSQL {}: connected again after {:.1} s",
                    self.target.shown,
                    since.elapsed().as_secs_f64()
                ));
                self.outage = None;
                false
            }
            (false, None) => {
                self.outage = Some((now, now));
                true
            }
            (false, Some((since, logged))) if logged.elapsed() >= OUTAGE_LOG_EVERY => {
                crate::log::error(format_args!(
                    "PostgreSQL {}: still unreachable after {:.0} s",
                    self.target.shown,
                    since.elapsed().as_secs_f64()
                ));
                self.outage = Some((since, now));
                false
            }
            _ => false,
        }
    }

    /// The connection, made again if it was lost (or this is a forked
    /// child), with its runtime.
    fn live(&mut self) -> Result<(&tokio::runtime::Runtime, &Client)> {
        if self.pid != std::process::id() {
            self.abandon();
            self.runtime = Some(runtime()?);
            self.pid = std::process::id();
        }
        if self.client.as_ref().is_some_and(Client::is_closed) {
            self.disconnect();
        }
        if self.transaction_lost {
            return Err(err(CKR_DEVICE_ERROR));
        }
        if self.client.is_none() {
            let rt = self.runtime.as_ref().ok_or(err(CKR_DEVICE_ERROR))?;
            let (target, timeout) = (&self.target, self.target.timeout);
            let heard = self.heard.clone();
            #[cfg(feature = "aws-lc")]
            let r = match &target.tls {
                Some(tls) => start(
                    rt,
                    timeout,
                    &target.config,
                    tokio_postgres_rustls::MakeRustlsConnect::new(tls.clone()),
                    heard,
                ),
                None => start(rt, timeout, &target.config, NoTls, heard),
            };
            #[cfg(not(feature = "aws-lc"))]
            let r = start(rt, timeout, &target.config, NoTls, heard);
            self.client = Some(self.outcome("connect", r)?);
            self.connections += 1;
            if let Some(channel) = self.listen.clone() {
                // Before any look on this connection: every commit after
                // it notifies, every commit before it is in what it reads.
                let (rt, client) = (self.runtime.as_ref(), self.client.as_ref());
                let (Some(rt), Some(client)) = (rt, client) else {
                    return Err(err(CKR_DEVICE_ERROR));
                };
                let r = wait(
                    rt,
                    timeout,
                    client.batch_execute(&format!("LISTEN {channel}")),
                );
                self.outcome("listen", r)?;
            }
        }
        match (&self.runtime, &self.client) {
            (Some(rt), Some(c)) => Ok((rt, c)),
            _ => Err(err(CKR_DEVICE_ERROR)),
        }
    }

    /// `sql`, prepared once per connection.
    fn statement(&mut self, sql: &'static str) -> Result<Statement> {
        // First the connection: one found closed is made again, and the
        // statements prepared on the old one are forgotten with it.
        self.live()?;
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let timeout = self.target.timeout;
        let (rt, client) = self.live()?;
        let r = wait(rt, timeout, client.prepare(sql));
        let s = self.outcome("prepare", r)?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }

    /// Runs `op` once more on a new connection if it failed because the
    /// connection was lost, outside a transaction (module documentation).
    fn again<T>(&mut self, mut op: impl FnMut(&mut Db) -> Result<T>) -> Result<T> {
        let first = op(self);
        if first.is_err() && self.lost && !self.in_transaction {
            crate::log::debug(format_args!(
                "PostgreSQL {}: connecting again",
                self.target.shown
            ));
            self.disconnect();
            return op(self);
        }
        first
    }

    /// Runs a query.
    pub(super) fn query(&mut self, sql: &'static str, params: &[Param<'_>]) -> Result<Vec<Row>> {
        self.again(|db| {
            let stmt = db.statement(sql)?;
            let timeout = db.target.timeout;
            let (rt, client) = db.live()?;
            let r = wait(rt, timeout, client.query(&stmt, params));
            db.outcome("query", r)
        })
    }

    /// Runs a query returning at most one row.
    pub(super) fn query_opt(
        &mut self,
        sql: &'static str,
        params: &[Param<'_>],
    ) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Runs a statement; the number of rows it changed.
    pub(super) fn execute(&mut self, sql: &'static str, params: &[Param<'_>]) -> Result<u64> {
        let stmt = self.statement(sql)?;
        let timeout = self.target.timeout;
        let (rt, client) = self.live()?;
        let r = wait(rt, timeout, client.execute(&stmt, params));
        self.outcome("execute", r)
    }

    /// Runs statements without parameters (DDL, transaction control).
    pub(super) fn batch(&mut self, sql: &str) -> Result<()> {
        self.again(|db| {
            let timeout = db.target.timeout;
            let (rt, client) = db.live()?;
            let r = wait(rt, timeout, client.batch_execute(sql));
            db.outcome("batch", r)
        })
    }

    /// Listens on `channel` from now on, on this connection and every one
    /// made again (see `live`); takes effect at the next connection.
    pub(super) fn listen(&mut self, channel: &str) {
        self.listen = Some(channel.to_string());
        self.disconnect();
    }

    /// Lets the connection's task take in what the server has sent
    /// (notifications), without a round trip, and says where the
    /// notifications stand; `None` when there is no live connection (a
    /// look must then read).
    pub(super) fn heard(&mut self) -> Option<Heard> {
        if self.pid != std::process::id() || self.in_transaction {
            return None;
        }
        let (Some(rt), Some(client)) = (&self.runtime, &self.client) else {
            return None;
        };
        // Each yield lets the runtime poll its sockets without blocking
        // and run the tasks that became ready (the connection's).
        rt.block_on(async {
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
        });
        if client.is_closed() {
            return None;
        }
        Some(Heard(
            self.connections,
            self.heard.load(std::sync::atomic::Ordering::SeqCst),
        ))
    }

    /// Runs `body` in one transaction (`begin` starts it): committed if it
    /// returns `Ok`, rolled back otherwise. A connection lost before the
    /// commit was acknowledged leaves the outcome to the server (the
    /// transaction commits whole or not at all); the call fails.
    pub(super) fn transaction<T>(
        &mut self,
        begin: &'static str,
        body: impl FnOnce(&mut Db) -> Result<T>,
    ) -> Result<T> {
        self.transaction_notifying(begin, None, body)
    }

    /// [`Self::transaction`] that, when it commits, notifies `channel`'s
    /// listeners (`NOTIFY`, sent with the `COMMIT`: no round trip more;
    /// PostgreSQL delivers it at the commit, and never for a rollback).
    pub(super) fn transaction_notifying<T>(
        &mut self,
        begin: &'static str,
        channel: Option<&str>,
        body: impl FnOnce(&mut Db) -> Result<T>,
    ) -> Result<T> {
        self.batch(begin)?;
        self.in_transaction = true;
        let out = body(self);
        let end = match (&out, channel) {
            (Ok(_), Some(channel)) => format!("NOTIFY {channel}; COMMIT"),
            (Ok(_), None) => "COMMIT".into(),
            (Err(_), _) => "ROLLBACK".into(),
        };
        // Fails at once when the transaction's connection is gone (`live`).
        let ended = self.batch(&end);
        self.in_transaction = false;
        self.transaction_lost = false;
        let v = out?;
        ended?;
        Ok(v)
    }
}

/// What a bounded wait gives: the client's result, or the timeout.
/// Where the notifications of [`Db::listen`] stood: the connection, and
/// how many had been heard on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Heard(u64, u64);

type Waited<T> =
    std::result::Result<std::result::Result<T, tokio_postgres::Error>, tokio::time::error::Elapsed>;

/// Connects with `tls` on `rt`, for at most `timeout`, and leaves the
/// connection's task on the runtime (it runs inside the store's calls and
/// ends with the connection; its error is seen by the next call).
fn start<T>(
    rt: &tokio::runtime::Runtime,
    timeout: std::time::Duration,
    config: &tokio_postgres::Config,
    tls: T,
    heard: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> Waited<Client>
where
    T: tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket>,
    T::Stream: Send + 'static,
{
    rt.block_on(async {
        tokio::time::timeout(timeout, async {
            let (client, mut connection) = config.connect(tls).await?;
            // The connection's task (run whenever this runtime is driven):
            // moves the connection's traffic, and counts notifications.
            tokio::spawn(async move {
                use tokio_postgres::AsyncMessage;
                while let Some(Ok(message)) =
                    std::future::poll_fn(|cx| connection.poll_message(cx)).await
                {
                    if let AsyncMessage::Notification(_) = message {
                        heard.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            });
            Ok(client)
        })
        .await
    })
}

/// Runs `fut` on `rt`, for at most `timeout`.
fn wait<T>(
    rt: &tokio::runtime::Runtime,
    timeout: std::time::Duration,
    fut: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
) -> Waited<T> {
    rt.block_on(async { tokio::time::timeout(timeout, fut).await })
}

/// A server error's message and SQLSTATE, or the client's error.
/// An error the server sent as it ended the session: a backend terminated
/// (`pg_terminate_backend`, a fast shutdown: SQLSTATE class 57P), an idle
/// session timed out (`idle_session_timeout`, 57P05;
/// `idle_in_transaction_session_timeout`, 25P03), or any `FATAL`. It
/// arrives with the next statement, which never ran: the connection is
/// lost, as when the socket closes.
fn ended_the_session(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        let code = db.code().code();
        code.starts_with("57P")
            || code == "25P03"
            || matches!(
                db.parsed_severity(),
                Some(
                    tokio_postgres::error::Severity::Fatal | tokio_postgres::error::Severity::Panic
                )
            )
    })
}

fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}
