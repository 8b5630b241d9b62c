//! The replicas' shared logs (manifold-cluster `bus::shared`, which carries
//! `[integrity]`'s approvals) against a real `redis-server`, as the ACL user
//! docs/deploy.md recommends: appends racing from two replicas get distinct,
//! rising IDs and are all read back in order; a counter Redis lost or someone
//! lowered does not make IDs repeat; a reader takes nothing it read past. The
//! attacker's copies and a raised counter, seen through running replicas, are
//! in `integrity`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use manifold_cluster::{Bus, Envelope, Keys};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::bounded;
use crate::cluster_bus::redis_with_acl;
use crate::cluster_redis::Redis;

const KEY: &str = "shared-log-test-key-0123456789abcdef";

/// A Redis with the gateway's ACL user (`cluster_bus`); the URL of its
/// default user, and the gateway's.
async fn redis() -> Result<(Redis, String, String)> {
    let (redis, port) = redis_with_acl().await?;
    let admin = format!("redis://:default-password-0123@127.0.0.1:{port}");
    let gateway = format!("redis://manifold:acl-password-4567@127.0.0.1:{port}");
    Ok((redis, admin, gateway))
}

/// A replica's bus, connected; the receiver keeps its channel open.
async fn bus(url: &str, stop: &CancellationToken) -> Result<(Arc<Bus>, mpsc::Receiver<Envelope>)> {
    let bus = Bus::new(url, "manifold", Keys::new(KEY, &[]), None)?;
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(bus.clone().run(tx, stop.clone()));
    crate::eventually("the bus connected", Duration::from_secs(10), || async {
        Ok(bus.health().connected.then_some(()))
    })
    .await?;
    Ok((bus, rx))
}

#[tokio::test]
async fn appends_of_two_replicas_at_once_get_distinct_rising_ids_and_a_lost_counter_repeats_none(
) -> Result<()> {
    bounded(async {
        let (_redis, admin, url) = redis().await?;
        let stop = CancellationToken::new();
        let ((a, _ra), (b, _rb)) = (bus(&url, &stop).await?, bus(&url, &stop).await?);
        // Two replicas appending ten entries each at once (a replica appends
        // its own one after another, as the keeper shares its journal).
        let appends = [(a.clone(), 0), (b.clone(), 1)].map(|(bus, n)| async move {
            let mut ids = Vec::new();
            for i in 0..10 {
                let text = format!("entry {}", 2 * i + n);
                ids.push(bus.append_shared("t", &text, 0).await?);
            }
            anyhow::Ok(ids)
        });
        let [ids_a, ids_b] = futures_util::future::try_join_all(appends)
            .await?
            .try_into()
            .map_err(|_| anyhow::anyhow!("two replicas"))?;
        for ids in [&ids_a, &ids_b] {
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        }
        let mut ids = [ids_a, ids_b].concat();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 20, "IDs repeated: {ids:?}");
        let read = b.shared_since("t", 0).await?;
        let got: Vec<u64> = read.entries.iter().map(|(id, _)| *id).collect();
        assert_eq!(got, ids, "read back in the order of their IDs");
        assert_eq!(read.highest, 20);
        let mut texts: Vec<&str> = read.entries.iter().map(|(_, t)| t.as_str()).collect();
        texts.sort_unstable();
        let mut want: Vec<String> = (0..20).map(|i| format!("entry {i}")).collect();
        want.sort_unstable();
        assert_eq!(texts, want);

        // The counter lost (a Redis failover without it): the next ID is still
        // above the last entry's, and a reader that read past 20 takes it.
        let mut raw = redis::Client::open(admin)?
            .get_multiplexed_async_connection()
            .await?;
        let _: () = redis::cmd("DEL")
            .arg("manifold:log:t:seq")
            .query_async(&mut raw)
            .await?;
        let id = a.append_shared("t", "after the loss", 0).await?;
        assert_eq!(id, 21);
        // Lowered under what a replica read (the list lost too): the appender
        // goes on above its own highest read.
        let _: () = redis::cmd("DEL")
            .arg("manifold:log:t")
            .arg("manifold:log:t:seq")
            .query_async(&mut raw)
            .await?;
        let id = a.append_shared("t", "after the reset", 21).await?;
        assert_eq!(id, 22);
        let read = b.shared_since("t", 21).await?;
        assert_eq!(read.entries, [(22, "after the reset".to_string())]);
        // Nothing is taken twice.
        assert!(b.shared_since("t", 22).await?.entries.is_empty());
        stop.cancel();
        Ok(())
    })
    .await
}
