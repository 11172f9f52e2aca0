//! Connections to a token database: read-write (WAL journal, the
//! configured `synchronous` level, `secure_delete`, a busy timeout so that
//! processes wait for each other's transactions), read-only (or immutable
//! when the directory cannot be written), what their errors mean, and the
//! close without checkpoint of a connection whose files were replaced.

use crate::config::Durability;
use crate::error::Result;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Duration;

pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) fn connect(path: &Path, create: bool, durability: Durability) -> Result<Connection> {
    Ok(connect_raw(path, create, durability)?)
}

pub(crate) fn connect_raw(
    path: &Path,
    create: bool,
    durability: Durability,
) -> rusqlite::Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    let sync = match durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync)?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    // Deleted records are overwritten, not left in free pages.
    conn.pragma_update(None, "secure_delete", "ON")?;
    // The first read makes SQLite open the log and its index: a directory
    // or file that cannot be written shows here.
    conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |_| Ok(()))?;
    Ok(conn)
}

/// True for the errors of a database that can be read but not written
/// (read-only file or directory): the token is then opened read-only.
pub(super) fn is_write_refusal(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(
            rusqlite::ErrorCode::CannotOpen
                | rusqlite::ErrorCode::ReadOnly
                | rusqlite::ErrorCode::PermissionDenied
        )
    )
}

/// True for a file that is not a SQLite database at all (garbage, another
/// format, an encrypted copy): such a token is not recognized, and will not
/// become one by trying again (unlike a busy or unreadable file).
pub(super) fn is_not_a_database(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase)
}

/// `path` as a SQLite URI path (`%`, `?` and `#` escaped).
pub(super) fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// Opens an existing token's database for reading only: with SQLite's
/// usual locking when its log files exist or can be made, else (a
/// read-only directory without them, where nobody can write the token
/// either) as an immutable file.
pub(crate) fn connect_read_only(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let try_open = |query: &str| -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(format!("file:{}?{query}", uri_path(path)), flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |_| Ok(()))?;
        Ok(conn)
    };
    let log_is_empty =
        std::fs::metadata(format!("{}-wal", path.display())).map_or(true, |m| m.len() == 0);
    match try_open("mode=ro") {
        Ok(c) => Ok(c),
        // Immutable reads ignore the log: only when it holds nothing.
        Err(_) if log_is_empty => Ok(try_open("immutable=1")?),
        Err(e) => Err(e.into()),
    }
}
/// Closes a connection whose files were deleted or replaced under it,
/// without the checkpoint (and log deletion) a last connection makes.
pub(super) fn close_without_checkpoint(conn: Connection) {
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    drop(conn);
}
