//! `[confirm]` with the official SDK clients: the TypeScript client (session
//! era) and the Python client both in the session era (`mode: session-era`) and in
//! 2026-07-28 (`mode: 2026-07-28`, where the question arrives as an
//! `InputRequiredResult` the SDK answers and retries) accept, decline and
//! dismiss a confirmation through their own elicitation handlers; a client
//! without one is refused with -32021 naming the capability.

use anyhow::Result;
use manifold_e2e::Peers;
use serde_json::{json, Value};

fn plan(mode: &str, elicitation: Option<&str>) -> Value {
    let mut p = json!({
        "mode": mode,
        "steps": [{"op": "call_tool", "name": "demo__add", "arguments": {"a": 40, "b": 2}}]
    });
    if let Some(e) = elicitation {
        p["elicitation"] = json!(e);
    }
    p
}

#[test]
fn sdk_clients_confirm_decline_and_dismiss_through_their_elicitation_handlers() -> Result<()> {
    let peers = Peers::from_env()?;
    let gw = super::DemoGateway::start("confirm", "[confirm]\ntools = [\"demo__add\"]\n")?;
    for (client, mode) in [("ts", "legacy"), ("py", "legacy"), ("py", "2026-07-28")] {
        let who = format!("{client} ({mode})");
        for action in ["accept", "decline", "cancel"] {
            let (code, out, err) =
                super::run_plan(&peers, client, &gw.url, &plan(mode, Some(action)), None)?;
            anyhow::ensure!(code == Some(0), "{who} {action}: exit {code:?}: {err}");
            let asked = out["elicited"].as_array().cloned().unwrap_or_default();
            anyhow::ensure!(
                asked.len() == 1,
                "{who} {action}: asked {asked:?}\n{out}\n{err}"
            );
            let message = asked[0]["message"].as_str().unwrap_or_default();
            anyhow::ensure!(message.contains("demo__add"), "{who}: {message}");
            let result = &out["results"][0];
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            match action {
                "accept" => anyhow::ensure!(
                    text == "42" && result["isError"] != true,
                    "{who} accept: {out}"
                ),
                _ => anyhow::ensure!(
                    result["isError"] == true && text.contains("not called"),
                    "{who} {action}: {out}"
                ),
            }
        }
        let (code, out, err) = super::run_plan(&peers, client, &gw.url, &plan(mode, None), None)?;
        anyhow::ensure!(
            code == Some(0),
            "{who} without elicitation: exit {code:?}: {err}"
        );
        let error = &out["results"][0]["error"];
        anyhow::ensure!(error["code"] == -32021, "{who} without elicitation: {out}");
        anyhow::ensure!(
            error["message"]
                .as_str()
                .unwrap_or_default()
                .contains("elicitation"),
            "{who}: {out}"
        );
    }
    Ok(())
}
