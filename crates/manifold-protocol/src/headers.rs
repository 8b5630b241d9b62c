//! MCP `x-mcp-header` support (SEP-2243, MCP 2026-07-28 streamable HTTP
//! "request metadata").
//!
//! A tool may annotate parameters of its `inputSchema` with
//! `"x-mcp-header": "<Name>"`; a client then mirrors that argument's value into
//! the HTTP header `Mcp-Param-<Name>` so that intermediaries can route on it
//! without parsing the body. This module:
//!
//! - validates a tool's `inputSchema` and extracts its annotations
//!   ([`header_params`]);
//! - builds the headers a client must send for given arguments
//!   ([`param_headers`]);
//! - encodes and decodes header values, including the `=?base64?…?=` form for
//!   values that cannot travel as plain header text ([`encode_header_value`],
//!   [`decode_header_value`]);
//! - checks a received header value against the body value on the server side
//!   ([`header_matches_value`]).
//!
//! Invariants:
//!
//! - An annotation is accepted only if its value is a non-empty RFC 9110 token,
//!   unique (case-insensitively) in the schema, on a property of type `string`,
//!   `integer` or `boolean` (optionally unioned with `"null"`), and the
//!   property is reachable from the schema root through a chain of
//!   `properties` keys alone. Any other `x-mcp-header` keyword anywhere in the
//!   schema (under `items`, `anyOf`, `$defs`, `additionalProperties`, unknown
//!   keywords, …) makes the whole tool invalid. Property *names* (the keys of
//!   `properties`, `patternProperties`, `$defs`, …) are never mistaken for the
//!   keyword, and the instance data in `const`, `enum`, `default` and
//!   `examples` is not searched.
//! - [`encode_header_value`] output is always visible ASCII plus inner spaces,
//!   and [`decode_header_value`] inverts it exactly.
//! - Nothing here panics on any input; the schema walk is iterative, so deep
//!   schemas cannot overflow the stack.
//!
//! Not done here: `$ref` resolution (a `$ref`'d definition is never a valid
//! annotation site, so none is needed), JSON-schema validation of the
//! arguments themselves, and HTTP I/O — callers read and write the headers
//! (and trim OWS) themselves.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{Map, Value};

/// Prefix of the HTTP header that carries an annotated parameter.
pub const PARAM_HEADER_PREFIX: &str = "Mcp-Param-";

/// The annotation keyword in a JSON schema.
const KEYWORD: &str = "x-mcp-header";

/// Marks of the base64 header-value form.
const B64_START: &str = "=?base64?";
const B64_END: &str = "?=";

/// Largest integer a header may carry: 2^53 − 1 (exactly representable in
/// every JSON implementation).
const MAX_SAFE_INTEGER: i128 = (1 << 53) - 1;

/// The JSON type of an annotated parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamKind {
    String,
    Integer,
    Boolean,
}

impl ParamKind {
    fn as_str(&self) -> &'static str {
        match self {
            ParamKind::String => "string",
            ParamKind::Integer => "integer",
            ParamKind::Boolean => "boolean",
        }
    }
}

/// One `x-mcp-header` annotation of a tool's `inputSchema`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The annotation value, e.g. `"Region"`.
    pub name: String,
    /// Property path from the arguments root, e.g. `["location", "region"]`.
    pub path: Vec<String>,
    /// JSON type of the parameter.
    pub kind: ParamKind,
}

impl HeaderParam {
    /// The HTTP header name, e.g. `"Mcp-Param-Region"`.
    pub fn header_name(&self) -> String {
        format!("{PARAM_HEADER_PREFIX}{}", self.name)
    }
}

/// Why a tool's `inputSchema` has invalid `x-mcp-header` annotations. `at` is
/// the JSON pointer (RFC 6901) of the annotated property inside `inputSchema`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderSchemaError {
    #[error("x-mcp-header on property `{at}` must be a string")]
    NotAString { at: String },
    #[error("x-mcp-header on property `{at}` must not be empty")]
    Empty { at: String },
    #[error("x-mcp-header {name:?} on property `{at}` is not an RFC 9110 token")]
    NotAToken { at: String, name: String },
    #[error(
        "x-mcp-header {name:?} on property `{at}` duplicates {first:?} on property \
         `{first_at}` (names are case-insensitive)"
    )]
    Duplicate {
        at: String,
        name: String,
        first: String,
        first_at: String,
    },
    #[error(
        "x-mcp-header {name:?} on property `{at}` has type {found}; only string, \
         integer or boolean properties may be annotated"
    )]
    ForbiddenType {
        at: String,
        name: String,
        found: String,
    },
    #[error(
        "x-mcp-header at `{at}` is not reachable from the schema root through \
         `properties` alone"
    )]
    Unreachable { at: String },
}

