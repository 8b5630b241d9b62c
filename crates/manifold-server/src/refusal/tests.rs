//! The refusal table, row by row, as clients see it.

use super::*;

fn upstream() -> UpstreamError {
    UpstreamError::Timeout {
        upstream: "u".into(),
        timeout: std::time::Duration::from_secs(1),
    }
}

/// The table: each refusal's code and status in the session era and in
/// 2026-07-28, as clients see them.
#[test]
fn every_refusal_has_its_code_and_status_per_era() {
    use Refusal::*;
    let s = |n| StatusCode::from_u16(n).unwrap();
    let audit = AuditError::Unavailable {
        reason: "disk full".into(),
    };
    let rows: Vec<(Refusal, i64, u16, u16)> = vec![
        (HttpMethodNotAllowed, -32600, 405, 405),
        (UnsupportedMediaType, -32600, 415, 415),
        (NotAcceptable, -32600, 406, 406),
        (StreamNotAcceptable, -32600, 406, 406),
        (BodyTooLarge { limit: 1 }, -32600, 413, 413),
        (LineTooLong { limit: 1 }, -32600, 413, 413),
        (BodyUnreadable, -32600, 400, 400),
        (
            BodyTimeout(std::time::Duration::from_secs(1)),
            -32600,
            408,
            408,
        ),
        (HostNotAllowed { host: "h".into() }, -32600, 403, 403),
        (HostNotListed { host: "h".into() }, -32600, 403, 403),
        (OriginNotAllowed { origin: "o".into() }, -32600, 403, 403),
        (
            BadMessage(MessageError::Parse("x".into())),
            -32700,
            400,
            400,
        ),
        (BadMessage(MessageError::Batch), -32600, 400, 400),
        (SessionRequired, -32600, 400, 400),
        (UnknownSession, -32600, 404, 404),
        (UnsupportedProtocolHeader("1999".into()), -32600, 400, 400),
        (DiscoverWithoutMeta, -32601, 404, 404),
        (TooManySessions { limit: 1 }, -32603, 503, 503),
        (TooManySessionsFromPeer { limit: 1 }, -32603, 503, 503),
        (TooManySubscriptions { limit: 1 }, -32603, 200, 200),
        (TooManyCalls { limit: 1 }, -32603, 200, 200),
        (TooManyListens { limit: 1 }, -32603, 503, 503),
        (
            RateLimited {
                tool: "t".into(),
                rule: 0,
                limit: "1/s, burst 1".into(),
                retry_after: std::time::Duration::from_millis(1500),
            },
            -32060,
            200,
            429,
        ),
        (MetaRequired("m".into()), -32602, 400, 400),
        (HeaderMismatch("m".into()), -32020, 400, 400),
        (
            UnsupportedVersion {
                requested: "x".into(),
            },
            -32022,
            400,
            400,
        ),
        (
            NotInThisRevision {
                method: "ping".into(),
                version: "v".into(),
            },
            -32601,
            404,
            404,
        ),
        (InvalidLogLevel("x".into()), -32602, 400, 400),
        (MethodNotFound("x".into()), -32601, 200, 404),
        (InvalidParams("x".into()), -32602, 200, 200),
        (BadListenFilter("x".into()), -32602, 400, 400),
        (
            UnknownName {
                kind: "tool",
                name: "x".into(),
            },
            -32602,
            200,
            200,
        ),
        (ResourceNotFound { uri: "x".into() }, -32002, 200, 200),
        (AuditUnavailable(audit), -32603, 200, 200),
        (Upstream(upstream()), -32051, 200, 200),
        (
            UpstreamRefused {
                code: -32000,
                message: "m".into(),
            },
            -32000,
            200,
            200,
        ),
        (Cancelled, -32603, 200, 200),
        (
            MissingCapabilities(vec!["sampling".into()]),
            -32021,
            400,
            400,
        ),
        (
            ConfirmationUnavailable {
                tool: "t".into(),
                why: "w".into(),
            },
            -32021,
            200,
            400,
        ),
        (HeldCallsFull { limit: 1 }, -32603, 503, 503),
        (HeldCallsFullForPrincipal { limit: 1 }, -32603, 503, 503),
        (InvalidRequestState("it expired"), -32602, 400, 400),
        (HeldCallLost, -32603, 200, 200),
        (
            TasksExtensionRequired {
                method: "tasks/get".into(),
            },
            -32021,
            400,
            400,
        ),
        (UnknownTask, -32602, 200, 200),
        (TaskExpired, -32602, 200, 200),
        (TasksNotOffered("x".into()), -32601, 200, 404),
        (
            UnusableTask {
                upstream: "u".into(),
                why: "w".into(),
            },
            -32603,
            200,
            200,
        ),
        (
            NoTokenToExchange {
                upstream: "u".into(),
            },
            -32600,
            200,
            403,
        ),
        (
            ExchangeRefused {
                upstream: "u".into(),
                why: "w".into(),
            },
            -32600,
            200,
            403,
        ),
        (
            ClusterUnavailable {
                what: "the answer",
                error: manifold_cluster::ClusterError::Timeout,
            },
            -32603,
            503,
            503,
        ),
    ];
    for (r, code, session, stateless) in rows {
        assert_eq!(r.code(), Some(ErrorCode(code)), "{r:?}");
        assert_eq!(r.status(Era::Session), s(session), "{r:?} (session era)");
        assert_eq!(r.status(Era::Stateless), s(stateless), "{r:?} (2026-07-28)");
        assert!(!r.to_string().is_empty(), "{r:?} has a message");
    }
}

