//! Tokens between stores, for the operator's tool: checking a PostgreSQL
//! token ([`verify_postgres`]), backing one up to a SQLite file
//! ([`backup_postgres`]) and restoring a SQLite backup into PostgreSQL
//! ([`restore_postgres`]); `maintenance::copy_token` moves a token from
//! one store to another with the same parts. All of it online: the
//! source is read in one snapshot while other processes use it, and the
//! destination is written in one transaction (PostgreSQL) or one file
//! renamed into place (SQLite). The rows travel as they are, sealed and
//! authenticated as at rest (`storage::image`); nothing here needs a PIN.

use super::image::TokenImage;
use super::report::Report;
use super::{postgres, sqlite};
use crate::config::PostgresSettings;
use crate::error::{Result, err};
use cryptoki_sys::CKR_DEVICE_ERROR;
use std::path::Path;

/// Checks PostgreSQL token `serial`: the metadata's authentication, every
/// record's, the record set against its digest, the IV counters, and
/// tombstones of objects that still exist.
pub fn verify_postgres(settings: &PostgresSettings, serial: &str) -> Result<Report> {
    let (image, orphaned) = postgres::read_image_for_verify(settings, serial)?;
    let mut report = report_of(&image);
    report.orphaned_tombstones = orphaned;
    Ok(report)
}

fn report_of(image: &TokenImage) -> Report {
    let audit = image.audit();
    Report {
        serial: image.serial.clone(),
        unopenable: audit.unopenable,
        records: audit.records,
        unauthentic: audit.unauthentic,
        damage: audit.damage,
        ..Report::default()
    }
}

/// Writes PostgreSQL token `serial`, as it is at one moment, to the new
/// SQLite file `out` (a token file like any other: `restore` puts it back
/// into either store). Copied as it is, damage included (a backup keeps
/// the evidence); `verify` of the source says whether it is sound.
pub fn backup_postgres(settings: &PostgresSettings, serial: &str, out: &Path) -> Result<()> {
    let image = postgres::read_image(settings, serial)?;
    sqlite::write_file(out, &image)
}

/// Restores the SQLite backup `staged` (a private copy the caller made and
/// checked) into PostgreSQL; `replace` lets it take the place of a token
/// of the same serial, in the same transaction. Returns the check of the
/// token as written.
pub fn restore_postgres(
    settings: &PostgresSettings,
    staged: &Path,
    replace: bool,
) -> Result<Report> {
    let image = sqlite::read_image(&sqlite::connect_read_only(staged)?)?;
    image.check().map_err(|why| refused(&image.serial, &why))?;
    postgres::write_image(settings, &image, replace)?;
    verify_postgres(settings, &image.serial)
}

pub(crate) fn refused(serial: &str, why: &str) -> crate::error::Error {
    crate::log::error(format_args!("token {serial}: not copied: {why}"));
    err(CKR_DEVICE_ERROR)
}

#[cfg(test)]
#[path = "transfer_tests.rs"]
mod tests;
