//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) between real peers: two
//! FastMCP 4.1.4 servers (`SkillsDirectoryProvider` + `SkillsExtension`, `.peers/py-fastmcp`,
//! `tests/interop/py/fastmcp_skills_server.py`) that both publish `skill://code-review/SKILL.md`,
//! behind one Manifold, loaded by FastMCP's own client (`Client` with
//! `SkillsClientExtension`, `tests/interop/py/skills_client.py`) as a host loads a skill:
//! `skills/list`, `skills/get`, each file read and verified against its digest; and by the
//! official TypeScript SDK v2's `SkillsClient` (`@modelcontextprotocol/client`,
//! `tests/interop/ts/skills.mjs`), which also checks each `SKILL.md`'s frontmatter against its
//! entry. Each server alone serves one skill; through Manifold both are listed, each under its
//! own upstream, and each file verifies and is that server's own, for both clients.

use anyhow::{bail, Context, Result};
use manifold_e2e::{repo_root, serve, Peers, Proc, TempDir};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

use crate::STARTUP;

/// Runs the skills driver against `url`: its output object.
fn drive(python: &Path, url: &str) -> Result<Value> {
    let out = Command::new(python)
        .arg(repo_root().join("tests/interop/py/skills_client.py"))
        .arg(url)
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!(
            "skills_client.py against {url} failed ({:?}): {stderr}",
            out.status
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| format!("driver output; stderr: {stderr}"))
}

/// A skill as a driver loaded it: its URI and each file's (URI, verified, text).
type Loaded = (Value, Vec<(Value, Value, Value)>);

/// Runs the TypeScript SDK's skills driver against `url`: its output object.
fn drive_ts(peers: &Peers, url: &str) -> Result<Value> {
    let out = Command::new(&peers.node)
        .arg(repo_root().join("tests/interop/ts/skills.mjs"))
        .arg(url)
        .env("MANIFOLD_NODE_MODULES", &peers.node_modules)
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!(
            "skills.mjs against {url} failed ({:?}): {stderr}",
            out.status
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| format!("driver output; stderr: {stderr}"))
}

/// A skills server named `name` serving the skills under `root`: the process and its URL.
fn skills_server(python: &Path, name: &str, root: &Path) -> Result<(Proc, String)> {
    let mut cmd = Command::new(python);
    cmd.arg(repo_root().join("tests/interop/py/fastmcp_skills_server.py"))
        .arg(name)
        .arg(root);
    let server = Proc::spawn(&format!("fastmcp-skills-{name}"), cmd)?;
    let line = Proc::wait_line(
        &server.stdout,
        &format!("fastmcp-skills {name}: listening on"),
        STARTUP,
        "fastmcp",
    )?;
    let url = line
        .rsplit(' ')
        .next()
        .context("no URL")?
        .trim()
        .to_string();
    Ok((server, url))
}

/// One skill `code-review` under `root`, its body naming `who`, with `extra` files.
fn write_skill(root: &Path, who: &str, extra: &[(&str, &str)]) -> Result<()> {
    let dir = root.join("code-review");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: code-review\ndescription: Review code the {who} way\n---\n\n# The {who} review\n"),
    )?;
    for (path, text) in extra {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().context("parent")?)?;
        std::fs::write(file, text)?;
    }
    Ok(())
}

#[test]
fn two_fastmcp_skills_servers_with_the_same_skill_load_through_manifold_as_directly() -> Result<()>
{
    let peers = Peers::from_env()?;
    let python = peers.fastmcp_python()?;
    let dir = TempDir::new("skills-fastmcp")?;
    let (root_a, root_b) = (dir.0.join("a"), dir.0.join("b"));
    write_skill(&root_a, "alpha", &[])?;
    write_skill(&root_b, "beta", &[("templates/t.md", "a beta template\n")])?;
    let (_a, url_a) = skills_server(&python, "alpha", &root_a)?;
    let (_b, url_b) = skills_server(&python, "beta", &root_b)?;
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n\
         [upstreams.alpha]\nurl = {url_a:?}\n\n[upstreams.beta]\nurl = {url_b:?}\n"
    );
    let cfg = dir.0.join("gateway.toml");
    std::fs::write(&cfg, config)?;
    let (_gateway, line, url) = serve("manifold", &cfg, "warn", STARTUP)?;
    if !line.contains("(2/2 upstreams ready") {
        bail!("the FastMCP upstreams did not come up: {line}");
    }

    let via = drive(&python, &url)?;
    assert!(
        via["extension"].is_object(),
        "Skills not advertised: {via:#}"
    );
    // The official TypeScript SDK's SkillsClient loads the same skills, every
    // file verified (size, digest, frontmatter), the same bytes.
    let ts = drive_ts(&peers, &url)?;
    assert_eq!(ts["extension"], true, "{ts:#}");
    let loaded = |run: &Value| -> Vec<Loaded> {
        run["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let files = s["files"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|f| (f["uri"].clone(), f["verified"].clone(), f["text"].clone()))
                    .collect();
                (s["uri"].clone(), files)
            })
            .collect()
    };
    assert_eq!(loaded(&ts), loaded(&via), "TypeScript: {ts:#}");
    let all_got_same = ts["skills"]
        .as_array()
        .is_some_and(|s| s.iter().all(|s| s["got_same"] == true));
    assert!(all_got_same, "{ts:#}");
    let skills = via["skills"].as_array().context("skills")?;
    assert_eq!(skills.len(), 2, "{via:#}");
    for (upstream, server) in [("alpha", &url_a), ("beta", &url_b)] {
        let direct = drive(&python, server)?;
        let own = &direct["skills"][0];
        let uri = format!("skill://{upstream}/code-review/SKILL.md");
        let through = skills
            .iter()
            .find(|s| s["uri"] == uri)
            .with_context(|| format!("{uri} in {via:#}"))?;
        // The same skill: frontmatter as written, skills/get agreeing with the
        // list, every file verified against its digest, and each file's bytes
        // those the server gives directly.
        assert_eq!(through["frontmatter"], own["frontmatter"], "{upstream}");
        assert_eq!(through["got_same"], true, "{upstream}: {through:#}");
        let files = |s: &Value| -> Vec<(String, bool, String)> {
            s["files"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| {
                    let path = f["uri"].as_str().unwrap_or_default();
                    let tail = path.rsplit("code-review/").next().unwrap_or_default();
                    (
                        tail.to_string(),
                        f["verified"] == true,
                        f["text"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        };
        assert_eq!(files(through), files(own), "{upstream}");
        assert!(files(through).iter().all(|(_, ok, _)| *ok), "{through:#}");
        assert!(
            files(through)[0]
                .2
                .contains(&format!("The {upstream} review")),
            "{through:#}"
        );
    }
    Ok(())
}
