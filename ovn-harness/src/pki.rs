//! A throw-away certificate authority for TLS tests, playing the part of `ovs-pki`.
//!
//! Kube-OVN's `generate-ssl.sh` runs `ovs-pki init` and `ovs-pki req+sign ovn`: one CA,
//! and one key and certificate whose only identity is its common name (`CN=ovn`, no
//! subject alternative names), used by every NB/SB server and client, which connect to
//! each other by IP address. [`Pki::issue`] makes certificates of that shape (X.509 v3,
//! ECDSA P-256, from `rcgen`), in the file layout `ovs-pki` uses.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use tempfile::TempDir;

use crate::process::HarnessError;

/// The three files `ovsdb-server --private-key/--certificate/--ca-cert` and
/// `ovn-nbctl -p/-c/-C` take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// `NAME-privkey.pem` (PKCS#8).
    pub private_key: PathBuf,
    /// `NAME-cert.pem`, signed by the CA.
    pub certificate: PathBuf,
    /// The CA's `cacert.pem`, to verify the peer with.
    pub ca_cert: PathBuf,
}

/// A certificate authority whose files live in a private temporary directory.
#[derive(Debug)]
pub struct Pki {
    issuer: Issuer<'static, KeyPair>,
    ca_cert: PathBuf,
    dir: TempDir,
}

impl Pki {
    /// A new CA called `name` (its common name), as `ovs-pki init` makes one.
    pub fn new(name: &str) -> Result<Self, HarnessError> {
        let dir = tempfile::Builder::new()
            .prefix("ovn-pki.")
            .tempdir_in("/tmp")
            .map_err(|source| HarnessError::Io {
                path: PathBuf::from("/tmp"),
                source,
            })?;
        let key = KeyPair::generate().map_err(|e| pki_error("generating the CA key", e))?;
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params
            .self_signed(&key)
            .map_err(|e| pki_error("self-signing the CA", e))?;
        let ca_cert = dir.path().join("cacert.pem");
        write(&ca_cert, cert.pem().as_bytes())?;
        Ok(Pki {
            issuer: Issuer::new(params, key),
            ca_cert,
            dir,
        })
    }

    /// The CA certificate (`cacert.pem`).
    pub fn ca_cert(&self) -> &Path {
        &self.ca_cert
    }

    /// A new key and a certificate for `CN=common_name` signed by this CA, as
    /// `ovs-pki req+sign NAME` makes them: `NAME-privkey.pem` and `NAME-cert.pem`.
    pub fn issue(&self, common_name: &str) -> Result<TlsFiles, HarnessError> {
        let key = KeyPair::generate().map_err(|e| pki_error("generating a key", e))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| pki_error("signing a certificate", e))?;
        let files = TlsFiles {
            private_key: self.dir.path().join(format!("{common_name}-privkey.pem")),
            certificate: self.dir.path().join(format!("{common_name}-cert.pem")),
            ca_cert: self.ca_cert.clone(),
        };
        write(&files.private_key, key.serialize_pem().as_bytes())?;
        write(&files.certificate, cert.pem().as_bytes())?;
        Ok(files)
    }

    /// The directory holding the CA's and the issued files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

fn pki_error(what: &str, e: rcgen::Error) -> HarnessError {
    HarnessError::Unexpected(format!("test PKI: {what}: {e}"))
}

fn write(path: &Path, contents: &[u8]) -> Result<(), HarnessError> {
    std::fs::write(path, contents).map_err(|source| HarnessError::Io {
        path: path.to_owned(),
        source,
    })
}

/// A certificate authority made with the `openssl` commands `ovs-pki` runs (`openssl
/// ca` with no extension section): X.509 **v1** certificates, RSA 2048, SHA-512, as a
/// Kube-OVN cluster with `ENABLE_SSL` has them.
#[derive(Debug)]
pub struct OvsPki {
    ca_cert: PathBuf,
    dir: TempDir,
}

