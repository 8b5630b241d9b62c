use super::*;
use serde_json::json;

fn param(name: &str, path: &[&str], kind: ParamKind) -> HeaderParam {
    HeaderParam {
        name: name.to_owned(),
        path: path.iter().map(|s| (*s).to_owned()).collect(),
        kind,
    }
}

// ---- value encoding -------------------------------------------------------

#[test]
fn spec_encoding_examples() {
    let cases = [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("", ""),
        ("us west 1", "us west 1"),
    ];
    for (input, expected) in cases {
        assert_eq!(encode_header_value(input), expected, "encoding {input:?}");
        assert_eq!(
            decode_header_value(expected).as_deref(),
            Ok(input),
            "decoding {expected:?}"
        );
    }
}

#[test]
fn encodes_controls_edges_and_sentinel_lookalikes() {
    for input in [
        "a\tb",
        "a\rb",
        "a\u{7f}b",
        "\tx",
        "x ",
        "=?x?=",
        "=?=",
        "=?BASE64?abc?=",
        "é",
    ] {
        let encoded = encode_header_value(input);
        assert!(encoded.starts_with("=?base64?"), "{input:?} -> {encoded}");
        assert_eq!(decode_header_value(&encoded).as_deref(), Ok(input));
    }
    // Only a full `=?…?=` frame triggers encoding.
    for input in ["=?abc", "abc?=", "a=?b?=c", "SGVsbG8="] {
        assert_eq!(encode_header_value(input), input);
    }
}

#[test]
fn decode_round_trips() {
    for input in [
        "plain",
        "with inner  spaces",
        "日本語",
        "tab\there",
        "\u{0}nul",
        "=?base64??=",
        " both ",
        "",
        "emoji 🎉",
    ] {
        assert_eq!(
            decode_header_value(&encode_header_value(input)).as_deref(),
            Ok(input)
        );
    }
}

#[test]
fn decode_rejects_invalid_base64_and_non_utf8() {
    assert_eq!(
        decode_header_value("=?base64?not base64!?="),
        Err(HeaderValueError::InvalidBase64)
    );
    assert_eq!(
        decode_header_value("=?base64?SGVsbG8?="),
        Err(HeaderValueError::InvalidBase64),
        "padding is required"
    );
    // 0xff 0xfe is not UTF-8.
    assert_eq!(
        decode_header_value("=?base64?//4=?="),
        Err(HeaderValueError::NotUtf8)
    );
    assert_eq!(decode_header_value("=?base64??=").as_deref(), Ok(""));
}

#[test]
fn decode_literals() {
    // Markers are case-sensitive; an uppercase marker is a literal.
    assert_eq!(
        decode_header_value("=?BASE64?SGVsbG8=?=").as_deref(),
        Ok("=?BASE64?SGVsbG8=?=")
    );
    // Base64 without markers is a literal.
    assert_eq!(decode_header_value("SGVsbG8=").as_deref(), Ok("SGVsbG8="));
    // Overlapping markers are not a frame.
    assert_eq!(
        decode_header_value("=?base64?=").as_deref(),
        Ok("=?base64?=")
    );
    assert_eq!(decode_header_value("a b\tc").as_deref(), Ok("a b\tc"));
}

#[test]
fn decode_rejects_invalid_literal_chars() {
    for bad in [
        "a\nb", "a\rb", "a\u{0}b", "a\u{7f}b", "é", " lead", "trail\t",
    ] {
        assert_eq!(
            decode_header_value(bad),
            Err(HeaderValueError::InvalidChars),
            "{bad:?}"
        );
    }
}

// ---- client headers -------------------------------------------------------

#[test]
fn header_name_has_prefix() {
    assert_eq!(
        param("Region", &["region"], ParamKind::String).header_name(),
        "Mcp-Param-Region"
    );
}

#[test]
fn param_headers_extracts_nested_paths_in_order() {
    let params = [
        param("B", &["a", "b"], ParamKind::String),
        param("Count", &["n"], ParamKind::Integer),
        param("Flag", &["f"], ParamKind::Boolean),
        param("Uni", &["u"], ParamKind::String),
    ];
    let args = json!({"u": "世界", "f": false, "n": -7, "a": {"b": "x"}});
    assert_eq!(
        param_headers(&params, Some(&args)),
        Ok(vec![
            ("Mcp-Param-B".to_owned(), "x".to_owned()),
            ("Mcp-Param-Count".to_owned(), "-7".to_owned()),
            ("Mcp-Param-Flag".to_owned(), "false".to_owned()),
            ("Mcp-Param-Uni".to_owned(), "=?base64?5LiW55WM?=".to_owned()),
        ])
    );
}

