//! DNS-rebinding and cross-site protection, for both listeners: whether a
//! request's `Host` (or HTTP/2 `:authority`) and `Origin` are ones the
//! listener answers. The MCP endpoint (`http`) reads its rules from
//! `[server]`, the admin listener (`admin::auth`) from `[admin]`.
//!
//! A rebinding page controls both `Host` and `Origin` (they name its own
//! domain), so neither proves anything about the other:
//! - `Host` must be listed (`"*"`: any); a loopback listener also accepts
//!   loopback hosts; with [`Rules::literal_hosts`] any IP literal and
//!   `localhost` are accepted too, on any listener — a rebinding page always
//!   arrives with its own domain name, never with an address;
//! - an `Origin`, when sent, must be listed; a loopback listener also accepts
//!   loopback origins.
//!
//! Not here: what a refusal looks like (each listener frames its own).

use http::HeaderMap;

/// What a listener accepts.
pub(crate) struct Rules<'a> {
    /// The listener is bound to a loopback address.
    pub loopback_listener: bool,
    pub allowed_hosts: &'a [String],
    pub allowed_origins: &'a [String],
    /// Also accept any `Host` that is an IP literal or `localhost`.
    pub literal_hosts: bool,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// A loopback listener, and a `Host` that is neither loopback nor listed.
    HostNotAllowed(String),
    /// Any other listener, and a `Host` it does not list.
    HostNotListed(String),
    OriginNotAllowed(String),
}

/// Checks `Host` (`authority` when the header is absent) and `Origin`.
pub(crate) fn check(
    rules: &Rules<'_>,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), Rejected> {
    let host = headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .or(authority)
        .unwrap_or("");
    let name = host_part(host);
    let host_listed = rules
        .allowed_hosts
        .iter()
        .any(|h| h == "*" || h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(name));
    let literal = rules.literal_hosts
        && !name.is_empty()
        && (is_loopback_host(name) || name.parse::<std::net::IpAddr>().is_ok());
    if rules.loopback_listener {
        if !host.is_empty() && !is_loopback_host(name) && !host_listed && !literal {
            return Err(Rejected::HostNotAllowed(host.to_string()));
        }
    } else if !host_listed && !literal {
        return Err(Rejected::HostNotListed(host.to_string()));
    }
    if let Some(origin) = headers.get(http::header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let authority = origin
            .split_once("://")
            .map(|(_, rest)| rest.trim_end_matches('/'))
            .unwrap_or("");
        let listed = rules.allowed_origins.iter().any(|o| {
            o.trim_end_matches('/')
                .eq_ignore_ascii_case(origin.trim_end_matches('/'))
        });
        let loopback_origin = rules.loopback_listener && is_loopback_host(host_part(authority));
        if !(listed || loopback_origin) {
            return Err(Rejected::OriginNotAllowed(origin.to_string()));
        }
    }
    Ok(())
}

fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Splits `host[:port]` (IPv6 in brackets) and returns the host part.
fn host_part(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(authority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_parsing() {
        for (auth, host) in [
            ("localhost:8080", "localhost"),
            ("127.0.0.1", "127.0.0.1"),
            ("[::1]:9", "::1"),
            ("evil.example.com", "evil.example.com"),
        ] {
            assert_eq!(host_part(auth), host);
        }
        assert!(is_loopback_host("localhost"));
        assert!(is_loopback_host("127.0.0.2"));
        assert!(is_loopback_host("::1"));
        assert!(!is_loopback_host("evil.example.com"));
        assert!(!is_loopback_host("localhost.evil.com"));
    }

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::HOST, host.parse().unwrap());
        if let Some(o) = origin {
            h.insert(http::header::ORIGIN, o.parse().unwrap());
        }
        h
    }

    #[test]
    fn literal_hosts_accept_addresses_and_localhost_but_never_a_name() {
        let listed = vec!["admin.internal".to_string()];
        let rules = |loopback_listener, literal_hosts| Rules {
            loopback_listener,
            allowed_hosts: &listed,
            allowed_origins: &[],
            literal_hosts,
        };
        for loopback in [true, false] {
            let r = rules(loopback, true);
            for ok in [
                "10.1.2.3:9090",
                "[fd00::1]:9090",
                "localhost:9090",
                "admin.internal:9090",
            ] {
                assert_eq!(check(&r, &headers(ok, None), None), Ok(()), "{ok}");
            }
            for bad in ["attacker.example:9090", "10.1.2.3.nip.io:9090"] {
                assert!(check(&r, &headers(bad, None), None).is_err(), "{bad}");
            }
            assert_eq!(
                check(
                    &r,
                    &headers("10.1.2.3:9090", Some("http://attacker.example")),
                    None
                ),
                Err(Rejected::OriginNotAllowed("http://attacker.example".into()))
            );
        }
        // Without `literal_hosts` (the MCP endpoint), a non-loopback listener
        // answers only the hosts it lists.
        let mcp = rules(false, false);
        assert_eq!(
            check(&mcp, &headers("10.1.2.3:8080", None), None),
            Err(Rejected::HostNotListed("10.1.2.3:8080".into()))
        );
    }
}
