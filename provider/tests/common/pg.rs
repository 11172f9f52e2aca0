//! PostgreSQL helpers of the integration tests: the server `scripts/test`
//! starts (`DALEK_PKCS11_TEST_POSTGRES`, its password in `PGPASSFILE`, its
//! directory in `DALEK_PKCS11_TEST_POSTGRES_DIR`), `psql`, a fixture whose
//! tokens live in a schema of their own, and small object helpers.

#![allow(dead_code)] // each test binary uses a part

use super::common::*;
use cryptoki::object::{Attribute, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use std::process::Command;

pub fn server() -> Option<String> {
    match std::env::var("DALEK_PKCS11_TEST_POSTGRES") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            assert!(
                std::env::var_os("DALEK_PKCS11_REQUIRE_POSTGRES").is_none(),
                "DALEK_PKCS11_REQUIRE_POSTGRES is set, DALEK_PKCS11_TEST_POSTGRES is not"
            );
            eprintln!("SKIPPED: no PostgreSQL server (scripts/test starts one)");
            None
        }
    }
}

/// Runs `sql` as the module's database user; its output (unaligned).
pub fn psql(uri: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([
            "-X",
            "-q",
            "-t",
            "-A",
            "-v",
            "ON_ERROR_STOP=1",
            uri,
            "-c",
            sql,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The server's URI for a fresh schema `name` (emptied first): the
/// module keeps its tokens there (`search_path` in the options).
pub fn pg_schema(name: &str) -> Option<String> {
    Some(fresh_schema(&server()?, name))
}

/// `base` (a server's URI) for a fresh schema `name` (emptied first).
pub fn fresh_schema(base: &str, name: &str) -> String {
    psql(
        base,
        &format!(
            "SET client_min_messages = warning; \
             DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
        ),
    );
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-csearch_path%3D{name}")
}

/// A fixture whose module keeps its tokens in schema `name` of the server.
pub fn pg_fixture(name: &str) -> Option<(Fixture, String)> {
    let uri = pg_schema(name)?;
    Some((Fixture::with_storage(&uri), uri))
}

pub fn data_object(s: &Session, label: &str, value: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::DATA),
        Attribute::Token(true),
        Attribute::Private(true),
        Attribute::Label(label.as_bytes().to_vec()),
        Attribute::Value(value.to_vec()),
    ])
    .unwrap()
}

pub fn find(s: &Session, label: &str) -> Vec<ObjectHandle> {
    s.find_objects(&[Attribute::Label(label.as_bytes().to_vec())])
        .unwrap()
}

pub fn server_control(what: &[&str]) {
    let dir = std::env::var("DALEK_PKCS11_TEST_POSTGRES_DIR").unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/postgres");
    let mut args = vec![what[0], dir.as_str()];
    args.extend_from_slice(&what[1..]);
    let out = Command::new(script).args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "scripts/postgres {what:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