/// All `x-mcp-header` annotations of a tool's `inputSchema`, in schema order,
/// or why the tool is invalid. `Ok(vec![])` when there are none.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, HeaderSchemaError> {
    let mut found = Vec::new();
    // Depth-first, in document order: children are pushed in reverse.
    let mut stack: Vec<Node<'_>> = vec![Node {
        value: input_schema,
        pointer: String::new(),
        role: Role::Schema {
            path: Some(Vec::new()),
        },
    }];
    while let Some(Node {
        value,
        pointer,
        role,
    }) = stack.pop()
    {
        let start = stack.len();
        match (role, value) {
            (Role::Data, _) => {}
            (_, Value::Array(items)) => {
                // Arrays of subschemas (`anyOf`, `prefixItems`, …) or of
                // unknown content: never annotation sites.
                for (i, item) in items.iter().enumerate() {
                    stack.push(child(
                        &pointer,
                        item,
                        &i.to_string(),
                        Role::Schema { path: None },
                    ));
                }
            }
            (Role::Names { path }, Value::Object(map)) => {
                for (name, sub) in map {
                    let path = path.as_ref().map(|p| {
                        let mut p = p.clone();
                        p.push(name.clone());
                        p
                    });
                    stack.push(child(&pointer, sub, name, Role::Schema { path }));
                }
            }
            (Role::Schema { path }, Value::Object(map)) => {
                if let Some(annotation) = map.get(KEYWORD) {
                    let at = pointer.clone();
                    match &path {
                        Some(path) if !path.is_empty() => {
                            found.push(check_annotation(annotation, map, path, at, &found)?);
                        }
                        _ => {
                            return Err(HeaderSchemaError::Unreachable {
                                at: format!("{at}/{KEYWORD}"),
                            })
                        }
                    }
                }
                for (key, sub) in map {
                    let role = match key.as_str() {
                        KEYWORD => continue,
                        "properties" => Role::Names { path: path.clone() },
                        "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
                        | "dependencies" => Role::Names { path: None },
                        "const" | "enum" | "default" | "examples" => Role::Data,
                        _ => Role::Schema { path: None },
                    };
                    stack.push(child(&pointer, sub, key, role));
                }
            }
            _ => {}
        }
        stack[start..].reverse();
    }
    Ok(found)
}

/// How the schema walk interprets a JSON value.
#[derive(Clone)]
enum Role {
    /// A (sub)schema; `path` is its property path when it is reachable from
    /// the root through `properties` alone.
    Schema { path: Option<Vec<String>> },
    /// A map from names to subschemas (`properties`, `$defs`, …).
    Names { path: Option<Vec<String>> },
    /// Instance data, never searched.
    Data,
}

struct Node<'a> {
    value: &'a Value,
    pointer: String,
    role: Role,
}

fn child<'a>(pointer: &str, value: &'a Value, key: &str, role: Role) -> Node<'a> {
    Node {
        value,
        pointer: format!("{pointer}/{}", escape(key)),
        role,
    }
}

/// RFC 6901 escaping of one reference token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn check_annotation(
    annotation: &Value,
    schema: &Map<String, Value>,
    path: &[String],
    at: String,
    found: &[HeaderParam],
) -> Result<HeaderParam, HeaderSchemaError> {
    let Value::String(name) = annotation else {
        return Err(HeaderSchemaError::NotAString { at });
    };
    if name.is_empty() {
        return Err(HeaderSchemaError::Empty { at });
    }
    if !is_token(name) {
        return Err(HeaderSchemaError::NotAToken {
            at,
            name: name.clone(),
        });
    }
    if let Some(first) = found.iter().find(|p| p.name.eq_ignore_ascii_case(name)) {
        return Err(HeaderSchemaError::Duplicate {
            at,
            name: name.clone(),
            first: first.name.clone(),
            first_at: pointer_of(&first.path),
        });
    }
    let kind = kind_of(schema.get("type")).map_err(|found| HeaderSchemaError::ForbiddenType {
        at,
        name: name.clone(),
        found,
    })?;
    Ok(HeaderParam {
        name: name.clone(),
        path: path.to_vec(),
        kind,
    })
}

