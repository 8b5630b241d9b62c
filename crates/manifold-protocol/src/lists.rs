//! One upstream's lists as fetched (all pages), items kept as raw JSON objects.

use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListSnapshot {
    pub tools: Vec<Map<String, Value>>,
    pub prompts: Vec<Map<String, Value>>,
    pub resources: Vec<Map<String, Value>>,
    pub resource_templates: Vec<Map<String, Value>>,
    /// Skills (SEP-2640) entries of `skills/list`, from an upstream that
    /// declares `io.modelcontextprotocol/skills`.
    pub skills: Vec<Map<String, Value>>,
}
