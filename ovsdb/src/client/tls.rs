//! TLS for `ssl:` and `pssl:` remotes (rustls, `ring` provider), with OVS's rules.
//!
//! OVS authenticates both ends of every SSL connection: each side presents a
//! certificate, and each checks the other's against its CA certificate
//! (`ovsdb-server --private-key --certificate --ca-cert`, `ovn-nbctl -p -c -C`). It
//! does **not** compare host names: `ovs-pki` issues certificates whose only identity
//! is a common name (Kube-OVN uses one certificate, `CN=ovn`, for every NB/SB server and
//! client), and peers connect to each other by IP address. This client does the same:
//! the peer's chain must lead to the configured CA and be valid now (signatures,
//! validity period, key usage), but the certificate need not name the host or address
//! dialled. Anyone holding a certificate from that CA is trusted, exactly as in OVS, so
//! the CA must be private to the deployment.
//!
//! Certificates are verified by webpki, except X.509 v1 ones (what `ovs-pki` makes),
//! which webpki refuses: those are checked as OpenSSL checks them in a one-level PKI
//! (see `tls_v1.rs`).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, DistinguishedName,
    InconsistentKeys, RootCertStore, ServerConfig, SignatureScheme,
};

use super::tls_v1;

/// Which of the three files a [`TlsError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFile {
    /// `-p`, `--private-key`.
    PrivateKey,
    /// `-c`, `--certificate`.
    Certificate,
    /// `-C`, `--ca-cert`.
    CaCert,
}

impl fmt::Display for TlsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TlsFile::PrivateKey => "private key",
            TlsFile::Certificate => "certificate",
            TlsFile::CaCert => "CA certificate",
        })
    }
}

/// Why TLS could not be set up, or why a TLS connection was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read or holds no usable PEM item of its kind.
    #[error("{file} {path}: {reason}")]
    File {
        /// Which file.
        file: TlsFile,
        /// Its path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A certificate in the CA file cannot serve as a trust anchor.
    #[error("CA certificate {path} (certificate #{index} in the file) is unusable: {source}")]
    BadCaCert {
        /// The CA file.
        path: PathBuf,
        /// Position of the certificate in the file, from 1.
        index: usize,
        /// rustls's reason.
        #[source]
        source: Box<rustls::Error>,
    },
    /// The private key does not belong to the certificate, or cannot sign.
    #[error("private key {private_key} cannot be used with certificate {certificate}: {source}")]
    KeyMismatch {
        /// The key file.
        private_key: PathBuf,
        /// The certificate file.
        certificate: PathBuf,
        /// rustls's reason.
        #[source]
        source: Box<rustls::Error>,
    },
    /// A TLS remote is used but no key, certificate and CA certificate were given.
    #[error(
        "{remote} needs a private key, certificate and CA certificate (ClientOptions::with_tls)"
    )]
    NotConfigured {
        /// The remote.
        remote: String,
    },
    /// We refused the peer's certificate.
    #[error("the certificate of the ovsdb-server at {remote} was refused: {reason} (checked against CA certificate {ca_cert})")]
    PeerCertificateRefused {
        /// The remote.
        remote: String,
        /// Why, in words.
        reason: String,
        /// The CA file it was checked against.
        ca_cert: PathBuf,
        /// rustls's reason.
        #[source]
        source: Box<rustls::Error>,
    },
    /// The peer refused our certificate (it answered with a certificate alert).
    #[error("the ovsdb-server at {remote} refused our certificate {certificate}: {reason}")]
    CertificateRefused {
        /// The remote.
        remote: String,
        /// The certificate we presented.
        certificate: PathBuf,
        /// Why, as far as the peer's alert says.
        reason: String,
        /// rustls's reason.
        #[source]
        source: Box<rustls::Error>,
    },
    /// Any other TLS failure with the peer (no common version or cipher, bad record).
    #[error("TLS with {remote} failed: {source}")]
    Protocol {
        /// The remote.
        remote: String,
        /// rustls's reason.
        #[source]
        source: Box<rustls::Error>,
    },
}

/// The private key, certificate and CA certificate of `ssl:` and `pssl:` remotes.
/// Cheap to clone; the files are read once, by [`TlsConfig::from_files`].
#[derive(Clone)]
pub struct TlsConfig {
    inner: Arc<Inner>,
}

