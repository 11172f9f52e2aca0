//! The commands on a token's file: `verify`, `repair`, `backup`, `restore` (the
//! module's storage layer, `storage::maintenance`).

use dalek_pkcs11::storage::maintenance::{self, Report};

use crate::output;
use crate::tokens::{Started, find, find_any, load_config};
use crate::{BackupArgs, CopyTokenArgs, Failure, Outcome, RepairArgs, RestoreArgs, VerifyArgs};

fn print_report(r: &Report, json: bool) {
    if json {
        println!("{}", serde_json::json!({"ok": r.ok(), "report": r}));
        return;
    }
    if let Some(why) = &r.unopenable {
        println!("token {}: the file cannot be opened as its token", r.serial);
        println!("  PROBLEM: {why}");
    } else {
        println!(
            "token {}: {} records, {} failed authentication",
            r.serial, r.records, r.unauthentic
        );
    }
    if let Some(d) = &r.damage {
        println!("  PROBLEM: {d}");
    }
    for l in &r.sqlite {
        println!("  PROBLEM: SQLite integrity check: {l}");
    }
    if r.orphaned_tombstones > 0 {
        println!(
            "  PROBLEM: {} tombstone(s) of objects that still exist",
            r.orphaned_tombstones
        );
    }
    for f in &r.temporary_files {
        println!("  PROBLEM: leftover temporary file {f}");
    }
    println!("{}", if r.ok() { "ok" } else { "DAMAGED" });
}

/// `verify`: exit 0 when the token checks out, 1 when not.
pub fn verify(a: &VerifyArgs, json: bool) -> Outcome {
    let config = load_config()?;
    let started = Started::with(config.clone())?;
    let (serial, label) = find_any(&config, &a.token)?;
    drop(started);
    let r = maintenance::verify(&config, &serial)
        .map_err(|e| Failure::new(format!("reading token {serial}: {e}")))?;
    print_report(&r, json);
    if r.ok() {
        Ok(())
    } else {
        Err(Failure::check(format!(
            "token {} failed its checks",
            named(&serial, label.as_deref())
        )))
    }
}

/// "'label' (serial S)", or "serial S" for a damaged file.
fn named(serial: &str, label: Option<&str>) -> String {
    match label {
        Some(l) => format!("'{l}' (serial {serial})"),
        None => format!("(serial {serial})"),
    }
}

/// `repair`: rebuilds indexes from authenticated records; exit 0 when the
/// token checks out afterwards (or did before), 1 when it cannot be
/// repaired or still fails its checks.
pub fn repair(a: &RepairArgs, json: bool) -> Outcome {
    let config = load_config()?;
    let started = Started::with(config.clone())?;
    let (serial, label) = find_any(&config, &a.token)?;
    drop(started);
    let r = maintenance::repair(&config, &serial)
        .map_err(|e| Failure::new(format!("repairing token {serial}: {e}")))?;
    let ok = r.refused.is_none() && r.after.as_ref().unwrap_or(&r.before).ok();
    if json {
        println!("{}", serde_json::json!({"ok": ok, "repair": r}));
    } else {
        println!("before:");
        print_report(&r.before, false);
        match (&r.refused, &r.after) {
            (Some(why), _) => println!("not repaired: {why}"),
            (None, None) => println!("nothing to repair"),
            (None, Some(after)) => {
                println!("rebuilt the indexes from the authenticated records; after:");
                print_report(after, false);
            }
        }
    }
    if ok {
        Ok(())
    } else {
        Err(Failure::check(format!(
            "token {} is not repaired",
            named(&serial, label.as_deref())
        )))
    }
}

