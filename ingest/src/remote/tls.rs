//! The PEM files of a worker's or a daemon's mutual TLS, read into
//! tonic's rustls settings: each side presents its certificate and
//! accepts only a peer whose certificate the CA signed. A worker refuses a
//! client without one.

use std::path::{Path, PathBuf};

use thiserror::Error;
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

/// A certificate chain, its private key and the CA that signs peers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

#[derive(Debug, Error)]
pub enum TlsError {
    /// The reason is in the message (no error source), so a chain of
    /// contexts prints it once.
    #[error("cannot read {what} {}: {reason}", .path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{what} {} holds no PEM {wanted}", .path.display())]
    NotPem {
        what: &'static str,
        path: PathBuf,
        wanted: &'static str,
    },
}

/// The PEM text at `path`, which must hold a `-----BEGIN <wanted>` block
/// (`wanted` is matched at the end of the label, so `PRIVATE KEY` takes
/// PKCS#8, RSA and EC keys).
fn pem(what: &'static str, path: &Path, wanted: &'static str) -> Result<Vec<u8>, TlsError> {
    let bytes = std::fs::read(path).map_err(|reason| TlsError::Read {
        what,
        path: path.to_owned(),
        reason,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let found = text.lines().any(|l| {
        l.trim()
            .strip_prefix("-----BEGIN ")
            .and_then(|rest| rest.strip_suffix("-----"))
            .is_some_and(|label| label.ends_with(wanted))
    });
    if !found {
        return Err(TlsError::NotPem {
            what,
            path: path.to_owned(),
            wanted,
        });
    }
    Ok(bytes)
}

impl TlsFiles {
    fn identity(&self) -> Result<Identity, TlsError> {
        let cert = pem("certificate", &self.cert, "CERTIFICATE")?;
        let key = pem("private key", &self.key, "PRIVATE KEY")?;
        Ok(Identity::from_pem(cert, key))
    }

    fn ca(&self) -> Result<Certificate, TlsError> {
        Ok(Certificate::from_pem(pem("CA certificate", &self.ca, "CERTIFICATE")?))
    }

    /// A worker's server settings: its identity, and client certificates
    /// required, signed by the CA.
    pub fn server(&self) -> Result<ServerTlsConfig, TlsError> {
        Ok(ServerTlsConfig::new()
            .identity(self.identity()?)
            .client_ca_root(self.ca()?)
            .client_auth_optional(false))
    }

    /// A daemon's client settings: its identity, and the worker's
    /// certificate checked against the CA (and the name dialled).
    pub fn client(&self) -> Result<ClientTlsConfig, TlsError> {
        Ok(ClientTlsConfig::new()
            .ca_certificate(self.ca()?)
            .identity(self.identity()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_are_missing_or_not_pem_are_named() {
        let dir = tempfile::tempdir().expect("dir");
        let cert = dir.path().join("c.pem");
        let key = dir.path().join("k.pem");
        std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").expect("w");
        std::fs::write(&key, "not a key").expect("w");
        let files = TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            ca: dir.path().join("missing.pem"),
        };
        let e = files.server().expect_err("bad key").to_string();
        assert!(
            e.starts_with("private key ") && e.ends_with("holds no PEM PRIVATE KEY"),
            "{e}"
        );
        std::fs::write(
            &key,
            "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
        )
        .expect("w");
        let e = files.client().expect_err("no CA").to_string();
        assert!(
            e.starts_with("cannot read CA certificate ") && e.contains("missing.pem"),
            "{e}"
        );
    }
}
