//! Writing a subcommand's output: stdout (a closed pipe ends quietly with
//! exit 141) or a file, and checking an output path before any work starts.

use std::path::Path;

use crate::error::{CliError, EXIT_CLOSED_STDOUT, Result};

/// Write `text` to stdout. A reader that has gone away (`| head -1`) ends the
/// program quietly with exit 141 instead of a panic about a broken pipe.
pub fn out(text: &str) -> Result<()> {
    use std::io::Write;
    let mut so = std::io::stdout().lock();
    match so.write_all(text.as_bytes()).and_then(|()| so.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Err(CliError::quiet(EXIT_CLOSED_STDOUT))
        }
        Err(e) => Err(CliError::usage(format!("cannot write to stdout: {e}"))),
    }
}

pub fn write_or_print(text: &str, output: Option<&Path>) -> Result<()> {
    match output {
        Some(p) => write_atomically(p, text.as_bytes())
            .map_err(|e| CliError::usage(format!("cannot write {}: {e}", p.display()))),
        None if text.ends_with('\n') => out(text),
        None => out(&format!("{text}\n")),
    }
}

/// Write `path` whole or not at all: into a new file beside it, then
/// renamed over it, so a reader (or a crash at any moment) sees the old
/// file or the new one, never a part.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    // A device or pipe (`/dev/stdout`, a FIFO) is written as it is.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, bytes);
    }
    let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".hsm-bench-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Refuse an output path that cannot be written (missing or unwritable
/// directory, a directory given as the file), before anything is loaded.
pub fn check_output(path: &Path, flag: &str) -> Result<()> {
    let fail = |why: String| {
        Err(CliError::usage(format!(
            "cannot write {flag} {}: {why}",
            path.display()
        )))
    };
    if path.is_dir() {
        return fail("is a directory".into());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        let what = if parent.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return fail(format!("{} {what}", parent.display()));
    }
    let (target, what) = if path.exists() {
        (path, "the file is not writable".to_string())
    } else {
        (
            parent,
            format!("directory {} is not writable", parent.display()),
        )
    };
    if !writable(target) {
        return fail(what);
    }
    Ok(())
}

/// access(2) with W_OK: whether this process may write `p`.
fn writable(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}