/// The request configuration `ovs-pki` writes for the CA and for each certificate.
const OVS_PKI_REQ: &str = "[ req ]\nprompt = no\ndistinguished_name = dn\n[ dn ]\nC = US\n\
    ST = CA\nL = Palo Alto\nO = Open vSwitch\nOU = Open vSwitch certifier\nCN = ";

/// The CA section of `ovs-pki`'s `ca.cnf` (digest as in current OVS).
const OVS_PKI_CA: &str = "[ ca ]\ndefault_ca = the_ca\n[ the_ca ]\ndir = .\n\
    database = $dir/index.txt\nnew_certs_dir = $dir/newcerts\ncertificate = $dir/cacert.pem\n\
    serial = $dir/serial\nprivate_key = $dir/cakey.pem\ndefault_days = 365\n\
    default_md = sha512\npolicy = policy\nemail_in_dn = no\ncopy_extensions = none\n\
    unique_subject = no\n[ policy ]\norganizationName = match\ncommonName = supplied\n";

impl OvsPki {
    /// `ovs-pki init`: a self-signed v1 CA called `name`.
    pub fn new(name: &str) -> Result<Self, HarnessError> {
        let dir = tempfile::Builder::new()
            .prefix("ovs-pki.")
            .tempdir_in("/tmp")
            .map_err(|source| HarnessError::Io {
                path: PathBuf::from("/tmp"),
                source,
            })?;
        let d = dir.path();
        std::fs::create_dir(d.join("newcerts")).map_err(|source| HarnessError::Io {
            path: d.join("newcerts"),
            source,
        })?;
        write(&d.join("index.txt"), b"")?;
        write(&d.join("serial"), b"01\n")?;
        write(
            &d.join("ca.cnf"),
            format!("{OVS_PKI_REQ}{name}\n{OVS_PKI_CA}").as_bytes(),
        )?;
        openssl(
            d,
            "req -config ca.cnf -nodes -newkey rsa:2048 -keyout cakey.pem -out careq.pem",
        )?;
        openssl(
            d,
            "ca -config ca.cnf -create_serial -out cacert.pem -days 2191 -batch \
             -keyfile cakey.pem -selfsign -infiles careq.pem",
        )?;
        Ok(OvsPki {
            ca_cert: d.join("cacert.pem"),
            dir,
        })
    }

    /// The CA certificate (`cacert.pem`).
    pub fn ca_cert(&self) -> &Path {
        &self.ca_cert
    }

    /// `ovs-pki req+sign NAME`: `NAME-privkey.pem` and a v1 `NAME-cert.pem` for
    /// `CN=common_name`.
    pub fn issue(&self, common_name: &str) -> Result<TlsFiles, HarnessError> {
        let d = self.dir.path();
        write(
            &d.join(format!("{common_name}-req.cnf")),
            format!("{OVS_PKI_REQ}{common_name}\n").as_bytes(),
        )?;
        let n = common_name;
        openssl(d, &format!("genrsa -out {n}-privkey.pem 2048"))?;
        openssl(
            d,
            &format!("req -config {n}-req.cnf -new -key {n}-privkey.pem -out {n}-req.pem"),
        )?;
        openssl(
            d,
            &format!("ca -config ca.cnf -batch -in {n}-req.pem -out {n}-cert.pem"),
        )?;
        Ok(TlsFiles {
            private_key: d.join(format!("{n}-privkey.pem")),
            certificate: d.join(format!("{n}-cert.pem")),
            ca_cert: self.ca_cert.clone(),
        })
    }
}

/// Runs `openssl ARGS` (space-separated, no quoting needed) in `dir`.
fn openssl(dir: &Path, args: &str) -> Result<(), HarnessError> {
    let output = std::process::Command::new("openssl")
        .args(args.split_whitespace())
        .current_dir(dir)
        .output()
        .map_err(|source| HarnessError::Spawn {
            program: "openssl".into(),
            source,
        })?;
    if output.status.success() {
        return Ok(());
    }
    Err(HarnessError::CommandFailed {
        command: format!("openssl {args}"),
        status: output.status.to_string(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}
