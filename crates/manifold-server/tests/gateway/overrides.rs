//! `[upstreams.<name>.overrides.<tool>]` through the running gateway: a tool
//! exposed under the operator's name and description, a pinned argument gone
//! from the exposed schema and injected on every call (a client cannot
//! override it), and the audit record naming both names and what was injected.

use anyhow::{Context, Result};
use serde_json::json;

use crate::observe::{audit_lines, Scratch};
use crate::{bounded, names_of, Setup};
use manifold_testkit::harness::toml_string;

#[tokio::test]
async fn an_override_renames_describes_and_pins_and_the_audit_says_so() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("overrides")?;
        let audit = dir.0.join("audit.jsonl");
        let f = Setup {
            extra: format!(
                "[upstreams.local.overrides.add]\nname = \"plus_ten\"\n\
                 description = \"Adds ten.\"\npin = {{ b = 10 }}\n\n\
                 [upstreams.local.overrides.echo]\nhide = [\"text\"]\n\n\
                 [audit]\npath = {}\nfsync = \"always\"\n",
                toml_string(&audit.to_string_lossy())
            ),
            ..Setup::default()
        }
        .start()
        .await?;
        let c = f.gw.session("2025-11-25", json!({})).await?;
        let tools = c.list_all_tools().await?;
        let names = names_of(&tools);
        assert!(names.contains(&"local__plus_ten".to_string()), "{names:?}");
        assert!(!names.contains(&"local__add".to_string()), "{names:?}");
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "overridden names keep the order");
        let plus = tools
            .iter()
            .find(|t| t["name"] == "local__plus_ten")
            .context("plus_ten")?;
        assert_eq!(plus["description"], "Adds ten.");
        assert_eq!(
            plus["inputSchema"]["properties"],
            json!({"a": {"type": "number"}})
        );
        assert_eq!(plus["inputSchema"]["required"], json!(["a"]));
        // A required argument is never hidden: echo keeps `text`.
        let echo = tools
            .iter()
            .find(|t| t["name"] == "local__echo")
            .context("echo")?;
        assert_eq!(echo["inputSchema"]["required"], json!(["text"]));

        let r = c.call_tool("local__plus_ten", json!({"a": 5})).await?;
        assert_eq!(r.result()?["content"][0]["text"], "15", "{r}");
        // The pin wins over a client that sends the argument anyway.
        let r = c
            .call_tool("local__plus_ten", json!({"a": 1, "b": 1000}))
            .await?;
        assert_eq!(r.result()?["content"][0]["text"], "11", "{r}");
        // The upstream's own name is not exposed.
        let r = c.call_tool("local__add", json!({"a": 1, "b": 2})).await?;
        assert_eq!(r.error()?["code"], -32602, "{r}");

        let lines = audit_lines(&audit)?;
        let rec = lines
            .iter()
            .find(|l| l["arguments"] == json!({"a": 5}))
            .context("the call's record")?;
        assert_eq!(rec["name"], "local__plus_ten", "{rec}");
        assert_eq!(rec["original"], "add", "{rec}");
        assert_eq!(rec["injected"], json!({"b": 10}), "{rec}");
        Ok(())
    })
    .await
}