/// The schema pointer of a property path: `/properties/a/properties/b`.
fn pointer_of(path: &[String]) -> String {
    path.iter()
        .map(|p| format!("/properties/{}", escape(p)))
        .collect()
}

/// The kind of a schema `type`, or a description of the offending type.
fn kind_of(ty: Option<&Value>) -> Result<ParamKind, String> {
    let single = |t: &str| match t {
        "string" => Some(ParamKind::String),
        "integer" => Some(ParamKind::Integer),
        "boolean" => Some(ParamKind::Boolean),
        _ => None,
    };
    match ty {
        None => Err("(missing)".to_owned()),
        Some(Value::String(t)) => single(t).ok_or_else(|| format!("{t:?}")),
        Some(Value::Array(types)) => {
            let offending = || Value::Array(types.clone()).to_string();
            let mut kind: Option<ParamKind> = None;
            for t in types {
                match t.as_str() {
                    Some("null") => {}
                    Some(name) => match (single(name), &kind) {
                        (Some(k), None) => kind = Some(k),
                        (Some(k), Some(prev)) if k == *prev => {}
                        _ => return Err(offending()),
                    },
                    None => return Err(offending()),
                }
            }
            kind.ok_or_else(offending)
        }
        Some(other) => Err(other.to_string()),
    }
}

/// RFC 9110 `token`: `1*tchar`.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

/// Why a header value cannot be encoded, decoded or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderValueError {
    #[error("header value has =?base64?…?= markers but invalid base64 content")]
    InvalidBase64,
    #[error("base64 header value does not decode to UTF-8")]
    NotUtf8,
    #[error("header value contains control, non-ASCII or edge whitespace characters")]
    InvalidChars,
    #[error("parameter {param:?}: integer {value} is outside ±(2^53−1)")]
    IntegerOutOfRange { param: String, value: String },
    #[error("parameter {param:?}: expected a {expected} argument, found {found}")]
    WrongType {
        param: String,
        expected: &'static str,
        found: &'static str,
    },
}

/// Encodes a string for an `Mcp-Param-*` or `Mcp-Name` header value: as-is
/// when it is plain visible ASCII (inner spaces allowed), otherwise as
/// `=?base64?{standard padded base64 of the UTF-8 bytes}?=`. Values that look
/// like the encoded form (`=?…?=`) are encoded too, so they decode literally.
pub fn encode_header_value(s: &str) -> String {
    if needs_encoding(s) {
        format!("{B64_START}{}{B64_END}", STANDARD.encode(s.as_bytes()))
    } else {
        s.to_owned()
    }
}

fn needs_encoding(s: &str) -> bool {
    let edge_space = |c: char| c == ' ' || c == '\t';
    s.chars().any(|c| !c.is_ascii() || c.is_ascii_control())
        || s.starts_with(edge_space)
        || s.ends_with(edge_space)
        || (s.starts_with("=?") && s.ends_with(B64_END))
}

/// Decodes a received header value (after the caller trimmed HTTP OWS):
/// `=?base64?…?=` (lowercase marker, case-sensitive) is decoded — invalid
/// base64 or non-UTF-8 content is an error; anything else is literal. A
/// literal value may hold only visible ASCII, plus spaces and tabs inside.
pub fn decode_header_value(s: &str) -> Result<String, HeaderValueError> {
    if let Some(inner) = s
        .strip_prefix(B64_START)
        .and_then(|rest| rest.strip_suffix(B64_END))
    {
        let bytes = STANDARD
            .decode(inner)
            .map_err(|_| HeaderValueError::InvalidBase64)?;
        return String::from_utf8(bytes).map_err(|_| HeaderValueError::NotUtf8);
    }
    let bytes = s.as_bytes();
    let inner_ok = |b: &u8| matches!(b, b' ' | b'\t' | 0x21..=0x7e);
    let edge_ok = |b: Option<&u8>| b.is_none_or(|b| matches!(b, 0x21..=0x7e));
    if bytes.iter().all(inner_ok) && edge_ok(bytes.first()) && edge_ok(bytes.last()) {
        Ok(s.to_owned())
    } else {
        Err(HeaderValueError::InvalidChars)
    }
}

