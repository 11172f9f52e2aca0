//! Where the PostgreSQL store connects: the configured connection string
//! (a libpq URI or `key=value` pairs, parsed by `tokio-postgres`) completed
//! as libpq completes it (PostgreSQL 15 docs, §34.1.2 "Parameter Key
//! Words", §34.15 "Environment Variables", §34.16 "The Password File"):
//!
//! - unset parameters from `PGHOST`, `PGPORT`, `PGDATABASE`, `PGUSER`,
//!   `PGPASSWORD`, `PGAPPNAME`; the host defaults to the Unix socket
//!   directory `/var/run/postgresql` when it exists (Debian's), else
//!   `localhost`; the user to the process's user, the database to the
//!   user's name;
//! - a password the string does not give from `PGPASSWORD`, else from the
//!   password file: `postgres_password_file`, else `PGPASSFILE`, else
//!   `~/.pgpass`, whose lines are `host:port:database:user:password` with
//!   `*` wildcards and `\:` / `\\` escapes; as libpq, a file readable by
//!   its group or others is ignored, with a warning;
//! - a host name is resolved here, on the calling thread (`hostaddr`), so
//!   the client never starts a resolver thread (`db`);
//! - `sslmode` (all six of libpq's; default `prefer`, or `PGSSLMODE`) and
//!   `sslrootcert` (or `PGSSLROOTCERT`) are taken out of the string and
//!   given to `tls`; client certificates (`sslcert`, `sslkey`) are not
//!   supported yet and refused, as is any other `ssl…` parameter. The
//!   pure-Rust build has no TLS: it refuses `require`, `verify-ca` and
//!   `verify-full`, and connects plain for the others.
//!
//! The connection string is never logged: it may hold a password.

use super::sslmode::SslMode;
use crate::config::PostgresSettings;
use crate::error::{Result, err};
use cryptoki_sys::CKR_GENERAL_ERROR;
use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use tokio_postgres::config::Host;

/// The client configuration, complete.
pub(super) struct Target {
    pub(super) config: tokio_postgres::Config,
    pub(super) timeout: std::time::Duration,
    /// `user@host:port/dbname`, for log lines (no password).
    pub(super) shown: String,
    /// TLS (`None`: plain).
    #[cfg(feature = "aws-lc")]
    pub(super) tls: Option<rustls::ClientConfig>,
}

/// The TLS parameters taken out of a connection string.
#[derive(Debug, Default, PartialEq, Eq)]
struct TlsParams {
    mode: Option<String>,
    root_cert: Option<String>,
}

/// `conninfo` without its `ssl…` parameters, and those (see the module
/// documentation); an `ssl…` parameter this store does not support is
/// refused.
fn take_tls_params(conninfo: &str) -> Result<(String, TlsParams)> {
    let mut tls = TlsParams::default();
    let mut take = |key: &str, value: String| -> Result<bool> {
        match key {
            "sslmode" => tls.mode = Some(value),
            "sslrootcert" => tls.root_cert = Some(value),
            k if k.starts_with("ssl") || k == "requiressl" => {
                return Err(refuse(format_args!(
                    "{k} is not supported (TLS to the database: sslmode and sslrootcert)"
                )));
            }
            _ => return Ok(false),
        }
        Ok(true)
    };
    let lower = conninfo.trim_start().to_ascii_lowercase();
    if lower.starts_with("postgresql://") || lower.starts_with("postgres://") {
        let Some((head, query)) = conninfo.split_once('?') else {
            return Ok((conninfo.to_string(), tls));
        };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if !take(k, percent_decode(v))? {
                kept.push(pair);
            }
        }
        let rest = if kept.is_empty() {
            head.to_string()
        } else {
            format!("{head}?{}", kept.join("&"))
        };
        return Ok((rest, tls));
    }
    let mut kept = Vec::new();
    for (k, v) in key_values(conninfo)? {
        if !take(&k, v.clone())? {
            kept.push(format!(
                "{k}='{}'",
                v.replace('\\', "\\\\").replace('\'', "\\'")
            ));
        }
    }
    Ok((kept.join(" "), tls))
}

/// `%XX` escapes of a URI query value decoded.
fn percent_decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `key = value` pairs of a libpq key/value string (values may be
/// single-quoted; `\` escapes the next character).
fn key_values(s: &str) -> Result<Vec<(String, String)>> {
    let bad = || refuse(format_args!("the connection string does not parse"));
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') || key.is_empty() {
            return Err(bad());
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            loop {
                match chars.next().ok_or_else(bad)? {
                    '\'' => break,
                    '\\' => value.push(chars.next().ok_or_else(bad)?),
                    c => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                chars.next();
                if c == '\\' {
                    value.push(chars.next().ok_or_else(bad)?);
                } else {
                    value.push(c);
                }
            }
        }
        out.push((key, value));
    }
}

