//! TLS to PostgreSQL as libpq reads it from the URL: `sslmode` and `sslrootcert`. The one place
//! that decides what a connection checks of the server's certificate; both pools take their
//! TLS from here.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode` values, but `allow` (plain first, TLS only if refused: nobody wants it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    /// TLS if the server offers it, nothing checked (libpq's default).
    Prefer,
    /// TLS or no connection; encrypted, but the server is not authenticated.
    Require,
    /// TLS, and the certificate chains to `sslrootcert`; the host name is not checked.
    VerifyCa,
    /// TLS, the chain, and the certificate names the host connected to.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> anyhow::Result<Self> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => bail!(
                "sslmode={other:?} is not supported (disable, prefer, require, verify-ca or verify-full)"
            ),
        })
    }
}

/// What TLS seqvend's connections use and what they check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    mode: SslMode,
    root_cert: Option<PathBuf>,
}

impl Tls {
    /// From the URL's `sslmode` and `sslrootcert`, with libpq's rules: `prefer` by default;
    /// `sslrootcert` defaults to `~/.postgresql/root.crt` when that exists; `require` with a
    /// root certificate checks the chain, as `verify-ca` does.
    pub fn new(sslmode: Option<&str>, sslrootcert: Option<&str>) -> anyhow::Result<Self> {
        let mode = sslmode
            .map(SslMode::parse)
            .transpose()?
            .unwrap_or(SslMode::Prefer);
        if sslrootcert == Some("system") {
            bail!("sslrootcert=system is not supported: name a file of CA certificates");
        }
        let root_cert = sslrootcert
            .map(PathBuf::from)
            .or_else(|| default_root_cert().filter(|path| path.exists()));
        let mode = match (mode, &root_cert) {
            (SslMode::Require, Some(_)) => SslMode::VerifyCa,
            (SslMode::VerifyCa | SslMode::VerifyFull, None) => bail!(
                "sslmode=verify-ca and verify-full need sslrootcert=<file of CA certificates> \
                 (or ~/.postgresql/root.crt)"
            ),
            (mode, _) => mode,
        };
        Ok(Self { mode, root_cert })
    }

    pub fn mode(&self) -> SslMode {
        self.mode
    }

    /// tokio-postgres knows only whether to ask for TLS; what is checked is the connector's.
    pub fn tokio_postgres_mode(&self) -> tokio_postgres::config::SslMode {
        match self.mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        }
    }

    /// The connector for tokio-postgres (the vend pool and the primary watcher). Reads the
    /// root certificates now, so that a missing or empty file stops startup.
    pub fn connector(&self) -> anyhow::Result<MakeRustlsConnect> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match self.mode {
            SslMode::Disable | SslMode::Prefer | SslMode::Require => Arc::new(Unverified {
                provider: provider.clone(),
            }),
            SslMode::VerifyCa => Arc::new(ChainOnly(self.webpki(&provider)?)),
            SslMode::VerifyFull => self.webpki(&provider)?,
        };
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(MakeRustlsConnect::new(config))
    }

    fn webpki(&self, provider: &Arc<CryptoProvider>) -> anyhow::Result<Arc<WebPkiServerVerifier>> {
        let path = self.root_cert.as_ref().context("no root certificate")?;
        let shown = path.display();
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(path)
            .with_context(|| format!("reading sslrootcert {shown}"))?
        {
            let cert = cert.with_context(|| format!("sslrootcert {shown} is not PEM"))?;
            roots
                .add(cert)
                .with_context(|| format!("a certificate in sslrootcert {shown}"))?;
        }
        if roots.is_empty() {
            bail!("sslrootcert {shown} holds no certificate");
        }
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .context("building the certificate verifier")
    }

    /// The same choice for sqlx (the registry pool). sqlx checks the chain against these roots
    /// *and* the Mozilla roots it ships (webpki-roots); see docs/operating.md.
    pub fn sqlx_options(&self, options: PgConnectOptions) -> PgConnectOptions {
        let mode = match self.mode {
            SslMode::Disable => PgSslMode::Disable,
            SslMode::Prefer => PgSslMode::Prefer,
            SslMode::Require => PgSslMode::Require,
            SslMode::VerifyCa => PgSslMode::VerifyCa,
            SslMode::VerifyFull => PgSslMode::VerifyFull,
        };
        let options = options.ssl_mode(mode);
        match &self.root_cert {
            Some(path) if matches!(self.mode, SslMode::VerifyCa | SslMode::VerifyFull) => {
                options.ssl_root_cert(path)
            }
            _ => options,
        }
    }
}

fn default_root_cert() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    Some(PathBuf::from(home).join(".postgresql/root.crt"))
}

/// `prefer` and `require` without a root certificate: encrypted, not authenticated (libpq's
/// meaning). The handshake's signatures are still checked, so the session key is the peer's.
#[derive(Debug)]
struct Unverified {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `verify-ca`: everything webpki checks but the name.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
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
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_as_libpq_reads_them() {
        let mode = |m: Option<&str>, root: Option<&str>| Tls::new(m, root).map(|t| t.mode());
        assert_eq!(mode(None, None).unwrap(), SslMode::Prefer);
        assert_eq!(mode(Some("disable"), None).unwrap(), SslMode::Disable);
        assert_eq!(mode(Some("require"), None).unwrap(), SslMode::Require);
        assert_eq!(
            mode(Some("require"), Some("ca.pem")).unwrap(),
            SslMode::VerifyCa
        );
        assert_eq!(
            mode(Some("verify-full"), Some("ca.pem")).unwrap(),
            SslMode::VerifyFull
        );
        assert!(mode(Some("verify-ca"), None).is_err());
        assert!(mode(Some("allow"), None).is_err());
        assert!(mode(Some("verify-full"), Some("system")).is_err());
    }

    #[test]
    fn a_missing_root_certificate_file_is_an_error_at_once() {
        let tls = Tls::new(Some("verify-full"), Some("/nonexistent/ca.pem")).unwrap();
        let err = format!("{:#}", tls.connector().err().unwrap());
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
    }
}