/// `backup`, with a progress bar on a terminal.
pub fn backup(a: &BackupArgs, json: bool) -> Outcome {
    let config = load_config()?;
    let started = Started::with(config.clone())?;
    let f = find(&a.token)?;
    drop(started);
    if a.out.exists() {
        return Err(Failure::new(format!(
            "{} exists: not overwritten",
            a.out.display()
        )));
    }
    let bar = output::progress_bar(0, "backup {bar:30} {pos}/{len} pages", json);
    maintenance::backup(&config, &f.meta.serial, &a.out, &mut |done, all| {
        bar.set_length(all);
        bar.set_position(done);
    })
    .map_err(|e| Failure::new(format!("backup of token {}: {e}", f.meta.serial)))?;
    bar.finish_and_clear();
    let size = std::fs::metadata(&a.out).map(|m| m.len()).unwrap_or(0);
    output::result(
        json,
        serde_json::json!({"serial": f.meta.serial, "file": a.out, "bytes": size}),
        format_args!(
            "token '{}' (serial {}) backed up to {} ({size} bytes, encrypted as at rest)",
            f.meta.label,
            f.meta.serial,
            a.out.display()
        ),
    );
    Ok(())
}

/// `restore`: refuses a damaged backup (exit 1) and an existing token
/// unless `--replace`.
pub fn restore(a: &RestoreArgs, json: bool) -> Outcome {
    let config = load_config()?;
    let serial = maintenance::backup_serial(&a.file).map_err(|e| {
        Failure::new(format!(
            "{} is not a dalek-pkcs11 token backup ({e})",
            a.file.display()
        ))
    })?;
    let postgres = config.storage == dalek_pkcs11::config::StorageKind::Postgres;
    if !a.replace
        && (dalek_pkcs11::storage::token_file(&config, &serial).is_some_and(|p| p.exists())
            || postgres && dalek_pkcs11::storage::list_serials(&config).contains(&serial))
    {
        let place = if postgres {
            "the database".to_string()
        } else {
            config.token_dir.display().to_string()
        };
        return Err(Failure::new(format!(
            "token {serial} exists in {place}: replace it with --replace"
        )));
    }
    let (serial, r) = maintenance::restore(&config, &a.file, a.replace)
        .map_err(|e| Failure::new(format!("restoring {}: {e}", a.file.display())))?;
    if !r.ok() {
        print_report(&r, json);
        return Err(Failure::check(format!(
            "{} failed its checks: nothing restored",
            a.file.display()
        )));
    }
    output::result(
        json,
        serde_json::json!({"restored": serial, "records": r.records}),
        format_args!(
            "restored token {serial} ({} records) from {}",
            r.records,
            a.file.display()
        ),
    );
    Ok(())
}

/// `copy-token`: the token as it is at one moment, written whole into the
/// other store and checked there; exit 1 when the copy fails its checks.
pub fn copy_token(a: &CopyTokenArgs, json: bool) -> Outcome {
    use dalek_pkcs11::config::StorageKind;
    let from = load_config()?;
    let mut to = from.clone();
    match a.to.strip_prefix("sqlite:") {
        Some(dir) if !dir.is_empty() => {
            to.storage = StorageKind::Sqlite;
            to.token_dir = dir.into();
        }
        Some(_) => return Err(Failure::new("--to sqlite: needs a directory (sqlite:DIR)")),
        None => {
            // Not echoed: a connection string may hold a password.
            if to.set_storage(&a.to).is_none() || to.storage != StorageKind::Postgres {
                return Err(Failure::new(
                    "--to is neither sqlite:DIR nor a PostgreSQL connection string",
                ));
            }
        }
    }
    let started = Started::with(from.clone())?;
    let f = find(&a.token)?;
    drop(started);
    let serial = f.meta.serial;
    let r = dalek_pkcs11::storage::maintenance::copy_token(&from, &serial, &to, a.replace)
        .map_err(|e| {
            Failure::new(format!(
                "copy of token {serial}: {e} (the log says why; a token that fails \
                 `verify` is never copied, and one of this serial there needs --replace)"
            ))
        })?;
    if !r.ok() {
        print_report(&r, json);
        return Err(Failure::check(format!(
            "the copy of token {serial} failed its checks"
        )));
    }
    output::result(
        json,
        serde_json::json!({"copied": serial, "records": r.records}),
        format_args!(
            "copied token '{}' (serial {serial}, {} records); its copy checks out",
            f.meta.label, r.records
        ),
    );
    Ok(())
}