fn refuse(what: std::fmt::Arguments<'_>) -> crate::error::Error {
    crate::log::error(format_args!("PostgreSQL storage: {what}"));
    err(CKR_GENERAL_ERROR)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The user name of this process (libpq's default user).
fn os_user() -> Option<String> {
    env("USER").or_else(|| env("LOGNAME"))
}

impl Target {
    /// The target `settings` name, completed (see the module documentation).
    pub(super) fn of(settings: &PostgresSettings) -> Result<Target> {
        let (conninfo, tls) = take_tls_params(&settings.conninfo)?;
        let mut config = tokio_postgres::Config::from_str(&conninfo)
            .map_err(|e| refuse(format_args!("the connection string does not parse: {e}")))?;
        let mode_name = tls
            .mode
            .or_else(|| env("PGSSLMODE"))
            .unwrap_or_else(|| "prefer".into());
        let mode = SslMode::parse(&mode_name)
            .ok_or_else(|| refuse(format_args!("sslmode={mode_name:?} is not one of libpq's")))?;
        let root_cert = tls
            .root_cert
            .or_else(|| env("PGSSLROOTCERT"))
            .map(PathBuf::from);
        config.ssl_mode(match mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Allow | SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        });
        #[cfg(feature = "aws-lc")]
        let tls = super::tls::client_config(mode, root_cert.as_deref())?;
        #[cfg(not(feature = "aws-lc"))]
        if matches!(
            mode,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        ) {
            let _ = root_cert;
            return Err(refuse(format_args!(
                "sslmode={mode_name} needs TLS, which the pure-Rust build does not have: \
                 use the default build"
            )));
        }
        if config.get_hosts().is_empty() {
            match env("PGHOST") {
                Some(h) => {
                    for h in h.split(',') {
                        config.host(h);
                    }
                }
                None if Path::new("/var/run/postgresql").is_dir() => {
                    config.host_path("/var/run/postgresql");
                }
                None => {
                    config.host("localhost");
                }
            }
        }
        if config.get_ports().is_empty()
            && let Some(p) = env("PGPORT")
        {
            let port = p
                .parse()
                .map_err(|_| refuse(format_args!("PGPORT={p:?} is not a port")))?;
            config.port(port);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(os_user)
                .ok_or_else(|| refuse(format_args!("no user: set user= or PGUSER")))?;
            config.user(user);
        }
        let user = config.get_user().unwrap_or_default().to_string();
        if config.get_dbname().is_none() {
            config.dbname(env("PGDATABASE").unwrap_or_else(|| user.clone()));
        }
        if config.get_application_name().is_none() {
            config.application_name(env("PGAPPNAME").unwrap_or_else(|| "dalek-pkcs11".into()));
        }
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".into(),
        };
        let dbname = config.get_dbname().unwrap_or_default().to_string();
        if config.get_password().is_none() {
            let password = env("PGPASSWORD").or_else(|| {
                password_file(settings)
                    .and_then(|f| password_from_file(&f, &host, port, &dbname, &user))
            });
            if let Some(p) = password {
                config.password(p);
            }
        }
        resolve_hosts(&mut config)?;
        config.connect_timeout(settings.timeout);
        Ok(Target {
            config,
            timeout: settings.timeout,
            shown: format!("{user}@{host}:{port}/{dbname}"),
            #[cfg(feature = "aws-lc")]
            tls,
        })
    }
}

/// Gives each TCP host named by a DNS name its address (`hostaddr`), so
/// the client does not resolve it on a thread of its own; literal
/// addresses and Unix sockets need nothing.
fn resolve_hosts(config: &mut tokio_postgres::Config) -> Result<()> {
    if !config.get_hostaddrs().is_empty() {
        return Ok(());
    }
    let hosts: Vec<Host> = config.get_hosts().to_vec();
    if hosts
        .iter()
        .all(|h| !matches!(h, Host::Tcp(name) if name.parse::<std::net::IpAddr>().is_err()))
    {
        return Ok(());
    }
    let port = config.get_ports().first().copied().unwrap_or(5432);
    for h in &hosts {
        let addr = match h {
            Host::Tcp(name) => match name.parse::<std::net::IpAddr>() {
                Ok(ip) => ip,
                Err(_) => (name.as_str(), port)
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut a| a.next())
                    .map(|a| a.ip())
                    .ok_or_else(|| refuse(format_args!("cannot resolve host {name:?}")))?,
            },
            // hostaddr applies to every host or none: a socket gets a
            // placeholder the client ignores for Unix hosts.
            Host::Unix(_) => std::net::IpAddr::from([127, 0, 0, 1]),
        };
        config.hostaddr(addr);
    }
    Ok(())
}

/// The password file to read: `postgres_password_file`, `PGPASSFILE` or
/// `~/.pgpass`.
fn password_file(settings: &PostgresSettings) -> Option<PathBuf> {
    settings
        .password_file
        .clone()
        .or_else(|| env("PGPASSFILE").map(PathBuf::from))
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".pgpass")))
}

