//! The console's pages with data: the audit view over a 100,000-record log (exact
//! filter results, the first page within 200 ms, the chain's status), pin approvals
//! and revocations audited with the admin principal, the overview's recent calls,
//! "view as" and the catalogue search.

use super::*;
use crate::eventually;
use manifold_integrity::{decide, PinStore, Rules, StoreFile};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;
use std::time::{Instant, SystemTime};

/// Writes a chained log of `n` records across three files at `path`.
fn write_log(path: &Path, n: usize) -> Result<()> {
    let redactor = manifold_audit::Redactor::default();
    let cap = manifold_audit::SizeCap::default();
    let mut prev = manifold_audit::ZERO_HASH.to_string();
    let files = [
        manifold_audit::rotated_path(path, 2),
        manifold_audit::rotated_path(path, 1),
        path.to_path_buf(),
    ];
    let per = n.div_ceil(files.len());
    for (f, file) in files.iter().enumerate() {
        let mut out = std::io::BufWriter::new(std::fs::File::create(file)?);
        for i in f * per..((f + 1) * per).min(n) {
            let mut r = manifold_audit::AuditRecord::new(format!("{i:016x}"), "tools/call");
            r.time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_651_200 + i as u64);
            r.principal = ["key:alice", "key:bob", "jwt:corp:carol", "key:dave"][i % 4].into();
            r.upstream = Some(["local", "github"][i % 2].into());
            r.name = Some(["local__echo", "github__search", "local__add"][i % 3].into());
            r.original = r
                .name
                .as_ref()
                .and_then(|n| n.split("__").nth(1).map(str::to_string));
            r.arguments = Some(json!({"text": format!("record {i}")}));
            r.outcome = if i % 25 == 0 {
                manifold_audit::Outcome::Timeout
            } else {
                manifold_audit::Outcome::Ok
            };
            let mut entry = r.to_entry(&redactor, true, &cap);
            entry.insert("prev".into(), json!(prev));
            let mut h = Sha256::new();
            h.update(prev.as_bytes());
            h.update(manifold_audit::canonical::canonical_json(&Value::Object(
                entry.clone(),
            )));
            let hash = hex_of(&h.finalize());
            entry.insert("hash".into(), json!(hash));
            writeln!(out, "{}", Value::Object(entry))?;
            prev = hash;
        }
        out.flush()?;
    }
    Ok(())
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn the_audit_view_filters_a_100000_record_log_quickly() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("audit100k")?;
        let log = dir.0.join("audit.jsonl");
        write_log(&log, 100_000)?;
        let audit = format!("[audit]\npath = {}\n", toml_string(&log.to_string_lossy()));
        let (_gw, admin) = start(&dir, &guarded(), &audit).await?;
        let ops = format!("Bearer {OPS_TOKEN}");
        let auth = [("Authorization", ops.as_str())];
        for (query, must) in [
            ("", "record 99999"),
            ("?principal=carol", "jwt:corp:carol"),
            ("?tool=search&upstream=github", "github__search"),
            ("?outcome=timeout", "timeout"),
            (
                "?principal=key%3A&from=2026-11-26T10&to=2026-11-26T12",
                "2026-11-26T12:59",
            ),
        ] {
            let path = format!("/ui/audit{query}");
            let mut best = Duration::MAX;
            let mut page = None;
            for _ in 0..3 {
                let t = Instant::now();
                let r = call(admin, "GET", &path, &auth, "").await?;
                best = best.min(t.elapsed());
                page = Some(r);
            }
            let r = page.context("no page")?;
            assert_eq!(r.status, 200, "{path}: {r}");
            assert_eq!(r.body.matches("<details id=\"rec-").count(), 50, "{path}");
            assert!(r.body.contains(must), "{path}: {must} missing");
            assert!(r.body.contains("rel=\"next\""), "{path}: no next page link");
            assert!(
                best <= Duration::from_millis(200),
                "{path}: first page took {best:?}"
            );
        }
        // Every record a filter keeps, and only those: the second page of
        // outcome=timeout goes on from the first.
        let first = call(admin, "GET", "/ui/audit?outcome=timeout", &auth, "").await?;
        let next = first
            .body
            .split("href=\"")
            .find_map(|s| s.split('"').next().filter(|h| h.contains("before=")))
            .context("no older link")?
            .replace("&amp;", "&");
        let second = call(admin, "GET", &next, &auth, "").await?;
        let ids = |r: &Reply| -> Vec<u64> {
            r.body
                .split("&quot;request_id&quot;: &quot;")
                .skip(1)
                .filter_map(|s| u64::from_str_radix(&s[..16], 16).ok())
                .collect()
        };
        let all: Vec<u64> = ids(&first).into_iter().chain(ids(&second)).collect();
        let want: Vec<u64> = (0..100_000u64)
            .rev()
            .filter(|i| i % 25 == 0)
            .take(100)
            .collect();
        assert_eq!(all, want);
        // The chain, checked in the background, is intact in every file.
        let chain = eventually(
            "the chain checked in every file",
            Duration::from_secs(60),
            || async {
                let r = call(admin, "GET", "/ui/audit", &auth, "").await?;
                let chain = r
                    .body
                    .split("id=\"chain\"")
                    .nth(1)
                    .unwrap_or("")
                    .split("</section>")
                    .next()
                    .unwrap_or("")
                    .to_string();
                Ok((chain.matches("intact</span>").count() == 3).then_some(chain))
            },
        )
        .await?;
        assert!(
            chain.contains("33334 records") && chain.contains("33332 records"),
            "{chain}"
        );
        Ok(())
    })
    .await
}

