//! X.509 **v1** certificates, which `ovs-pki` issues and Kube-OVN therefore uses.
//!
//! `ovs-pki` signs with `openssl ca` and no extension section, which makes version 1
//! certificates, for the CA and for every `NAME-cert.pem`. webpki (rustls's verifier)
//! accepts a v1 CA as a trust anchor but refuses v1 end-entity certificates. For those,
//! this module does what OVS (OpenSSL) does with a one-level PKI: the certificate must be
//! signed directly by one of the configured CA certificates, whose subject is its issuer,
//! and be valid now. A v1 certificate carries no key usage, name or CA constraints, so
//! there is nothing more to check. v3 certificates never come here.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::sign::SigningKey;
use rustls::{CertificateError, DigitallySignedStruct, Error};
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::{FromDer, X509Version};
use x509_parser::time::ASN1Time;

/// Whether `der` parses as an X.509 v1 certificate.
pub(crate) fn is_v1(der: &[u8]) -> bool {
    X509Certificate::from_der(der).is_ok_and(|(_, cert)| cert.version() == X509Version::V1)
}

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, Error> {
    X509Certificate::from_der(der)
        .map(|(_, cert)| cert)
        .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))
}

/// Verifies a v1 end-entity certificate: signed by one of `cas` and valid at `now`.
pub(crate) fn verify_leaf(
    leaf: &CertificateDer<'_>,
    cas: &[CertificateDer<'static>],
    now: UnixTime,
) -> Result<(), Error> {
    let leaf = parse(leaf)?;
    let signed_by_a_ca = cas.iter().any(|ca| {
        parse(ca).is_ok_and(|ca| {
            ca.subject().as_raw() == leaf.issuer().as_raw()
                && leaf.verify_signature(Some(ca.public_key())).is_ok()
        })
    });
    if !signed_by_a_ca {
        return Err(Error::InvalidCertificate(CertificateError::UnknownIssuer));
    }
    let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    let now = ASN1Time::from_timestamp(now)
        .map_err(|e| Error::General(format!("the current time: {e}")))?;
    let validity = leaf.validity();
    if now < validity.not_before {
        return Err(Error::InvalidCertificate(CertificateError::NotValidYet));
    }
    if now > validity.not_after {
        return Err(Error::InvalidCertificate(CertificateError::Expired));
    }
    Ok(())
}

/// Verifies a handshake signature made with the key of the v1 certificate `cert`,
/// trying the algorithms `algorithms` maps the scheme to (TLS 1.3: only the first).
pub(crate) fn verify_handshake_signature(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algorithms: &WebPkiSupportedAlgorithms,
    tls13: bool,
) -> Result<HandshakeSignatureValid, Error> {
    let cert = parse(cert)?;
    let public_key = &cert.public_key().subject_public_key.data;
    let candidates = algorithms
        .mapping
        .iter()
        .find(|(scheme, _)| *scheme == dss.scheme)
        .map(|(_, algs)| *algs)
        .unwrap_or_default();
    let candidates = if tls13 {
        &candidates[..candidates.len().min(1)]
    } else {
        candidates
    };
    let valid = candidates.iter().any(|alg| {
        alg.verify_signature(public_key, message, dss.signature())
            .is_ok()
    });
    if valid {
        Ok(HandshakeSignatureValid::assertion())
    } else {
        Err(Error::InvalidCertificate(CertificateError::BadSignature))
    }
}

/// Whether `key` is the private half of the v1 certificate `cert`'s public key.
pub(crate) fn key_matches(
    cert: &CertificateDer<'_>,
    key: &Arc<dyn SigningKey>,
) -> Result<(), Error> {
    let cert = parse(cert)?;
    match key.public_key() {
        // A key that cannot tell its public half is trusted, as rustls does.
        None => Ok(()),
        Some(spki) if spki.as_ref() == cert.public_key().raw => Ok(()),
        Some(_) => Err(Error::InconsistentKeys(
            rustls::InconsistentKeys::KeyMismatch,
        )),
    }
}