#[test]
fn param_headers_skips_null_and_absent() {
    let params = [
        param("A", &["a"], ParamKind::String),
        param("B", &["x", "b"], ParamKind::Integer),
        param("C", &["c"], ParamKind::Boolean),
    ];
    let args = json!({"a": null, "x": {}, "c": true});
    assert_eq!(
        param_headers(&params, Some(&args)),
        Ok(vec![("Mcp-Param-C".to_owned(), "true".to_owned())])
    );
    assert_eq!(param_headers(&params, None), Ok(vec![]));
    assert_eq!(
        param_headers(&params, Some(&json!({"x": "str"}))),
        Ok(vec![])
    );
}

#[test]
fn param_headers_integers() {
    let p = [param("N", &["n"], ParamKind::Integer)];
    let value = |v: Value| param_headers(&p, Some(&json!({ "n": v })));
    let one = |s: &str| Ok(vec![("Mcp-Param-N".to_owned(), s.to_owned())]);
    assert_eq!(value(json!(42)), one("42"));
    assert_eq!(value(json!(42.0)), one("42"));
    assert_eq!(value(json!(-0.0)), one("0"));
    assert_eq!(
        value(json!(9_007_199_254_740_991_i64)),
        one("9007199254740991")
    );
    assert_eq!(
        value(json!(-9_007_199_254_740_991_i64)),
        one("-9007199254740991")
    );
    for big in [
        json!(9_007_199_254_740_992_i64),
        json!(-9_007_199_254_740_992_i64),
        json!(9_007_199_254_740_992.0),
        json!(u64::MAX),
        json!(1e300),
    ] {
        assert!(
            matches!(
                value(big.clone()),
                Err(HeaderValueError::IntegerOutOfRange { .. })
            ),
            "{big}"
        );
    }
    assert_eq!(
        value(json!(4.5)),
        Err(HeaderValueError::WrongType {
            param: "N".to_owned(),
            expected: "integer",
            found: "number",
        })
    );
    assert_eq!(
        value(json!("42")),
        Err(HeaderValueError::WrongType {
            param: "N".to_owned(),
            expected: "integer",
            found: "string",
        })
    );
}

#[test]
fn param_headers_rejects_wrong_types() {
    let cases = [
        (ParamKind::String, json!(1), "integer"),
        (ParamKind::String, json!(["a"]), "array"),
        (ParamKind::Boolean, json!("true"), "string"),
        (ParamKind::Boolean, json!({}), "object"),
    ];
    for (kind, v, found) in cases {
        let expected = kind.as_str();
        let p = [param("P", &["p"], kind)];
        assert_eq!(
            param_headers(&p, Some(&json!({ "p": v }))),
            Err(HeaderValueError::WrongType {
                param: "P".to_owned(),
                expected,
                found,
            })
        );
    }
}

// ---- server-side check ----------------------------------------------------

#[test]
fn header_matches_body() {
    use ParamKind::*;
    let yes = [
        ("us-west1", String, json!("us-west1")),
        ("", String, json!("")),
        ("42", Integer, json!(42)),
        ("42", Integer, json!(42.0)),
        ("-7", Integer, json!(-7)),
        ("0", Integer, json!(-0.0)),
        ("18446744073709551615", Integer, json!(u64::MAX)),
        ("true", Boolean, json!(true)),
        ("false", Boolean, json!(false)),
    ];
    for (h, kind, body) in yes {
        assert!(header_matches_value(h, &kind, &body), "{h:?} vs {body}");
    }
    let no = [
        ("us-west1", String, json!("US-WEST1")),
        ("42", String, json!(42)),
        ("42", Integer, json!(43)),
        ("42", Integer, json!(42.5)),
        ("42", Integer, json!("42")),
        ("+42", Integer, json!(42)),
        (" 42", Integer, json!(42)),
        ("42.0", Integer, json!(42)),
        ("", Integer, json!(0)),
        ("-", Integer, json!(0)),
        (
            "99999999999999999999999999999999999999999",
            Integer,
            json!(1e300),
        ),
        ("True", Boolean, json!(true)),
        ("1", Boolean, json!(true)),
        ("false", Boolean, json!(true)),
        ("null", String, json!(null)),
    ];
    for (h, kind, body) in no {
        assert!(!header_matches_value(h, &kind, &body), "{h:?} vs {body}");
    }
}