/// The standard headers of a request Manifold sends over HTTP: `Mcp-Method`, and
/// `Mcp-Name` when the request names something (the upstream's own tool or prompt
/// name, or the URI), encoded as header values.
pub fn standard_headers(method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let mut h = vec![(
        crate::methods::HEADER_METHOD.to_string(),
        method.to_string(),
    )];
    if let Some(n) = name {
        h.push((
            crate::methods::HEADER_NAME.to_string(),
            encode_header_value(n),
        ));
    }
    h
}

/// The headers a client must send for these arguments: one
/// `(header name, encoded value)` per param whose value is present and
/// non-null, in `params` order. A value whose JSON type does not match the
/// kind is an error, as is an integer outside ±(2^53−1). Floats with a zero
/// fraction (`42.0`) count as integers.
pub fn param_headers(
    params: &[HeaderParam],
    arguments: Option<&Value>,
) -> Result<Vec<(String, String)>, HeaderValueError> {
    let mut headers = Vec::new();
    let Some(arguments) = arguments else {
        return Ok(headers);
    };
    for param in params {
        let value = param
            .path
            .iter()
            .try_fold(arguments, |v, key| v.as_object()?.get(key));
        let Some(value) = value.filter(|v| !v.is_null()) else {
            continue;
        };
        let wrong_type = || HeaderValueError::WrongType {
            param: param.name.clone(),
            expected: param.kind.as_str(),
            found: json_type(value),
        };
        let text = match (&param.kind, value) {
            (ParamKind::String, Value::String(s)) => s.clone(),
            (ParamKind::Boolean, Value::Bool(b)) => b.to_string(),
            (ParamKind::Integer, Value::Number(n)) => {
                let out_of_range = || HeaderValueError::IntegerOutOfRange {
                    param: param.name.clone(),
                    value: n.to_string(),
                };
                match integer_of(n) {
                    Some(i) if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) => i.to_string(),
                    Some(_) => return Err(out_of_range()),
                    None if is_float_integral(n) => return Err(out_of_range()),
                    None => return Err(wrong_type()),
                }
            }
            _ => return Err(wrong_type()),
        };
        headers.push((param.header_name(), encode_header_value(&text)));
    }
    Ok(headers)
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() && !is_float_integral(n) => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_float_integral(n: &serde_json::Number) -> bool {
    n.as_f64()
        .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// The integer value of a JSON number, if it is integral: any i64 or u64, or
/// a float with zero fraction below 2^127 in magnitude (converted exactly).
fn integer_of(n: &serde_json::Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    let f = n.as_f64()?;
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0; // 2^127
    if f.is_finite() && f.fract() == 0.0 && f.abs() < LIMIT {
        // Exact: an integral float below 2^127 is representable in i128.
        #[allow(clippy::cast_possible_truncation)]
        return Some(f as i128);
    }
    None
}

/// Server-side check of one received (already decoded) header value against
/// the body value: strings are equal exactly, integers numerically (`"42"`
/// matches `42` and `42.0`), booleans as `"true"`/`"false"` exactly. Returns
/// `false` on any mismatch, including a body value of another type.
pub fn header_matches_value(decoded: &str, kind: &ParamKind, body_value: &Value) -> bool {
    match (kind, body_value) {
        (ParamKind::String, Value::String(s)) => decoded == s,
        (ParamKind::Boolean, Value::Bool(b)) => decoded == if *b { "true" } else { "false" },
        (ParamKind::Integer, Value::Number(n)) => {
            let digits = decoded.strip_prefix('-').unwrap_or(decoded);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            matches!(
                (decoded.parse::<i128>(), integer_of(n)),
                (Ok(h), Some(b)) if h == b
            )
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