/// A store at `path` in which `local`'s `echo` (as `gw` has it) was approved
/// with another description and is held as changed.
fn held_store(gw: &TestGateway, path: &Path) -> Result<Map<String, Value>> {
    let up = gw
        .gateway()
        .upstreams()
        .into_iter()
        .find(|u| &**u.name() == "local")
        .context("local")?;
    let echo = up
        .lists()
        .context("lists")?
        .tools
        .iter()
        .find(|t| t.get("name") == Some(&json!("echo")))
        .cloned()
        .context("echo")?;
    let mut old = echo.clone();
    old.insert(
        "description".into(),
        json!("Echo (the approved definition)."),
    );
    let rules = Rules {
        new_tools: manifold_config::integrity::NewTools::Allow,
        trust_on_first_use: true,
    };
    let lists = |d: Map<String, Value>| manifold_catalog::UpstreamLists {
        tools: vec![d],
        prompts: Vec::new(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        skills: Vec::new(),
    };
    let mut store = PinStore::new();
    store.apply(&decide(&store, "local", &lists(old), &rules, SystemTime::now()).update);
    store.apply(
        &decide(
            &store,
            "local",
            &lists(echo.clone()),
            &rules,
            SystemTime::now(),
        )
        .update,
    );
    StoreFile::new(path).modify(|s| *s = store)?;
    Ok(echo)
}

#[tokio::test]
async fn approvals_and_revocations_are_audited_with_the_admin_principal() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("pins")?;
        let store = dir.0.join("pins.json");
        let log = dir.0.join("audit.jsonl");
        let extra = format!(
            "[audit]\npath = {}\n\n[integrity]\nstore = {}\n",
            toml_string(&log.to_string_lossy()),
            toml_string(&store.to_string_lossy())
        );
        let (gw, admin) = start(&dir, &guarded(), &extra).await?;
        let echo = held_store(&gw, &store)?;
        let fp = manifold_integrity::Fingerprint::of(&echo).to_string();
        let (cookie, _) = log_in(admin, OPS_TOKEN).await?;
        let page = call(admin, "GET", "/ui/pins", &[("Cookie", &cookie)], "").await?;
        assert!(
            page.body.contains("Waiting for approval")
                && page.body.contains("Echo (the approved definition)."),
            "{page}"
        );
        let csrf = page.csrf().context("csrf")?;
        let own = format!("http://{admin}");
        let headers = [
            ("Cookie", cookie.as_str()),
            ("Origin", own.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ];
        // A fingerprint the operator was not shown is not approved.
        let stale = format!("sha256:{}", "ab".repeat(32));
        let body = |fp: &str| {
            format!(
                "csrf={csrf}&upstream=local&kind=tool&name=echo&fingerprint={}",
                fp.replace(':', "%3A")
            )
        };
        let r = call(admin, "POST", "/ui/pins/approve", &headers, &body(&stale)).await?;
        assert_eq!(r.status, 409, "{r}");
        assert!(r.body.contains("look at it again"), "{r}");
        let r = call(admin, "POST", "/ui/pins/approve", &headers, &body(&fp)).await?;
        assert_eq!(r.status, 303, "{r}");
        let now = StoreFile::new(&store).load()?;
        let pin = now
            .pins()
            .find(|(i, _)| i.name == "echo")
            .context("no pin")?
            .1
            .clone();
        assert_eq!(pin.approved_by, "admin_token:ops");
        assert_eq!(now.pending_items().count(), 0);
        let r = call(
            admin,
            "POST",
            "/ui/pins/revoke",
            &headers,
            &format!("csrf={csrf}&upstream=local&kind=tool&name=echo"),
        )
        .await?;
        assert_eq!(r.status, 303, "{r}");
        // The admin's pin is gone. The item is new again, and the running
        // gateway (`new_tools = "allow"`, the default) pins it again as first
        // seen: never as approved by the admin.
        let after = StoreFile::new(&store).load()?;
        assert!(
            after
                .pins()
                .filter(|(i, _)| i.name == "echo")
                .all(|(_, p)| p.approved_by == manifold_integrity::TRUST_ON_FIRST_USE),
            "{after:?}"
        );
        // Both are in the audit log, with the admin principal.
        let text = std::fs::read_to_string(&log)?;
        let records: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        for method in ["pins/approve", "pins/revoke"] {
            let r = records
                .iter()
                .find(|r| r["method"] == method)
                .with_context(|| format!("no {method} record in {text}"))?;
            assert_eq!(r["principal"], "admin_token:ops", "{r}");
            assert_eq!(r["upstream"], "local");
            assert_eq!(r["original"], "echo");
            assert_eq!(r["arguments"]["fingerprint"], json!(fp), "{r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_overview_counts_recent_calls_and_view_as_says_why() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("overview")?;
        let (gw, admin) = start(&dir, &guarded(), "").await?;
        let client = gw.client();
        client.set_bearer(Some(CLIENT_KEY));
        client.initialize("2025-11-25", json!({})).await?;
        for i in 0..5 {
            let r = client
                .call_tool("local__echo", json!({"text": format!("{i}")}))
                .await?;
            let text = String::from_utf8_lossy(&r.body).to_string();
            assert!(text.contains(&format!("\"{i}\"")), "{text}");
        }
        let ops = format!("Bearer {OPS_TOKEN}");
        let auth = [("Authorization", ops.as_str())];
        let r = call(admin, "GET", "/ui", &auth, "").await?;
        let row = r
            .body
            .split("id=\"upstream-local\"")
            .nth(1)
            .unwrap_or("")
            .split("</tr>")
            .next()
            .unwrap_or("");
        assert!(row.contains("badge ok"), "{row}");
        assert!(
            row.contains(" µs<") || row.contains(" ms<"),
            "no latency: {row}"
        );
        assert!(row.contains("0.0 %"), "no error rate: {row}");
        assert!(
            r.body.contains("2025-11-25: 1"),
            "sessions by version: {}",
            r.body
        );

        let r = call(admin, "GET", "/ui/catalogue?as=key%3Aclient", &auth, "").await?;
        let hidden = r.body.split("id=\"hidden-h\"").nth(1).unwrap_or("");
        assert!(hidden.contains("local__crash"), "{r}");
        assert!(hidden.contains("policy"), "no reason: {hidden}");
        let tools = r
            .body
            .split("id=\"k-tool\"")
            .nth(1)
            .unwrap_or("")
            .split("</section>")
            .next()
            .unwrap_or("");
        assert!(
            tools.contains("local__echo") && !tools.contains("local__crash"),
            "{tools}"
        );
        let r = call(admin, "GET", "/ui/catalogue?as=team%3Ax", &auth, "").await?;
        assert!(r.body.contains("Cannot view as"), "{r}");
        let r = call(
            admin,
            "GET",
            "/ui/catalogue/tool/local__crash?as=key%3Aclient",
            &auth,
            "",
        )
        .await?;
        assert!(r.body.contains("does not see this tool"), "{r}");
        let r = call(admin, "GET", "/ui/catalogue?q=ECHO", &auth, "").await?;
        let tools = r
            .body
            .split("id=\"k-tool\"")
            .nth(1)
            .unwrap_or("")
            .split("</section>")
            .next()
            .unwrap_or("");
        assert!(
            tools.contains("local__echo") && !tools.contains("local__add"),
            "{tools}"
        );
        Ok(())
    })
    .await
}
