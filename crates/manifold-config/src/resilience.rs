//! `[upstreams.<name>] retries` and `[upstreams.<name>.breaker]`: how hard
//! Manifold tries a flaky upstream and when it stops trying for a while.
//!
//! - `retries = {max = 2, budget = 0.1}`: a call of a tool that may be
//!   repeated (its `readOnlyHint` or `idempotentHint`, or an override's
//!   `retry = true`) is sent again after a failure that happened before the
//!   upstream could have acted or that is transient, at most `max` more times,
//!   and only while the upstream's retries stay within `budget` (a share of
//!   its requests over a sliding window, plus a small floor).
//! - `breaker`: after `failures` failures in a row, or a share of failures
//!   over `error_ratio` among at least `failures` calls in `window`, calls
//!   fail at once for `open_for`; then one call probes.
//!
//! A reload may change either (the upstream is restarted, its counts start
//! afresh): nothing here is fixed at start.
//!
//! Invariants: validated values are in range (`max` ≤ [`MAX_RETRY_MAX`],
//! `budget` and `error_ratio` in 0..=1, durations above zero).
//!
//! Not here: doing it (manifold-upstream `retry`, `breaker`), which calls may
//! be repeated (manifold-server's relay).

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::limits::duration;

/// Default `retries.max`: further attempts after the first.
pub const DEFAULT_RETRY_MAX: u32 = 2;
/// Default `retries.budget`: retries may add at most this share of the
/// upstream's requests.
pub const DEFAULT_RETRY_BUDGET: f64 = 0.1;
/// The most `retries.max` may be: more is a retry storm by configuration.
pub const MAX_RETRY_MAX: u32 = 10;
/// Default `breaker.failures`.
pub const DEFAULT_BREAKER_FAILURES: u32 = 5;
/// Default `breaker.window`.
pub const DEFAULT_BREAKER_WINDOW: &str = "30s";
/// Default `breaker.error_ratio`.
pub const DEFAULT_BREAKER_ERROR_RATIO: f64 = 0.5;
/// Default `breaker.open_for`.
pub const DEFAULT_BREAKER_OPEN_FOR: &str = "10s";

/// `retries = {max, budget}` as written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct RetriesSection {
    /// Further attempts after the first (`DEFAULT_RETRY_MAX`); 0 turns
    /// retries off.
    pub max: Option<u32>,
    /// Retries may add at most this share of the upstream's requests over the
    /// budget's window, plus a small floor (`DEFAULT_RETRY_BUDGET`).
    pub budget: Option<f64>,
}

/// `[upstreams.<name>.breaker]` as written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct BreakerSection {
    /// Failures in a row that open the breaker (`DEFAULT_BREAKER_FAILURES`);
    /// also the fewest calls in `window` for `error_ratio` to count.
    pub failures: Option<u32>,
    /// The window `error_ratio` is measured over (`DEFAULT_BREAKER_WINDOW`).
    pub window: Option<String>,
    /// The share of failed calls in `window` that opens the breaker
    /// (`DEFAULT_BREAKER_ERROR_RATIO`).
    pub error_ratio: Option<f64>,
    /// How long an open breaker fails calls at once before one call probes
    /// (`DEFAULT_BREAKER_OPEN_FOR`).
    pub open_for: Option<String>,
}

/// Validated `retries`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    pub max: u32,
    pub budget: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max: DEFAULT_RETRY_MAX,
            budget: DEFAULT_RETRY_BUDGET,
        }
    }
}

/// Validated `breaker`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerPolicy {
    pub failures: u32,
    pub window: Duration,
    pub error_ratio: f64,
    pub open_for: Duration,
}

fn ratio(key: &str, v: f64) -> Result<f64, String> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("key `{key}`: {v} must be between 0 and 1"))
    }
}

fn positive(key: &str, v: &str) -> Result<Duration, String> {
    let d = duration(key, v)?;
    if d.is_zero() {
        return Err(format!("key `{key}`: must be greater than 0"));
    }
    Ok(d)
}

/// `retries` of upstream `key` (`upstreams.<name>`); `None` when not written.
pub(crate) fn retries(
    key: &str,
    s: Option<&RetriesSection>,
) -> Result<Option<RetryPolicy>, String> {
    let Some(s) = s else { return Ok(None) };
    let max = s.max.unwrap_or(DEFAULT_RETRY_MAX);
    if max > MAX_RETRY_MAX {
        return Err(format!(
            "key `{key}.retries.max`: {max} is more than {MAX_RETRY_MAX}"
        ));
    }
    let budget = ratio(
        &format!("{key}.retries.budget"),
        s.budget.unwrap_or(DEFAULT_RETRY_BUDGET),
    )?;
    Ok(Some(RetryPolicy { max, budget }))
}

/// `breaker` of upstream `key`; `None` when not written.
pub(crate) fn breaker(
    key: &str,
    s: Option<&BreakerSection>,
) -> Result<Option<BreakerPolicy>, String> {
    let Some(s) = s else { return Ok(None) };
    let failures = s.failures.unwrap_or(DEFAULT_BREAKER_FAILURES);
    if failures == 0 {
        return Err(format!(
            "key `{key}.breaker.failures`: must be greater than 0"
        ));
    }
    Ok(Some(BreakerPolicy {
        failures,
        window: positive(
            &format!("{key}.breaker.window"),
            s.window.as_deref().unwrap_or(DEFAULT_BREAKER_WINDOW),
        )?,
        error_ratio: ratio(
            &format!("{key}.breaker.error_ratio"),
            s.error_ratio.unwrap_or(DEFAULT_BREAKER_ERROR_RATIO),
        )?,
        open_for: positive(
            &format!("{key}.breaker.open_for"),
            s.open_for.as_deref().unwrap_or(DEFAULT_BREAKER_OPEN_FOR),
        )?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_errors_name_the_key() {
        let r = retries("upstreams.u", Some(&RetriesSection::default()))
            .unwrap()
            .unwrap();
        assert_eq!(r, RetryPolicy::default());
        assert_eq!(retries("upstreams.u", None).unwrap(), None);
        let e = retries(
            "upstreams.u",
            Some(&RetriesSection {
                max: Some(11),
                budget: None,
            }),
        )
        .unwrap_err();
        assert!(e.starts_with("key `upstreams.u.retries.max`"), "{e}");
        let e = retries(
            "upstreams.u",
            Some(&RetriesSection {
                max: None,
                budget: Some(1.5),
            }),
        )
        .unwrap_err();
        assert!(e.starts_with("key `upstreams.u.retries.budget`"), "{e}");
        let b = breaker("upstreams.u", Some(&BreakerSection::default()))
            .unwrap()
            .unwrap();
        assert_eq!(
            (b.failures, b.window, b.error_ratio, b.open_for),
            (5, Duration::from_secs(30), 0.5, Duration::from_secs(10))
        );
        for (s, key) in [
            (
                BreakerSection {
                    failures: Some(0),
                    ..Default::default()
                },
                "failures",
            ),
            (
                BreakerSection {
                    window: Some("0s".into()),
                    ..Default::default()
                },
                "window",
            ),
            (
                BreakerSection {
                    error_ratio: Some(-0.1),
                    ..Default::default()
                },
                "error_ratio",
            ),
            (
                BreakerSection {
                    open_for: Some("soon".into()),
                    ..Default::default()
                },
                "open_for",
            ),
        ] {
            let e = breaker("upstreams.u", Some(&s)).unwrap_err();
            assert!(
                e.starts_with(&format!("key `upstreams.u.breaker.{key}`")),
                "{e}"
            );
        }
    }
}
