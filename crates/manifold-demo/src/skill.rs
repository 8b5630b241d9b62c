//! `--skill TEXT`: a Skills (SEP-2640) server in miniature. It declares
//! `io.modelcontextprotocol/skills` (with `directoryRead`), and serves one
//! skill, `skill://review/SKILL.md` (name `review`), whose body is TEXT, with
//! a supporting file `skill://review/notes.md`: listed by `skills/list`,
//! answered by `skills/get`, readable with `resources/read`, and the
//! skill's directory `skill://review` by `resources/directory/read`.
//!
//! `--skill-digest-lies`: the entry announces a digest for `notes.md` that
//! its bytes do not have (a gateway must refuse the read).
//!
//! Not here: anything a host does with a skill.

use serde_json::{json, Map, Value};

use crate::jsonrpc::RpcError;

/// The skill's `SKILL.md`.
pub const SKILL_URI: &str = "skill://review/SKILL.md";
/// Its supporting file.
pub const NOTES_URI: &str = "skill://review/notes.md";
/// Its directory.
pub const SKILL_DIR: &str = "skill://review";
/// The supporting file's bytes.
pub const NOTES: &str = "Look at the tests first.\n";

/// `SKILL.md`'s bytes for the body `text`.
pub fn skill_md(text: &str) -> String {
    format!("---\nname: review\ndescription: Review a change\n---\n\n{text}\n")
}

/// `sha256:<hex>` of `bytes`, as SEP-2640 writes digests.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// The capability the server declares.
pub(crate) fn extension() -> Value {
    json!({"directoryRead": true})
}

/// The skill's entry: `lies` announces a digest `notes.md` does not have.
pub(crate) fn entry(text: &str, lies: bool) -> Value {
    let md = skill_md(text);
    let notes_digest = if lies {
        digest(b"what the notes said when they were approved\n")
    } else {
        digest(NOTES.as_bytes())
    };
    json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "review", "description": "Review a change"},
        "resources": [
            {"uri": SKILL_URI, "digest": digest(md.as_bytes()), "size": md.len()},
            {"uri": NOTES_URI, "digest": notes_digest, "size": NOTES.len()}
        ],
        "x-demo-skill-extra": {"kept": true}
    })
}

/// The listed resources (the skill's two files).
pub(crate) fn resources() -> [Value; 2] {
    [
        json!({"uri": SKILL_URI, "name": "review", "description": "Review a change", "mimeType": "text/markdown"}),
        json!({"uri": NOTES_URI, "name": "notes.md", "mimeType": "text/markdown"}),
    ]
}

/// The Skills requests and the reads of the skill's files; `None`: not
/// one of them.
pub(crate) fn dispatch(
    text: &str,
    lies: bool,
    method: &str,
    params: &Map<String, Value>,
) -> Option<Result<Value, RpcError>> {
    let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
    Some(match method {
        "skills/list" => Ok(json!({"skills": [entry(text, lies)]})),
        "skills/get" if uri == SKILL_URI => Ok(json!({"skill": entry(text, lies)})),
        "skills/get" => Err(RpcError::invalid_params(format!(
            "No skill is served at {uri}"
        ))),
        "resources/directory/read" if uri == SKILL_DIR => Ok(json!({"resources": resources()})),
        "resources/directory/read" => Err(RpcError::invalid_params(format!(
            "{uri} is not a directory resource"
        ))),
        "resources/read" if uri == SKILL_URI => Ok(json!({"contents": [
            {"uri": SKILL_URI, "mimeType": "text/markdown", "text": skill_md(text)}
        ]})),
        "resources/read" if uri == NOTES_URI => Ok(json!({"contents": [
            {"uri": NOTES_URI, "mimeType": "text/markdown", "text": NOTES}
        ]})),
        _ => return None,
    })
}
