//! The size of a value's JSON text, counted as it is written and never kept:
//! how bounds on what a peer sends (list bytes, an item, an audit record) are
//! measured without a copy of what is being measured; and a value's JSON type
//! as an error message names it ([`type_name`]).
//!
//! Not here: canonical JSON (the audit chain and fingerprints write their own
//! byte-exact forms).

/// `v`'s JSON type with its article, as a message to a person or a model
/// says what it got ("not an array").
pub fn type_name(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The length in bytes of `value`'s compact JSON text (`serde_json`'s form);
/// 0 for a value that cannot be serialized.
pub fn encoded_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_what_serde_json_writes() {
        for v in [
            serde_json::json!(null),
            serde_json::json!({"a": [1, 2, {"é": "\u{1F600}\n"}]}),
            serde_json::json!("x".repeat(10_000)),
        ] {
            assert_eq!(
                super::encoded_len(&v),
                serde_json::to_vec(&v).unwrap().len()
            );
        }
    }
}
