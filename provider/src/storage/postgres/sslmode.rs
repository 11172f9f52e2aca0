//! libpq's `sslmode` values (PostgreSQL 15 docs, §34.19.2), shared by the
//! connection string (`target`) and TLS (`tls`).

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub(super) fn parse(s: &str) -> Option<SslMode> {
        Some(match s {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }
}
