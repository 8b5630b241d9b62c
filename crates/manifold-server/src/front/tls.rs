//! HTTPS on the listener (`[server.tls]`): rustls with the aws-lc-rs provider,
//! TLS 1.2 and 1.3, HTTP/1.1 and HTTP/2 by ALPN. With `client_ca`, client
//! certificates are verified against it (and against the revocation lists of
//! `client_crl`: a revoked certificate fails the handshake) and the
//! certificate's name becomes the connection's principal, tagged with its
//! type: `cert:cn:<CN>`, or, without a CN, `cert:dns:…`, `cert:email:…` or
//! `cert:uri:…` for the first such subject alternative name.
//!
//! The certificate, key, CA and CRL files are read again when they change
//! (checked every [`RELOAD_CHECK`]): new connections get the new ones; a file
//! that fails to load is logged and the previous configuration kept. A
//! revocation list past its `nextUpdate` is stale, and no one can tell
//! whether what it does not name was revoked since: certificates of its
//! issuer are refused at the handshake until it is renewed (logged at load,
//! and once when it passes while in use).
//!
//! Invariants: a handshake is bounded by `limits.header_read_timeout`; the
//! principal comes only from a certificate rustls verified; with CRLs, a
//! certificate whose revocation status they cannot tell (no CRL from its
//! issuer) is refused, not waved through.
//!
//! Not here: bearer tokens (`auth`), what a principal may do.

use parking_lot::Mutex;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use manifold_config::TlsConfig;
use manifold_policy::Identity;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// How often the certificate files are checked for changes.
pub const RELOAD_CHECK: Duration = Duration::from_secs(5);

/// The listener's TLS: the current acceptor, replaced when the files change.
pub(crate) struct Tls {
    config: TlsConfig,
    acceptor: Mutex<(TlsAcceptor, Stamps)>,
    /// The earliest `nextUpdate` of the revocation lists in use, until it
    /// passes and is logged.
    crl_due: Mutex<Option<SystemTime>>,
}

/// The earliest `nextUpdate` among the lists of `files` still to come (one
/// already past was logged when the list was read).
fn next_crl_update(files: &[std::path::PathBuf]) -> Option<SystemTime> {
    files
        .iter()
        .filter_map(|p| CertificateRevocationListDer::pem_file_iter(p).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|crl| {
            let (_, c) = x509_parser::parse_x509_crl(crl.as_ref()).ok()?;
            let secs = u64::try_from(c.next_update()?.timestamp()).ok()?;
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        })
        .filter(|t| *t > SystemTime::now())
        .min()
}

/// Whether a list due at `*due` has passed by `now`; says so once per list
/// (the next date is then `next()`: the next list's).
fn crl_overdue(
    due: &Mutex<Option<SystemTime>>,
    now: SystemTime,
    next: impl FnOnce() -> Option<SystemTime>,
) -> bool {
    let mut due = due.lock();
    if due.is_some_and(|d| now >= d) {
        *due = next();
        return true;
    }
    false
}

/// The files' stamps, to notice a change (`manifold_foundation::watch`).
type Stamps = Vec<Option<manifold_foundation::watch::FileStamp>>;

fn stamps(c: &TlsConfig) -> Stamps {
    [Some(&c.cert), Some(&c.key), c.client_ca.as_ref()]
        .into_iter()
        .flatten()
        .chain(&c.client_crl)
        .map(|p| manifold_foundation::watch::FileStamp::seen(p))
        .collect()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{what} `{}`: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{what} `{}`: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{what} `{}` holds no PEM certificate",
            path.display()
        ));
    }
    Ok(certs)
}

/// The revocation lists of one `client_crl` file; a list whose `nextUpdate`
/// has passed is logged (the handshake refuses the certificates it covers),
/// so it gets renewed.
fn read_crls(path: &Path) -> Result<Vec<CertificateRevocationListDer<'static>>, String> {
    let what = "server.tls.client_crl";
    let crls: Vec<_> = CertificateRevocationListDer::pem_file_iter(path)
        .map_err(|e| format!("{what} `{}`: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{what} `{}`: {e}", path.display()))?;
    if crls.is_empty() {
        return Err(format!(
            "{what} `{}` holds no PEM revocation list (`-----BEGIN X509 CRL-----`)",
            path.display()
        ));
    }
    for crl in &crls {
        let next = x509_parser::parse_x509_crl(crl.as_ref())
            .ok()
            .and_then(|(_, c)| c.next_update());
        if next.is_some_and(|n| n < x509_parser::time::ASN1Time::now()) {
            tracing::error!(file = %path.display(),
                "server.tls.client_crl: a revocation list is past its nextUpdate: client certificates of its issuer are refused until it is renewed");
        }
    }
    Ok(crls)
}