struct Inner {
    private_key: PathBuf,
    certificate: PathBuf,
    ca_cert: PathBuf,
    /// We connect (`ssl:`).
    client: Arc<ClientConfig>,
    /// The server connects to us (`pssl:`): we are the TLS server.
    server: Arc<ServerConfig>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("private_key", &self.inner.private_key)
            .field("certificate", &self.inner.certificate)
            .field("ca_cert", &self.inner.ca_cert)
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// Reads PEM files as `ovn-nbctl -p PRIVATE_KEY -c CERTIFICATE -C CA_CERT` does
    /// (Kube-OVN: `/var/run/tls/key`, `/var/run/tls/cert`, `/var/run/tls/cacert`). The
    /// certificate file may hold a chain (ours first); the CA file may hold several CAs.
    pub fn from_files(
        private_key: impl AsRef<Path>,
        certificate: impl AsRef<Path>,
        ca_cert: impl AsRef<Path>,
    ) -> Result<Self, TlsError> {
        let (key_path, cert_path, ca_path) = (
            private_key.as_ref().to_owned(),
            certificate.as_ref().to_owned(),
            ca_cert.as_ref().to_owned(),
        );
        let key = PrivateKeyDer::from_pem_file(&key_path)
            .map_err(|e| file_error(TlsFile::PrivateKey, &key_path, e))?;
        let chain = read_certificates(TlsFile::Certificate, &cert_path)?;
        let cas = read_certificates(TlsFile::CaCert, &ca_path)?;
        let mut roots = RootCertStore::empty();
        for (i, ca) in cas.iter().enumerate() {
            roots
                .add(ca.clone())
                .map_err(|source| TlsError::BadCaCert {
                    path: ca_path.clone(),
                    index: i + 1,
                    source: Box::new(source),
                })?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key_mismatch = |source| TlsError::KeyMismatch {
            private_key: key_path.clone(),
            certificate: cert_path.clone(),
            source: Box::new(source),
        };
        let ours = certified_key(&provider, chain, key).map_err(key_mismatch)?;
        let trust = Trust {
            roots: Arc::new(roots),
            cas: Arc::new(cas),
            provider,
        };
        let client = client_config(&trust, ours.clone()).map_err(key_mismatch)?;
        let server = server_config(&trust, ours).map_err(key_mismatch)?;
        Ok(TlsConfig {
            inner: Arc::new(Inner {
                private_key: key_path,
                certificate: cert_path,
                ca_cert: ca_path,
                client: Arc::new(client),
                server: Arc::new(server),
            }),
        })
    }

    /// The private key file.
    pub fn private_key(&self) -> &Path {
        &self.inner.private_key
    }

    /// The certificate file.
    pub fn certificate(&self) -> &Path {
        &self.inner.certificate
    }

    /// The CA certificate file.
    pub fn ca_cert(&self) -> &Path {
        &self.inner.ca_cert
    }

    pub(crate) fn client_config(&self) -> Arc<ClientConfig> {
        self.inner.client.clone()
    }

    pub(crate) fn server_config(&self) -> Arc<ServerConfig> {
        self.inner.server.clone()
    }

    /// Turns an I/O error of a TLS connection to `remote` into one that says which
    /// certificate failed and why, when rustls's error is inside.
    pub(crate) fn explain(&self, remote: &str, error: io::Error) -> io::Error {
        let Some(tls) = error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        else {
            return error;
        };
        io::Error::new(error.kind(), self.classify(remote, tls.clone()))
    }

    fn classify(&self, remote: &str, error: rustls::Error) -> TlsError {
        let remote = remote.to_owned();
        let source = Box::new(error);
        match &*source {
            rustls::Error::InvalidCertificate(why) => TlsError::PeerCertificateRefused {
                remote,
                reason: certificate_reason(why),
                ca_cert: self.inner.ca_cert.clone(),
                source,
            },
            rustls::Error::AlertReceived(alert) if is_certificate_alert(*alert) => {
                TlsError::CertificateRefused {
                    remote,
                    certificate: self.inner.certificate.clone(),
                    reason: alert_reason(*alert),
                    source,
                }
            }
            _ => TlsError::Protocol { remote, source },
        }
    }
}

fn file_error(file: TlsFile, path: &Path, e: rustls::pki_types::pem::Error) -> TlsError {
    let reason = match e {
        rustls::pki_types::pem::Error::NoItemsFound => format!("holds no PEM {file}"),
        other => other.to_string(),
    };
    TlsError::File {
        file,
        path: path.to_owned(),
        reason,
    }
}

fn read_certificates(file: TlsFile, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| file_error(file, path, e))?;
    if certs.is_empty() {
        return Err(file_error(
            file,
            path,
            rustls::pki_types::pem::Error::NoItemsFound,
        ));
    }
    Ok(certs)
}

/// What peers are checked against.
struct Trust {
    roots: Arc<RootCertStore>,
    /// The CA certificates as read, for v1 peers (see `tls_v1.rs`).
    cas: Arc<Vec<CertificateDer<'static>>>,
    provider: Arc<CryptoProvider>,
}