#[test]
fn replies_carry_the_id_data_and_outcome() {
    let id = RequestId::number(7);
    let r = Refusal::UnknownName {
        kind: "tool",
        name: "nope".into(),
    };
    let Reply::Message { status, bytes, .. } = r.reply(Some(&id), Era::Session) else {
        panic!("a message");
    };
    assert_eq!(status, StatusCode::OK);
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["id"], 7);
    assert_eq!(v["error"]["code"], -32602);
    assert_eq!(v["error"]["message"], "Unknown tool: nope");
    assert_eq!(r.outcome(), Outcome::Refused { code: -32602 });

    let v = Refusal::UnsupportedVersion {
        requested: "1999-01-01".into(),
    }
    .to_rpc_error()
    .to_value();
    assert_eq!(v["data"]["requested"], "1999-01-01");
    assert!(v["data"]["supported"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
    let v = Refusal::MissingCapabilities(vec!["sampling".into(), "roots".into()])
        .to_rpc_error()
        .to_value();
    assert_eq!(
        v["data"]["requiredCapabilities"],
        json!({"sampling": {}, "roots": {}})
    );

    // A body whose id could be read keeps it; a refusal found later uses the
    // request's.
    let bad = MessageError::Invalid {
        reason: "x".into(),
        id: Some(RequestId::number(3)),
    };
    let Reply::Message { bytes, .. } = Refusal::BadMessage(bad).reply(None, Era::Session) else {
        panic!("a message");
    };
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["id"], 3);

    assert_eq!(Refusal::Upstream(upstream()).outcome(), Outcome::Timeout);
    assert_eq!(Refusal::Cancelled.outcome(), Outcome::Cancelled);
    let audit = AuditError::Closed;
    assert!(Refusal::AuditUnavailable(audit)
        .to_string()
        .starts_with("audit log unavailable"));
}

/// The tool-error family: no JSON-RPC code, 200 in both eras, a result with
/// `isError: true` carrying the request's id, recorded by its own rule.
#[test]
fn tool_errors_are_results_of_the_same_table() {
    let r = Refusal::Tool(ToolError::NotConfirmed {
        tool: "t".into(),
        why: NotConfirmed::Declined,
    });
    assert_eq!(r.code(), None);
    assert_eq!(r.status(Era::Session), StatusCode::OK);
    assert_eq!(r.status(Era::Stateless), StatusCode::OK);
    assert_eq!(r.outcome(), Outcome::ToolError);
    let Reply::Message { bytes, refused, .. } =
        r.reply(Some(&RequestId::number(9)), Era::Stateless)
    else {
        panic!("a message");
    };
    assert!(!refused);
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["id"], 9);
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(v["result"]["resultType"], "complete");
    let upstream = Refusal::Tool(ToolError::Upstream(upstream()));
    assert_eq!(upstream.outcome(), Outcome::Timeout);
}

/// An upstream's own error keeps 200, but for a 2026-07-28 client a -32021
/// (the client's missing capability) is 400, as it would be directly.
#[test]
fn relayed_errors_keep_200_but_a_missing_capability_in_2026() {
    let raw = |code: i64| {
        serde_json::value::RawValue::from_string(format!(r#"{{"code":{code},"message":"m"}}"#))
            .unwrap()
    };
    let rows = [
        (-32021, Era::Stateless, 400),
        (-32021, Era::Session, 200),
        (-32020, Era::Stateless, 200),
        (-32602, Era::Stateless, 200),
    ];
    for (code, era, status) in rows {
        let got = status_of_relayed(era, &CallOutcome::Error(raw(code)));
        assert_eq!(got.as_u16(), status, "{code} in {era:?}");
    }
}

/// A call to a quarantined item answers byte for byte as one to an unknown
/// item (in both eras), and only the audit outcome tells them apart.
#[test]
fn a_quarantined_item_answers_as_an_unknown_one() {
    let id = RequestId::number(3);
    let unknowns = || {
        [
            Refusal::UnknownName {
                kind: "tool",
                name: "demo__weather".into(),
            },
            Refusal::ResourceNotFound {
                uri: "demo://forecast/paris".into(),
            },
            Refusal::InvalidParams("Unknown prompt: demo__greet".into()),
        ]
    };
    for (plain, held) in unknowns().into_iter().zip(unknowns()) {
        let held = Refusal::Quarantined(Box::new(held));
        for era in [Era::Session, Era::Stateless] {
            let (
                Reply::Message {
                    status: s1,
                    bytes: b1,
                    ..
                },
                Reply::Message {
                    status: s2,
                    bytes: b2,
                    ..
                },
            ) = (plain.reply(Some(&id), era), held.reply(Some(&id), era))
            else {
                panic!("messages");
            };
            assert_eq!((s1, b1), (s2, b2), "{plain:?} in {era:?}");
        }
        let code = plain.code().map(|c| c.0).unwrap_or_default();
        assert_eq!(held.outcome(), Outcome::Quarantined { code });
        assert_eq!(held.to_string(), plain.to_string());
    }
}

#[test]
fn the_tasks_extension_refusal_names_the_extension_in_data() {
    let v = Refusal::TasksExtensionRequired {
        method: "tasks/get".into(),
    }
    .data()
    .unwrap();
    assert_eq!(
        v,
        json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
    );
}
