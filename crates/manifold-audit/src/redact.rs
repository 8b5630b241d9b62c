//! Redaction of secrets in audited arguments.
//!
//! A [`Redactor`] holds the configured key names. Every object member, at any depth
//! and inside arrays too, whose key equals one of them ignoring case (Unicode
//! lowercase comparison) has its value replaced, whatever it was (a string, a number,
//! a whole object), by the string [`REDACTED`].
//!
//! Invariants: only values are replaced; keys, member order and everything else stay
//! as they were. Matching is on the whole key: `password` redacts `Password` and
//! `PASSWORD` but not `password_hint` or `old_password` (list those too).
//!
//! Not here: the digest (`arguments_sha256` is computed by the caller over the
//! arguments *before* redaction), redaction of anything but argument keys.

use serde_json::Value;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces the values of configured keys with [`REDACTED`].
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// The configured keys, lowercased.
    keys: Vec<String>,
}

impl Redactor {
    pub fn new<S: AsRef<str>>(keys: &[S]) -> Self {
        let mut keys: Vec<String> = keys.iter().map(|k| k.as_ref().to_lowercase()).collect();
        keys.sort();
        keys.dedup();
        Redactor { keys }
    }

    /// Whether nothing is ever redacted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether a member named `key` gets redacted.
    pub fn matches(&self, key: &str) -> bool {
        if key.is_ascii() {
            self.keys.iter().any(|k| k.eq_ignore_ascii_case(key))
        } else {
            let lower = key.to_lowercase();
            self.keys.contains(&lower)
        }
    }

    /// Redacts `value` in place.
    pub fn redact(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        // An explicit stack instead of recursion: arguments can be deep.
        let mut stack: Vec<&mut Value> = vec![value];
        while let Some(v) = stack.pop() {
            match v {
                Value::Object(map) => {
                    for (key, member) in map.iter_mut() {
                        if self.matches(key) {
                            *member = Value::String(REDACTED.to_string());
                        } else {
                            stack.push(member);
                        }
                    }
                }
                Value::Array(items) => stack.extend(items.iter_mut()),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redaction_table() {
        let r = Redactor::new(&["password", "Token", "API_KEY", "пароль"]);
        let cases: Vec<(&str, Value, Value)> = vec![
            (
                "top-level key",
                json!({"user": "ann", "password": "hunter2"}),
                json!({"user": "ann", "password": REDACTED}),
            ),
            (
                "case-insensitive both ways",
                json!({"PassWord": "a", "TOKEN": "b", "api_key": "c", "Api_Key": "d"}),
                json!({"PassWord": REDACTED, "TOKEN": REDACTED, "api_key": REDACTED, "Api_Key": REDACTED}),
            ),
            (
                "non-ASCII key, case-insensitive",
                json!({"ПАРОЛЬ": "секрет", "имя": "анна"}),
                json!({"ПАРОЛЬ": REDACTED, "имя": "анна"}),
            ),
            (
                "nested objects",
                json!({"db": {"conn": {"host": "h", "password": "p"}}, "token": "t"}),
                json!({"db": {"conn": {"host": "h", "password": REDACTED}}, "token": REDACTED}),
            ),
            (
                "objects inside arrays, at any depth",
                json!({"users": [{"name": "a", "password": 1}, [{"token": [1, 2]}], "password"]}),
                json!({"users": [{"name": "a", "password": REDACTED}, [{"token": REDACTED}], "password"]}),
            ),
            (
                "top-level array",
                json!([{"token": "x"}, {"other": "y"}]),
                json!([{"token": REDACTED}, {"other": "y"}]),
            ),
            (
                "whole subtree replaced, whatever its type",
                json!({"password": {"old": "a", "new": "b"}, "token": null, "api_key": 42}),
                json!({"password": REDACTED, "token": REDACTED, "api_key": REDACTED}),
            ),
            (
                "whole-key match only",
                json!({"password_hint": "pet", "my_token": "x", "tokens": 3}),
                json!({"password_hint": "pet", "my_token": "x", "tokens": 3}),
            ),
            (
                "string values equal to a key are not touched",
                json!({"field": "password"}),
                json!({"field": "password"}),
            ),
            ("scalars untouched", json!("password"), json!("password")),
        ];
        for (what, mut input, want) in cases {
            r.redact(&mut input);
            assert_eq!(input, want, "{what}");
        }
    }

    #[test]
    fn member_order_is_kept() {
        let r = Redactor::new(&["b"]);
        let mut v = json!({"c": 1, "b": 2, "a": 3});
        r.redact(&mut v);
        assert_eq!(v.to_string(), r#"{"c":1,"b":"[REDACTED]","a":3}"#);
    }

    #[test]
    fn empty_redactor_changes_nothing() {
        let r = Redactor::new::<&str>(&[]);
        assert!(r.is_empty());
        let mut v = json!({"password": "x"});
        r.redact(&mut v);
        assert_eq!(v, json!({"password": "x"}));
    }
}