/// Our key and certificate chain, after checking that they belong together.
fn certified_key(
    provider: &CryptoProvider,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<CertifiedKey>, rustls::Error> {
    let signing_key = provider.key_provider.load_private_key(key)?;
    if tls_v1::is_v1(&chain[0]) {
        tls_v1::key_matches(&chain[0], &signing_key)?;
        return Ok(Arc::new(CertifiedKey::new(chain, signing_key)));
    }
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        // A key that cannot tell its public half is trusted, as rustls does.
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => {
            Ok(Arc::new(certified))
        }
        Err(e) => Err(e),
    }
}

fn client_config(trust: &Trust, ours: Arc<CertifiedKey>) -> Result<ClientConfig, rustls::Error> {
    let webpki =
        WebPkiServerVerifier::builder_with_provider(trust.roots.clone(), trust.provider.clone())
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?;
    let verifier = OvsServerVerifier {
        webpki,
        cas: trust.cas.clone(),
        algorithms: trust.provider.signature_verification_algorithms,
    };
    Ok(ClientConfig::builder_with_provider(trust.provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_client_cert_resolver(Arc::new(SingleCertAndKey::from(ours))))
}

fn server_config(trust: &Trust, ours: Arc<CertifiedKey>) -> Result<ServerConfig, rustls::Error> {
    // Mandatory client certificates, as OVS requires of whoever connects.
    let webpki =
        WebPkiClientVerifier::builder_with_provider(trust.roots.clone(), trust.provider.clone())
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?;
    let verifier = OvsClientVerifier {
        webpki,
        cas: trust.cas.clone(),
        algorithms: trust.provider.signature_verification_algorithms,
    };
    Ok(ServerConfig::builder_with_provider(trust.provider.clone())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(ours))))
}

/// How ovsdb-server's certificate is checked: webpki's verification minus the host name
/// check (see the module's documentation), or `tls_v1` for a v1 certificate. webpki
/// checks the name last, after the chain, signatures, validity and key usage, so a
/// name mismatch means everything else was verified.
#[derive(Debug)]
struct OvsServerVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    cas: Arc<Vec<CertificateDer<'static>>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for OvsServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if tls_v1::is_v1(end_entity) {
            tls_v1::verify_leaf(end_entity, &self.cas, now)?;
            return Ok(ServerCertVerified::assertion());
        }
        let verified = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verified {
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
        if tls_v1::is_v1(cert) {
            return tls_v1::verify_handshake_signature(message, cert, dss, &self.algorithms, false);
        }
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        if tls_v1::is_v1(cert) {
            return tls_v1::verify_handshake_signature(message, cert, dss, &self.algorithms, true);
        }
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// How the certificate of an ovsdb-server connecting to our `pssl:` is checked:
/// webpki's verification (client certificates have no name to check), or `tls_v1`.
#[derive(Debug)]
struct OvsClientVerifier {
    webpki: Arc<dyn ClientCertVerifier>,
    cas: Arc<Vec<CertificateDer<'static>>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for OvsClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        if tls_v1::is_v1(end_entity) {
            tls_v1::verify_leaf(end_entity, &self.cas, now)?;
            return Ok(ClientCertVerified::assertion());
        }
        self.webpki
            .verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        if tls_v1::is_v1(cert) {
            return tls_v1::verify_handshake_signature(message, cert, dss, &self.algorithms, false);
        }
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        if tls_v1::is_v1(cert) {
            return tls_v1::verify_handshake_signature(message, cert, dss, &self.algorithms, true);
        }
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The name to send in SNI and to pass the verifier (which ignores mismatches): the
/// host as dialled, or a placeholder when it is not a valid DNS name or address.
pub(crate) fn server_name(host: &str) -> ServerName<'static> {
    ServerName::try_from(host.to_owned())
        .unwrap_or_else(|_| ServerName::try_from("ovsdb-server").expect("a valid DNS name"))
}

fn certificate_reason(why: &CertificateError) -> String {
    match why {
        CertificateError::UnknownIssuer => "it is not signed by that CA (unknown issuer)".into(),
        CertificateError::BadSignature => "its signature does not verify".into(),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            "it has expired".into()
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "it is not valid yet".into()
        }
        CertificateError::BadEncoding => "it is not a well-formed X.509 v3 certificate".into(),
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "its extended key usage does not allow this use".into()
        }
        other => format!("{other:?}"),
    }
}

/// Alerts with which a peer refuses the certificate we presented.
fn is_certificate_alert(alert: AlertDescription) -> bool {
    matches!(
        alert,
        AlertDescription::UnknownCA
            | AlertDescription::BadCertificate
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateRevoked
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRequired
            | AlertDescription::AccessDenied
    )
}

fn alert_reason(alert: AlertDescription) -> String {
    let why = match alert {
        AlertDescription::UnknownCA => "it is not signed by a CA the server trusts",
        AlertDescription::CertificateExpired => "it has expired",
        AlertDescription::CertificateRequired => "the server requires a client certificate",
        _ => "the server does not accept it",
    };
    format!("{why} (TLS alert {alert:?})")
}
