//! Where a running gateway's credential requests may not go on their own:
//! loopback, link-local, private (RFC 1918, unique local), shared (CGNAT),
//! unspecified, multicast, reserved and documentation addresses, IPv6 forms
//! that embed one (mapped, compatible, NAT64, 6to4), and this host's own
//! addresses (its listeners among them).
//!
//! [`Guarded`] is the resolver of the guarded client (`http`): it resolves a
//! name and keeps only the addresses [`refused`] lets through, so the check is
//! made on the addresses the connection then uses (no second lookup an
//! attacker's DNS could answer differently). IP literals never reach a
//! resolver; `http::send` checks them with [`refused`] before the request.
//!
//! Invariants: a name with no address left is an error carrying
//! [`REFUSAL_MARK`] (the caller reports it as a refusal, not an outage);
//! nothing here is consulted for origins written in the configuration.
//!
//! Not here: which origins are written (`http::Client`).

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::Name;

/// Words every refusal of the guard carries (how `http::send` tells it from
/// a failed lookup).
pub(crate) const REFUSAL_MARK: &str = "not sending a credential request to";

/// Why a credential request may not go to `ip` unless its origin is written
/// in the configuration; `None`: a public address of another host.
pub(crate) fn refused(ip: IpAddr) -> Option<String> {
    let kind = match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    };
    match kind {
        Some(k) => Some(format!("{ip} ({k} address)")),
        None if is_own(ip) => Some(format!("{ip} (an address of this host)")),
        None => None,
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (127, _, _) => "a loopback",
        (0, _, _) => "an unspecified",
        (10, _, _) | (192, 168, _) => "a private",
        (172, b, _) if (16..32).contains(&b) => "a private",
        (169, 254, _) => "a link-local",
        (100, b, _) if (64..128).contains(&b) => "a shared (CGNAT)",
        (192, 0, 0) => "an IETF protocol",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation",
        (198, 18 | 19, _) => "a benchmarking",
        (224..=239, _, _) => "a multicast",
        (240..=255, _, _) => "a reserved",
        _ => return None,
    })
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_loopback() {
        return Some("a loopback");
    }
    if ip.is_unspecified() {
        return Some("an unspecified");
    }
    let s = ip.segments();
    // Forms that embed an IPv4 address: mapped (::ffff:a.b.c.d), compatible
    // (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002:aabb:ccdd::/16).
    let embedded = if let Some(v4) = ip.to_ipv4_mapped() {
        Some(v4)
    } else if s[..6] == [0; 6] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ))
    } else if s[0] == 0x2002 {
        Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ))
    } else {
        None
    };
    if let Some(kind) = embedded.and_then(v4_kind) {
        return Some(kind);
    }
    Some(match s[0] {
        x if x & 0xfe00 == 0xfc00 => "a unique local (private)",
        x if x & 0xffc0 == 0xfe80 => "a link-local",
        x if x & 0xffc0 == 0xfec0 => "a site-local (private)",
        x if x & 0xff00 == 0xff00 => "a multicast",
        0x2001 if s[1] == 0x0db8 => "a documentation",
        0x0100 if s[1..4] == [0, 0, 0] => "a discard-only",
        _ => return None,
    })
}

/// Whether `ip` is an address of this host: a socket can be bound to it. An
/// address that can never be local (TEST-NET-1) is tried first: where the
/// kernel lets any address be bound (`ip_nonlocal_bind`), the test tells
/// nothing and is skipped (public addresses of other hosts stay reachable).
fn is_own(ip: IpAddr) -> bool {
    let probe = |ip: IpAddr| UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok();
    let never_local = match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
    };
    probe(ip) && !probe(never_local)
}

/// The guarded client's resolver: the system's lookup, then [`refused`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Guarded;

impl tower_service::Service<Name> for Guarded {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut why = Vec::new();
            let mut kept = Vec::new();
            for a in found {
                match refused(a.ip()) {
                    Some(w) => why.push(w),
                    None => kept.push(a),
                }
            }
            if kept.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "{REFUSAL_MARK} `{host}`: it resolves to {}; only an origin written in the configuration (auth.issuer, auth.token_endpoint) is reached there",
                        if why.is_empty() {
                            "no address".to_string()
                        } else {
                            why.join(", ")
                        }
                    ),
                ));
            }
            Ok(kept.into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_addresses_are_refused_and_public_ones_are_not() {
        for ip in [
            "127.0.0.1",
            "127.8.9.10",
            "0.0.0.0",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.2.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd12:3456::1",
            "fc00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:db8::1",
        ] {
            let ip: IpAddr = ip.parse().expect(ip);
            assert!(refused(ip).is_some(), "{ip} was let through");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            let ip: IpAddr = ip.parse().expect(ip);
            assert_eq!(refused(ip), None, "{ip}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused() {
        use tower_service::Service;
        let name: Name = "localhost".parse().expect("name");
        let e = Guarded.call(name).await.expect_err("localhost resolved");
        assert!(e.to_string().contains("loopback"), "{e}");
        assert!(e.to_string().contains(REFUSAL_MARK), "{e}");
    }
}