/// Builds the rustls configuration from the files.
fn load(c: &TlsConfig) -> Result<TlsAcceptor, String> {
    let certs = read_certs(&c.cert, "server.tls.cert")?;
    let key = PrivateKeyDer::from_pem_file(&c.key)
        .map_err(|e| format!("server.tls.key `{}`: {e}", c.key.display()))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &c.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in read_certs(ca, "server.tls.client_ca")? {
                roots
                    .add(cert)
                    .map_err(|e| format!("server.tls.client_ca `{}`: {e}", ca.display()))?;
            }
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider(),
            );
            let mut crls = Vec::new();
            for path in &c.client_crl {
                crls.extend(read_crls(path)?);
            }
            // rustls' revocation policy, relied on as it is by default: every
            // certificate of the chain is checked (not only the client's own),
            // a certificate whose issuer has no list here is refused (unknown
            // status is not waved through); and, enforced here, a list past
            // its nextUpdate refuses what it covers (`read_crls` and `watch`
            // log it).
            let v = if crls.is_empty() {
                v
            } else {
                v.with_crls(crls).enforce_revocation_expiration()
            };
            let v = if c.require_client_cert {
                v
            } else {
                v.allow_unauthenticated()
            };
            builder.with_client_cert_verifier(
                v.build()
                    .map_err(|e| format!("server.tls.client_ca / client_crl: {e}"))?,
            )
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("server.tls: the certificate and key do not fit: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

impl Tls {
    /// Loads the files; an error names the file and what is wrong.
    pub(crate) fn new(config: &TlsConfig) -> Result<Tls, String> {
        let acceptor = load(config)?;
        Ok(Tls {
            acceptor: Mutex::new((acceptor, stamps(config))),
            crl_due: Mutex::new(next_crl_update(&config.client_crl)),
            config: config.clone(),
        })
    }

    fn current(&self) -> TlsAcceptor {
        self.acceptor.lock().0.clone()
    }

    /// The handshake, within `limit`; the stream and the client's identity (if
    /// it presented a certificate `client_ca` vouches for).
    pub(crate) async fn accept(
        &self,
        stream: TcpStream,
        limit: Duration,
    ) -> Result<(TlsStream<TcpStream>, Option<Arc<Identity>>), String> {
        let handshake = self.current().accept(stream);
        let tls = match tokio::time::timeout(limit, handshake).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("TLS handshake failed: {e}")),
            Err(_) => {
                return Err("TLS handshake took longer than limits.header_read_timeout".into())
            }
        };
        let identity = tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|certs| certs.first())
            .and_then(|leaf| identity_of(leaf.as_ref()))
            .map(Arc::new);
        Ok((tls, identity))
    }

    /// Reloads the files when they change, until `stop`.
    pub(crate) async fn watch(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(RELOAD_CHECK) => {}
            }
            let next = || next_crl_update(&self.config.client_crl);
            if crl_overdue(&self.crl_due, SystemTime::now(), next) {
                tracing::error!("server.tls.client_crl: a revocation list in use passed its nextUpdate: client certificates of its issuer are refused until it is renewed");
            }
            let now = stamps(&self.config);
            let changed = self.acceptor.lock().1 != now;
            if !changed {
                continue;
            }
            match load(&self.config) {
                Ok(acceptor) => {
                    *self.acceptor.lock() = (acceptor, now);
                    *self.crl_due.lock() = next_crl_update(&self.config.client_crl);
                    tracing::info!(
                        "server.tls: certificate files changed; new connections use them"
                    );
                }
                Err(e) => {
                    // Keep the old ones, and do not retry until the files change again.
                    self.acceptor.lock().1 = now;
                    tracing::error!(error = %e, "server.tls: the changed files do not load; keeping the previous certificate");
                }
            }
        }
    }
}

/// The principal a verified client certificate names: its common name, else
/// its first DNS name, e-mail address or URI, each tagged with its type so
/// that a certificate for the host `alice` is not the person `alice`.
fn identity_of(der: &[u8]) -> Option<Identity> {
    use x509_parser::extensions::GeneralName;
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let cn = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|s| !s.is_empty())
        .map(|s| ("cn", s.to_owned()));
    let san = || {
        let names = cert.subject_alternative_name().ok()??;
        names.value.general_names.iter().find_map(|n| match n {
            GeneralName::DNSName(s) => Some(("dns", s.to_string())),
            GeneralName::RFC822Name(s) => Some(("email", s.to_string())),
            GeneralName::URI(s) => Some(("uri", s.to_string())),
            _ => None,
        })
    };
    let (kind, name) = cn.or_else(san)?;
    Some(Identity::certificate(kind, &name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{
        BasicConstraints, CertificateParams, CertificateRevocationListParams, IsCa, KeyIdMethod,
        KeyPair, SerialNumber,
    };

    /// A PEM revocation list of a fresh CA whose `nextUpdate` is `year`-01-01.
    fn crl(year: i32) -> String {
        let key = KeyPair::generate().expect("key");
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = p.self_signed(&key).expect("ca");
        CertificateRevocationListParams {
            this_update: rcgen::date_time_ymd(2001, 1, 1),
            next_update: rcgen::date_time_ymd(year, 1, 1),
            crl_number: SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs: Vec::new(),
            key_identifier_method: KeyIdMethod::Sha256,
        }
        .signed_by(&ca, &key)
        .expect("crl")
        .pem()
        .expect("pem")
    }

    #[test]
    fn a_list_in_use_that_passes_its_next_update_is_said_once() {
        let dir = std::env::temp_dir().join(format!("manifold-crl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (a, b) = (dir.join("a.pem"), dir.join("b.pem"));
        std::fs::write(&a, crl(2100) + &crl(2003)).expect("write");
        std::fs::write(&b, crl(2090)).expect("write");
        // The earliest still to come: 2003 has passed (logged at load).
        let due = next_crl_update(&[a.clone(), b.clone()]).expect("a date to come");
        let y2090 = SystemTime::UNIX_EPOCH + Duration::from_secs(3_786_912_000);
        assert_eq!(due, y2090);
        let due = Mutex::new(Some(due));
        let y2100 = SystemTime::UNIX_EPOCH + Duration::from_secs(4_102_444_800);
        assert!(!crl_overdue(&due, y2090 - Duration::from_secs(1), || None));
        assert!(
            crl_overdue(&due, y2090, || Some(y2100)),
            "said when it passes"
        );
        let later = y2090 + Duration::from_secs(5);
        assert!(!crl_overdue(&due, later, || None), "and only once");
        assert!(
            crl_overdue(&due, y2100, || None),
            "then the next list's date"
        );
        assert_eq!(next_crl_update(&[dir.join("missing.pem")]), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
