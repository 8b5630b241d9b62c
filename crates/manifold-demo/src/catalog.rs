//! Catalogue mode (`--catalog PATH --catalog-server NAME`): the demo upstream
//! plays one server of a catalogue of real tool definitions, so a gateway can be
//! put in front of many "real" servers for memory, list-size and search tests.
//!
//! What: reads a file shaped like `../shared/data/tool-catalog/catalog.json`
//! (`{"servers": [{"name": …, "tools": [ … ]}, …]}`), lists the named server's
//! tools exactly as the file gives them (members, order and all), and answers a
//! `tools/call` of any of them with a text result echoing the call:
//! `{"tool": NAME, "arguments": {…}}`.
//!
//! Invariants: in this mode the listed tools are the catalogue's only; the demo's
//! own tools (fixed, synthetic, fault and diagnostic ones) are neither listed nor
//! callable, and a call naming anything else is an unknown tool (-32602). The file
//! is read once, at start, and is bounded ([`MAX_CATALOG_BYTES`]).
//!
//! Not here: argument validation (the echo takes any object), prompts and
//! resources (the demo's own stay).

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

use serde_json::{json, Map, Value};

/// The largest catalogue file read.
pub const MAX_CATALOG_BYTES: u64 = 64 * 1024 * 1024;

/// One catalogue server's tools, as served.
#[derive(Debug)]
pub struct ServedCatalog {
    server: String,
    tools: Vec<Value>,
    names: HashSet<String>,
}

impl ServedCatalog {
    /// Reads `path` and takes the server called `server`.
    pub fn load(path: &Path, server: &str) -> Result<ServedCatalog, String> {
        let file = std::fs::File::open(path)
            .map_err(|e| format!("cannot read the catalogue {}: {e}", path.display()))?;
        let mut bytes = Vec::new();
        file.take(MAX_CATALOG_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the catalogue {}: {e}", path.display()))?;
        if bytes.len() as u64 > MAX_CATALOG_BYTES {
            return Err(format!(
                "the catalogue {} is over {MAX_CATALOG_BYTES} bytes",
                path.display()
            ));
        }
        let catalog: Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("the catalogue {} is not JSON: {e}", path.display()))?;
        ServedCatalog::from_json(&catalog, server)
            .map_err(|e| format!("the catalogue {}: {e}", path.display()))
    }

    /// Takes the server called `server` from a parsed catalogue.
    pub fn from_json(catalog: &Value, server: &str) -> Result<ServedCatalog, String> {
        let servers = catalog
            .get("servers")
            .and_then(Value::as_array)
            .ok_or("no `servers` array")?;
        let found = servers
            .iter()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(server));
        let Some(found) = found else {
            let known: Vec<&str> = servers
                .iter()
                .filter_map(|s| s.get("name").and_then(Value::as_str))
                .collect();
            return Err(format!(
                "no server named {server:?}; it has: {}",
                known.join(", ")
            ));
        };
        let tools = found
            .get("tools")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("server {server:?} has no `tools` array"))?;
        let mut names = HashSet::new();
        for tool in tools {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("server {server:?} has a tool without a string `name`"))?;
            if !names.insert(name.to_string()) {
                return Err(format!("server {server:?} lists the tool {name:?} twice"));
            }
        }
        Ok(ServedCatalog {
            server: server.to_string(),
            tools: tools.clone(),
            names,
        })
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tools, as the file gives them.
    pub fn tools(&self) -> &[Value] {
        &self.tools
    }

    /// The result of calling `name`, or `None` when it is not one of these tools.
    pub fn call(&self, name: &str, arguments: &Map<String, Value>) -> Option<Value> {
        self.names.contains(name).then(|| {
            let echo = json!({"tool": name, "arguments": arguments});
            json!({"content": [{"type": "text", "text": echo.to_string()}]})
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Value {
        json!({"servers": [
            {"name": "a", "tools": [{"name": "one", "inputSchema": {"type": "object"}}]},
            {"name": "b", "source": "x", "tools": [
                {"name": "two", "x-extra": {"z": 1, "a": 2}, "inputSchema": {"type": "object"}},
                {"name": "three", "description": "ünïcode", "inputSchema": {"type": "object"}}
            ]}
        ]})
    }

    #[test]
    fn serves_one_server_as_given() {
        let served = ServedCatalog::from_json(&catalog(), "b").unwrap();
        assert_eq!(served.server(), "b");
        assert_eq!(
            served.tools(),
            catalog()["servers"][1]["tools"]
                .as_array()
                .unwrap()
                .as_slice()
        );
        let args = json!({"q": [1, "x"]});
        let result = served.call("two", args.as_object().unwrap()).unwrap();
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            json!({"tool": "two", "arguments": {"q": [1, "x"]}})
        );
        assert!(
            served.call("one", &Map::new()).is_none(),
            "another server's tool"
        );
    }

    #[test]
    fn bad_catalogues_say_why() {
        let err = ServedCatalog::from_json(&catalog(), "c").unwrap_err();
        assert!(err.contains("no server named \"c\"; it has: a, b"), "{err}");
        let err = ServedCatalog::from_json(&json!({"tools": []}), "a").unwrap_err();
        assert!(err.contains("`servers`"), "{err}");
        let twice = json!({"servers": [{"name": "a", "tools": [{"name": "t"}, {"name": "t"}]}]});
        assert!(ServedCatalog::from_json(&twice, "a")
            .unwrap_err()
            .contains("twice"));
        let nameless = json!({"servers": [{"name": "a", "tools": [{"title": "t"}]}]});
        assert!(ServedCatalog::from_json(&nameless, "a").is_err());
        let missing = ServedCatalog::load(Path::new("/nonexistent/catalog.json"), "a");
        assert!(missing.unwrap_err().contains("cannot read"));
    }
}
