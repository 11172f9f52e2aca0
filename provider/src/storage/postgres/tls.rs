//! TLS to the database, as libpq's `sslmode` gives it (PostgreSQL 15 docs,
//! §34.19.1 "Client Verification of Server Certificates", §34.19.2
//! "Protection Provided in Different Modes"), with rustls on aws-lc-rs
//! (the default build; the pure-Rust build refuses the modes that need
//! TLS, `target`):
//!
//! - `verify-full`: the server's chain must lead to a root of `sslrootcert`
//!   (a PEM file, `system` for the system's roots; default
//!   `~/.postgresql/root.crt`, which must then exist) and its certificate
//!   must name the host the string names;
//! - `verify-ca`: the chain as for `verify-full`, any host name;
//! - `require`, `prefer`, `allow`: encrypted; when a root file is given or
//!   the default one exists the chain is checked as for `verify-ca`, else
//!   the server is not authenticated (libpq's behaviour). `prefer` and
//!   `allow` fall back to plain when the server offers no TLS.

use super::sslmode::SslMode;
use crate::error::{Result, err};
use cryptoki_sys::CKR_GENERAL_ERROR;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, Error, RootCertStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn refuse(what: std::fmt::Arguments<'_>) -> crate::error::Error {
    crate::log::error(format_args!("PostgreSQL storage: {what}"));
    err(CKR_GENERAL_ERROR)
}

/// The roots of `sslrootcert` (`None`: the default file, if it exists).
fn roots(root_cert: Option<&Path>) -> Result<Option<RootCertStore>> {
    let default = std::env::var_os("HOME").map(|h| Path::new(&h).join(".postgresql/root.crt"));
    let file: PathBuf = match root_cert {
        Some(p) if p == Path::new("system") => PathBuf::from("/etc/ssl/certs/ca-certificates.crt"),
        Some(p) => p.to_path_buf(),
        None => match default {
            Some(d) if d.is_file() => d,
            _ => return Ok(None),
        },
    };
    let mut store = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(&file)
        .map_err(|e| refuse(format_args!("root certificates {}: {e}", file.display())))?;
    for c in certs {
        let c = c.map_err(|e| refuse(format_args!("root certificates {}: {e}", file.display())))?;
        store
            .add(c)
            .map_err(|e| refuse(format_args!("root certificate in {}: {e}", file.display())))?;
    }
    if store.is_empty() {
        return Err(refuse(format_args!(
            "root certificates {}: no certificate in it",
            file.display()
        )));
    }
    Ok(Some(store))
}

/// The rustls configuration of `mode` (`None` for `disable`).
pub(super) fn client_config(
    mode: SslMode,
    root_cert: Option<&Path>,
) -> Result<Option<ClientConfig>> {
    if mode == SslMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| refuse(format_args!("TLS: {e}")))?;
    let roots = roots(root_cert)?;
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, roots) {
        (SslMode::VerifyFull | SslMode::VerifyCa, None) => {
            return Err(refuse(format_args!(
                "sslmode={} needs root certificates: sslrootcert=FILE (or system), \
                 or ~/.postgresql/root.crt",
                if mode == SslMode::VerifyFull {
                    "verify-full"
                } else {
                    "verify-ca"
                }
            )));
        }
        (mode, Some(roots)) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| refuse(format_args!("TLS: {e}")))?;
            if mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            }
        }
        (_, None) => Arc::new(Unauthenticated(provider)),
    };
    Ok(Some(
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth(),
    ))
}

/// `verify-ca`: the chain is checked, the host name is not.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `require` without root certificates: encrypted, the server not
/// authenticated (libpq's `require`); the handshake's signature is still
/// checked against the certificate the server sent.
#[derive(Debug)]
struct Unauthenticated(Arc<CryptoProvider>);

impl ServerCertVerifier for Unauthenticated {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