// ---- schema validation ----------------------------------------------------

#[test]
fn no_annotations() {
    assert_eq!(header_params(&json!({"type": "object"})), Ok(vec![]));
    assert_eq!(header_params(&json!(true)), Ok(vec![]));
    assert_eq!(
        header_params(&json!({"type": "object", "properties": {"a": {"type": "string"}}})),
        Ok(vec![])
    );
}

#[test]
fn extracts_annotations_in_schema_order() {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "loc": {
                "type": "object",
                "properties": {
                    "zone": {"type": ["null", "integer"], "x-mcp-header": "Zone"},
                    "x-mcp-header": {"type": "boolean", "x-mcp-header": "Named"}
                }
            },
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "plain": {"type": "number"}
        },
        "required": ["region"]
    });
    assert_eq!(
        header_params(&schema),
        Ok(vec![
            param("Region", &["region"], ParamKind::String),
            param("Zone", &["loc", "zone"], ParamKind::Integer),
            param("Named", &["loc", "x-mcp-header"], ParamKind::Boolean),
            param("Dry-Run", &["dry"], ParamKind::Boolean),
        ])
    );
}

#[test]
fn property_named_like_the_keyword_is_not_an_annotation() {
    for schema in [
        json!({"properties": {"x-mcp-header": {"type": "object"}}}),
        json!({"items": {"properties": {"x-mcp-header": {"type": "string"}}}}),
        json!({"$defs": {"x-mcp-header": {"type": "string"}}}),
        json!({"properties": {"a": {"type": "string", "default": {"x-mcp-header": "A"}}}}),
        json!({"enum": [{"x-mcp-header": "A"}], "const": {"x-mcp-header": "B"}}),
    ] {
        assert_eq!(header_params(&schema), Ok(vec![]), "{schema}");
    }
}

fn err(schema: Value) -> HeaderSchemaError {
    match header_params(&schema) {
        Err(e) => e,
        Ok(found) => panic!("expected an error for {schema}, got {found:?}"),
    }
}

#[test]
fn rejects_bad_names() {
    let with = |name: Value| json!({"properties": {"a": {"type": "string", "x-mcp-header": name}}});
    assert_eq!(
        err(with(json!(""))),
        HeaderSchemaError::Empty {
            at: "/properties/a".to_owned()
        }
    );
    for bad in ["Has Space", "a:b", "a/b", "ü", "a\u{1}", "(x)", "a\"b"] {
        assert_eq!(
            err(with(json!(bad))),
            HeaderSchemaError::NotAToken {
                at: "/properties/a".to_owned(),
                name: bad.to_owned()
            }
        );
    }
    for bad in [json!(1), json!(null), json!(["A"]), json!(true)] {
        assert_eq!(
            err(with(bad)),
            HeaderSchemaError::NotAString {
                at: "/properties/a".to_owned()
            }
        );
    }
    // Every tchar is accepted.
    let all = "!#$%&'*+-.^_`|~09azAZ";
    assert_eq!(
        header_params(&with(json!(all))),
        Ok(vec![param(all, &["a"], ParamKind::String)])
    );
}

#[test]
fn rejects_case_insensitive_duplicates() {
    let schema = json!({"properties": {
        "a": {"type": "string", "x-mcp-header": "Region"},
        "b": {"properties": {"c/d": {"type": "string", "x-mcp-header": "REGION"}}}
    }});
    let e = err(schema);
    assert_eq!(
        e,
        HeaderSchemaError::Duplicate {
            at: "/properties/b/properties/c~1d".to_owned(),
            name: "REGION".to_owned(),
            first: "Region".to_owned(),
            first_at: "/properties/a".to_owned(),
        }
    );
    assert!(e.to_string().contains("case-insensitive"), "{e}");
}

