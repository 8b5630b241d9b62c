//! Waiting on conditions, never on the clock: [`eventually`] asks a check
//! again until it holds (or says it never will), [`nothing_within`] asserts
//! that something does not happen in a window. Every test waits through these
//! (or a bounded wait of the harness's own), so a wait is always bounded and a
//! failure says what was awaited.
//!
//! Invariants: every wait has a bound its caller names; a check is asked again
//! every [`POLL`], and once more after the bound (a condition that became true
//! as time ran out is not reported as a failure).
//!
//! Not here: waiting for a stream's messages (`harness::MessageStream`, which
//! uses [`nothing_within`]'s rule for its own).

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

/// How often a check is asked again.
pub const POLL: Duration = Duration::from_millis(20);

/// Waits until `check` gives `Some(value)`: asked every [`POLL`], at most
/// `within`. `Ok(None)` from the check means "not yet"; `Err` ends the wait
/// at once (the condition cannot hold any more, or asking failed).
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let last = tokio::time::Instant::now() >= deadline;
        if let Some(v) = check().await? {
            return Ok(v);
        }
        if last {
            bail!("{what}: not within {within:?}");
        }
        tokio::time::sleep(
            POLL.min(deadline.saturating_duration_since(tokio::time::Instant::now())),
        )
        .await;
    }
}

/// [`eventually`] for a plain condition.
pub async fn until(what: &str, within: Duration, mut holds: impl FnMut() -> bool) -> Result<()> {
    eventually(what, within, || {
        let held = holds();
        async move { Ok(held.then_some(())) }
    })
    .await
}

/// [`eventually`] for code without a runtime (a test of a child process
/// driven by `std::process`).
pub fn eventually_blocking<T>(
    what: &str,
    within: Duration,
    mut check: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + within;
    loop {
        let last = Instant::now() >= deadline;
        if let Some(v) = check()? {
            return Ok(v);
        }
        if last {
            bail!("{what}: not within {within:?}");
        }
        std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
    }
}

/// Asserts that `arrival` does not complete within `within` (nothing arrives):
/// `Ok` when the window passes; an error naming `what` and what arrived
/// otherwise.
pub async fn nothing_within<T: std::fmt::Debug>(
    what: &str,
    within: Duration,
    arrival: impl Future<Output = T>,
) -> Result<()> {
    match tokio::time::timeout(within, arrival).await {
        Err(_) => Ok(()),
        Ok(got) => bail!("{what}: {got:?} arrived within {within:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn eventually_holds_fails_and_stops_early() {
        let n = AtomicUsize::new(0);
        let got = eventually("the third ask", Duration::from_secs(5), || {
            let k = n.fetch_add(1, Ordering::SeqCst);
            async move { Ok((k >= 2).then_some(k)) }
        })
        .await
        .unwrap();
        assert_eq!(got, 2);
        let e = until("never", Duration::from_millis(60), || false)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("never: not within"), "{e}");
        // An error ends the wait at once.
        let started = Instant::now();
        let e = eventually::<(), _, _>("broken", Duration::from_secs(5), || async {
            bail!("cannot ask")
        })
        .await
        .unwrap_err();
        assert!(e.to_string().contains("cannot ask"));
        assert!(started.elapsed() < Duration::from_secs(1));
        let blocking = eventually_blocking("at once", Duration::from_millis(10), || Ok(Some(1)));
        assert_eq!(blocking.unwrap(), 1);
    }

    #[tokio::test]
    async fn nothing_within_fails_when_something_arrives() {
        nothing_within(
            "quiet",
            Duration::from_millis(30),
            std::future::pending::<()>(),
        )
        .await
        .unwrap();
        let e = nothing_within("noisy", Duration::from_secs(5), async { 7 })
            .await
            .unwrap_err();
        assert!(e.to_string().contains("noisy: 7 arrived"), "{e}");
    }
}
