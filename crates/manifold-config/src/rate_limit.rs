//! `[[rate_limit]]`: per-caller rate limits (GCRA) and concurrency caps on
//! `tools/call`. The file model and its validated form; the buckets themselves
//! live in manifold-policy.
//!
//! Invariants: a validated rule limits something (a rate, a concurrency cap or
//! both); `who` entries are `*`, `subject:…`, `cert:…`, `group:…`, `scope:…` or `key:…`;
//! `rate` is `N/s`, `N/m` or `N/h` with N > 0.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `[[rate_limit]]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSection {
    /// Whom the rule applies to: `*`, `subject:<source>:<sub>` (or `subject:<sub>`
    /// with one identity source), `cert:<type>:<name>`, `group:<g>`, `scope:<s>`,
    /// `key:<api key name>`.
    pub who: Vec<String>,
    /// Exposed tool-name globs (default `["*"]`).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// One bucket per `"principal"` (default), per `"group"` (the caller's
    /// first), or one `"global"` bucket.
    #[serde(default)]
    pub key: Option<String>,
    /// `N/s`, `N/m` or `N/h`.
    #[serde(default)]
    pub rate: Option<String>,
    /// Calls allowed at once above the rate (default: N of `rate`).
    #[serde(default)]
    pub burst: Option<u32>,
    /// Calls in flight per bucket.
    #[serde(default)]
    pub concurrency: Option<usize>,
}

/// How a rule's buckets are keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketKey {
    Principal,
    Group,
    Global,
}

/// One validated `[[rate_limit]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitRule {
    pub who: Vec<String>,
    pub tools: Vec<String>,
    pub key: BucketKey,
    /// Calls per `per`.
    pub rate: Option<(u32, Duration)>,
    pub burst: u32,
    pub concurrency: Option<usize>,
}

pub(crate) fn validate(rules: &[RateLimitSection]) -> Result<Vec<RateLimitRule>, String> {
    rules.iter().enumerate().map(|(i, r)| rule(i, r)).collect()
}

fn rule(i: usize, r: &RateLimitSection) -> Result<RateLimitRule, String> {
    let at = format!("rate_limit[{i}]");
    crate::policy::check_who(&at, &r.who)?;
    let key = match r.key.as_deref().unwrap_or("principal") {
        "principal" => BucketKey::Principal,
        "group" => BucketKey::Group,
        "global" => BucketKey::Global,
        other => {
            return Err(format!(
                "key `{at}.key`: `{other}` is not \"principal\", \"group\" or \"global\""
            ))
        }
    };
    let rate = match &r.rate {
        None => None,
        Some(text) => Some(parse_rate(text).ok_or_else(|| {
            format!("key `{at}.rate`: `{text}` is not `N/s`, `N/m` or `N/h` with N > 0")
        })?),
    };
    if rate.is_none() && r.concurrency.is_none() {
        return Err(format!("key `{at}`: give `rate`, `concurrency`, or both"));
    }
    if r.burst.is_some() && rate.is_none() {
        return Err(format!(
            "key `{at}.burst`: only means something with `rate`"
        ));
    }
    if r.burst == Some(0) || r.concurrency == Some(0) {
        return Err(format!(
            "key `{at}`: `burst` and `concurrency` must be at least 1"
        ));
    }
    Ok(RateLimitRule {
        who: r.who.clone(),
        tools: r.tools.clone().unwrap_or_else(|| vec!["*".into()]),
        key,
        burst: r.burst.or(rate.map(|(n, _)| n)).unwrap_or(1),
        rate,
        concurrency: r.concurrency,
    })
}

fn parse_rate(text: &str) -> Option<(u32, Duration)> {
    let (n, unit) = text.trim().split_once('/')?;
    let n: u32 = n.trim().parse().ok().filter(|n| *n > 0)?;
    let per = match unit.trim() {
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        _ => return None,
    };
    Some((n, per))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(who: &[&str]) -> RateLimitSection {
        RateLimitSection {
            who: who.iter().map(|s| s.to_string()).collect(),
            tools: None,
            key: None,
            rate: Some("10/s".into()),
            burst: None,
            concurrency: None,
        }
    }

    #[test]
    fn rules_are_checked_and_defaulted() {
        let r = validate(&[section(&["*"])]).expect("valid");
        assert_eq!(r[0].rate, Some((10, Duration::from_secs(1))));
        assert_eq!((r[0].burst, r[0].key), (10, BucketKey::Principal));
        assert_eq!(r[0].tools, ["*"]);
        let bad = [
            RateLimitSection {
                who: vec![],
                ..section(&[])
            },
            section(&["ops"]),
            section(&["group:"]),
            RateLimitSection {
                rate: Some("0/s".into()),
                ..section(&["*"])
            },
            RateLimitSection {
                rate: Some("10/d".into()),
                ..section(&["*"])
            },
            RateLimitSection {
                rate: None,
                ..section(&["*"])
            },
            RateLimitSection {
                key: Some("ip".into()),
                ..section(&["*"])
            },
            RateLimitSection {
                concurrency: Some(0),
                ..section(&["*"])
            },
        ];
        for b in bad {
            assert!(validate(std::slice::from_ref(&b)).is_err(), "{b:?}");
        }
        let c = RateLimitSection {
            rate: None,
            concurrency: Some(2),
            ..section(&["key:ci"])
        };
        assert_eq!(validate(&[c]).expect("valid")[0].concurrency, Some(2));
    }
}