#[test]
fn rejects_forbidden_types() {
    let cases = [
        (json!("number"), "\"number\""),
        (json!("object"), "\"object\""),
        (json!("array"), "\"array\""),
        (json!("null"), "\"null\""),
        (json!(["string", "integer"]), "[\"string\",\"integer\"]"),
        (json!(["number", "null"]), "[\"number\",\"null\"]"),
        (json!(["null"]), "[\"null\"]"),
        (json!([]), "[]"),
        (json!([1]), "[1]"),
        (json!(7), "7"),
    ];
    for (ty, found) in cases {
        let schema = json!({"properties": {"a": {"type": ty, "x-mcp-header": "A"}}});
        let e = err(schema);
        assert_eq!(
            e,
            HeaderSchemaError::ForbiddenType {
                at: "/properties/a".to_owned(),
                name: "A".to_owned(),
                found: found.to_owned(),
            }
        );
        assert!(e.to_string().contains("/properties/a"), "{e}");
    }
    // Missing type is invalid too.
    let schema = json!({"properties": {"a": {"x-mcp-header": "A"}}});
    assert!(matches!(
        err(schema),
        HeaderSchemaError::ForbiddenType { .. }
    ));
    // Nullable unions and repeated members are fine.
    let schema =
        json!({"properties": {"a": {"type": ["string", "null", "string"], "x-mcp-header": "A"}}});
    assert_eq!(
        header_params(&schema),
        Ok(vec![param("A", &["a"], ParamKind::String)])
    );
}

#[test]
fn rejects_unreachable_annotations() {
    let leaf = json!({"type": "string", "x-mcp-header": "A"});
    let cases = [
        (
            json!({"type": "string", "x-mcp-header": "A"}),
            "/x-mcp-header",
        ),
        (
            json!({"properties": {"l": {"type": "array", "items": leaf}}}),
            "/properties/l/items/x-mcp-header",
        ),
        (
            json!({"properties": {"l": {"type": "array", "items": {"properties": {"a": leaf}}}}}),
            "/properties/l/items/properties/a/x-mcp-header",
        ),
        (
            json!({"properties": {"a": {"anyOf": [{"type": "integer"}, leaf]}}}),
            "/properties/a/anyOf/1/x-mcp-header",
        ),
        (
            json!({"oneOf": [{"properties": {"a": leaf}}]}),
            "/oneOf/0/properties/a/x-mcp-header",
        ),
        (json!({"allOf": [leaf]}), "/allOf/0/x-mcp-header"),
        (json!({"not": leaf}), "/not/x-mcp-header"),
        (
            json!({"if": {}, "then": {"properties": {"a": leaf}}}),
            "/then/properties/a/x-mcp-header",
        ),
        (json!({"else": leaf}), "/else/x-mcp-header"),
        (
            json!({"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": leaf}}),
            "/$defs/A/x-mcp-header",
        ),
        (
            json!({"definitions": {"A": leaf}}),
            "/definitions/A/x-mcp-header",
        ),
        (
            json!({"additionalProperties": leaf}),
            "/additionalProperties/x-mcp-header",
        ),
        (
            json!({"patternProperties": {"^a": leaf}}),
            "/patternProperties/^a/x-mcp-header",
        ),
        (
            json!({"x-vendor": {"deep": [leaf]}}),
            "/x-vendor/deep/0/x-mcp-header",
        ),
    ];
    for (schema, at) in cases {
        assert_eq!(
            err(schema.clone()),
            HeaderSchemaError::Unreachable { at: at.to_owned() },
            "{schema}"
        );
    }
}

#[test]
fn deep_schemas_do_not_overflow() {
    let mut schema = json!({"type": "string", "x-mcp-header": "Deep"});
    for _ in 0..1_000 {
        // Built by hand: `json!` would re-serialize `schema` recursively.
        let mut properties = Map::new();
        properties.insert("p".to_owned(), schema);
        let mut object = Map::new();
        object.insert("type".to_owned(), json!("object"));
        object.insert("properties".to_owned(), Value::Object(properties));
        schema = Value::Object(object);
    }
    let found = header_params(&schema);
    assert!(matches!(&found, Ok(v) if v.len() == 1 && v[0].path.len() == 1_000));
}