/// The password of the first line of `file` that matches (libpq's rules);
/// `None` when there is none, or the file is missing or too open.
fn password_from_file(
    file: &Path,
    host: &str,
    port: u16,
    dbname: &str,
    user: &str,
) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        crate::log::warn(format_args!(
            "password file {} is readable by its group or others: ignored (chmod 0600 it)",
            file.display()
        ));
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    // libpq matches "localhost" for a Unix socket host.
    let host_is_socket = host.starts_with('/');
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass_line(line)?;
            let [h, p, d, u, password] = fields.as_slice() else {
                return None;
            };
            let matches = |pattern: &str, value: &str| pattern == "*" || pattern == value;
            let host_ok = matches(h, host) || (host_is_socket && h == "localhost");
            (host_ok && matches(p, &port.to_string()) && matches(d, dbname) && matches(u, user))
                .then(|| password.clone())
        })
}

/// The five fields of a password-file line (`:` separates, `\` escapes).
fn split_pgpass_line(line: &str) -> Option<Vec<String>> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut()?.push(chars.next()?),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    (fields.len() == 5).then_some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_file_lines_match_as_libpq_matches_them() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pgpass");
        std::fs::write(
            &f,
            "# comment\nother:5432:tokens:dalek:wrong\n*:5433:*:dalek:p\\:w\\\\d\nlocalhost:5432:tokens:dalek:sock\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let get = |h, p, d, u| password_from_file(&f, h, p, d, u);
        assert_eq!(get("db", 5433, "x", "dalek").as_deref(), Some("p:w\\d"));
        assert_eq!(
            get("other", 5432, "tokens", "dalek").as_deref(),
            Some("wrong")
        );
        assert_eq!(
            get("/run/pg", 5432, "tokens", "dalek").as_deref(),
            Some("sock")
        );
        assert_eq!(get("db", 5432, "tokens", "dalek"), None);
        // Readable by others: ignored, as libpq does.
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(get("db", 5433, "x", "dalek"), None);
    }

    #[test]
    fn strings_complete_and_never_show_the_password() {
        let settings = PostgresSettings {
            conninfo: "postgresql://dalek:hunter2@127.0.0.1:6543/tokens".into(),
            password_file: None,
            timeout: std::time::Duration::from_secs(2),
            max_staleness: std::time::Duration::ZERO,
        };
        let t = Target::of(&settings).unwrap();
        assert_eq!(t.shown, "dalek@127.0.0.1:6543/tokens");
        assert_eq!(t.config.get_password(), Some(&b"hunter2"[..]));
        assert_eq!(
            t.config.get_connect_timeout(),
            Some(&std::time::Duration::from_secs(2))
        );
        let kv = PostgresSettings {
            conninfo: "host=127.0.0.1 port=7 dbname=t user=u".into(),
            ..settings
        };
        assert_eq!(Target::of(&kv).unwrap().shown, "u@127.0.0.1:7/t");
        for bad in [
            "postgresql://h/d?sslmode=bogus",
            "postgresql://h/d?sslcert=/x.crt",
            "host=h sslkey=/k",
            "host=h dbname='unterminated",
        ] {
            let bad = PostgresSettings {
                conninfo: bad.into(),
                ..kv.clone()
            };
            assert!(Target::of(&bad).is_err(), "{}", bad.conninfo);
        }
    }

    /// The pure-Rust build has no TLS: the modes that need it are refused,
    /// the others connect plain.
    #[cfg(not(feature = "aws-lc"))]
    #[test]
    fn the_pure_rust_build_refuses_the_modes_that_need_tls() {
        let with = |mode: &str| PostgresSettings {
            conninfo: format!("postgresql://u:p@127.0.0.1/d?sslmode={mode}"),
            password_file: None,
            timeout: std::time::Duration::from_secs(1),
            max_staleness: std::time::Duration::ZERO,
        };
        for mode in ["require", "verify-ca", "verify-full"] {
            assert!(Target::of(&with(mode)).is_err(), "{mode}");
        }
        for mode in ["disable", "allow", "prefer"] {
            assert!(Target::of(&with(mode)).is_ok(), "{mode}");
        }
    }

    #[test]
    fn tls_parameters_are_taken_out_of_both_forms() {
        let (rest, tls) = take_tls_params(
            "postgresql://u@h:5/d?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgresql://u@h:5/d?application_name=x");
        assert_eq!(tls.mode.as_deref(), Some("verify-full"));
        assert_eq!(tls.root_cert.as_deref(), Some("/etc/ca.pem"));
        let (rest, tls) =
            take_tls_params("host=h  sslmode = require dbname='my db' password='a\\'b'").unwrap();
        assert_eq!(rest, "host='h' dbname='my db' password='a\\'b'");
        assert_eq!(tls.mode.as_deref(), Some("require"));
        let c = tokio_postgres::Config::from_str(&rest).unwrap();
        assert_eq!(c.get_dbname(), Some("my db"));
        assert_eq!(c.get_password(), Some(&b"a'b"[..]));
    }
}
