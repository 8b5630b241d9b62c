//! JSON-RPC 2.0 and MCP error codes the demo server answers with.
//!
//! Invariants: each code is written once, here; every error reply of the demo
//! takes its code from this table.
//!
//! Not here: building error replies (`jsonrpc`), deciding which error a
//! request gets (the dispatchers: `methods`, `modern`).

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const UNSUPPORTED_VERSION: i64 = -32022;
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP's "resource not found".
pub const RESOURCE_NOT_FOUND: i64 = -32002;
