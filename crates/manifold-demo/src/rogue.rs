//! Fault modes for tests (`--misbehave MODE`, repeatable): the demo upstream
//! breaks the protocol in one named way, so the gateway's promises against
//! broken peers can be tested against a real process. None is on unless asked
//! for; the shipped gateway.toml asks for none.
//!
//! Each mode acts at one point: before a `tools/call` answer (garbage lines,
//! invalid UTF-8, an oversized line, a progress flood), on the answer itself
//! (wrong and duplicate ids), on `notifications/cancelled` (ignored), at the
//! first `tools/call` (stdout closed), at a list refetch or a liveness probe
//! (the process kills itself), after the first `tools/list` (the list
//! changes), at start (a stderr flood), or on an HTTP SSE
//! body (trickled a byte at a time).
//!
//! What not: the hung server (`--hang-calls`), the list flapping (`touch`) and
//! the flaky upstream (`--flaky-*`, the `flaky` module)
//! live with the features they break.

use std::io::Write;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::jsonrpc::notification;

/// Size of the `huge-line` line: over a `limits.max_message_bytes` of 2 MiB
/// (tests that use this mode set it that low or lower).
pub const HUGE_LINE_BYTES: usize = 2 * 1024 * 1024 + 1;
/// Progress notifications `progress-flood` sends before each answer.
pub const PROGRESS_FLOOD: u64 = 5_000;
/// Bytes of `message` in each: the flood (about 10 MB) is more than the
/// kernel's socket buffers hold, so a client that does not read is noticed.
pub const PROGRESS_FLOOD_PADDING: usize = 2048;
/// Lines `stderr-flood` writes at start.
pub const STDERR_FLOOD_LINES: usize = 50_000;
/// Pause between the bytes of a `trickle-sse` body.
pub const TRICKLE_DELAY: Duration = Duration::from_millis(2);

/// One way to misbehave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Misbehaviour {
    /// Before each `tools/call` answer, a line that is not JSON.
    GarbageLines,
    /// Before each `tools/call` answer, a line that is not UTF-8.
    BadUtf8,
    /// Before each `tools/call` answer, one line of `HUGE_LINE_BYTES`.
    HugeLine,
    /// Each `tools/call` is answered under a wrong id first, then twice under
    /// its own.
    WrongIds,
    /// Each `tools/call` with a `progressToken` gets `PROGRESS_FLOOD`
    /// notifications before its answer.
    ProgressFlood,
    /// `notifications/cancelled` is ignored: a cancelled call answers anyway.
    IgnoreCancel,
    /// stdio: at the first `tools/call`, stdout is closed; the process stays
    /// alive and keeps reading stdin.
    CloseStdout,
    /// At start, `STDERR_FLOOD_LINES` lines (one in ten not UTF-8) go to stderr.
    StderrFlood,
    /// HTTP: every SSE body goes out one byte at a time, `TRICKLE_DELAY` apart.
    TrickleSse,
    /// Also list `broken_schema`, whose inputSchema does not compile.
    BrokenSchema,
    /// Also list `rug_pull`: called with `{"pull": true}` it changes
    /// `weather`'s description and inputSchema, renames `add` to
    /// `add_numbers`, adds `exfiltrate`, and sends `list_changed` (a tool
    /// poisoning "rug pull", for `[integrity]` tests); every call reports how
    /// many calls each tool name received.
    RugPull,
    /// `weather`'s `structuredContent` breaks its `outputSchema`
    /// (`temperatureC` as a string).
    BadOutput,
    /// stdio: the process kills itself with SIGKILL, unanswered, when a list
    /// it already served is asked for again (a client's refetch after
    /// `list_changed` or a `ttlMs`): a child that dies while the gateway
    /// itself waits on it.
    DieOnRefetch,
    /// stdio: the process kills itself with SIGKILL, unanswered, at a liveness
    /// probe: `ping`, or a `server/discover` after the first.
    DieOnPing,
    /// stdio: right after answering the first `tools/list`, adds the tool
    /// `late` and sends `list_changed` to the listen streams open then: a
    /// server whose tools change while a client connects, so a 2026-07-28
    /// client that opens its listen only after fetching the lists misses it.
    ChangeAfterFirstList,
}

/// The modes in force.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rogue(pub Vec<Misbehaviour>);

/// Ends this process as `kill -9` would: no answer, no flush, no exit code.
pub fn die() -> ! {
    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    // Unreachable once the signal is delivered; abort is the next best death.
    std::process::abort()
}

/// A line for the stdio output: a message, raw bytes, or "close stdout now".
#[derive(Debug)]
pub enum Line {
    Raw(Vec<u8>),
    Close,
}

impl Rogue {
    pub fn has(&self, m: Misbehaviour) -> bool {
        self.0.contains(&m)
    }

    /// Whether the request `method` ends the process now (`die-on-refetch`,
    /// `die-on-ping`); `seen` counts the requests so far by method.
    pub fn dies_on(&self, method: &str, seen: &mut std::collections::HashMap<String, u32>) -> bool {
        let n = seen.entry(method.to_owned()).or_insert(0);
        *n += 1;
        let list = method.ends_with("/list") && method != "roots/list";
        (self.has(Misbehaviour::DieOnRefetch) && list && *n > 1)
            || (self.has(Misbehaviour::DieOnPing)
                && (method == "ping" || (method == "server/discover" && *n > 1)))
    }

    /// Whether the answer to the request `method` is followed by a change of
    /// the tool list (`change-after-first-list`); call after [`dies_on`](Self::dies_on)
    /// counted it.
    pub fn changes_after(
        &self,
        method: &str,
        seen: &std::collections::HashMap<String, u32>,
    ) -> bool {
        self.has(Misbehaviour::ChangeAfterFirstList)
            && method == "tools/list"
            && seen.get(method) == Some(&1)
    }

    /// Whether `notifications/cancelled` is acted on.
    pub fn honours_cancel(&self) -> bool {
        !self.has(Misbehaviour::IgnoreCancel)
    }

    /// The raw lines that go out before a `tools/call` is answered over stdio.
    pub fn before_answer(&self, raw: &mpsc::UnboundedSender<Line>) {
        if self.has(Misbehaviour::GarbageLines) {
            let _ = raw.send(Line::Raw(b"this is not JSON-RPC {{{".to_vec()));
            let _ = raw.send(Line::Raw(br#"{"jsonrpc":"2.0"}"#.to_vec()));
        }
        if self.has(Misbehaviour::BadUtf8) {
            let _ = raw.send(Line::Raw(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\"}".to_vec(),
            ));
        }
        if self.has(Misbehaviour::HugeLine) {
            let mut line = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"".to_vec();
            line.resize(HUGE_LINE_BYTES, b'x');
            let _ = raw.send(Line::Raw(line));
        }
    }

    /// `progress-flood`: the notifications, if the call has a token (both
    /// transports: called by the `tools/call` handler).
    pub fn flood_progress(&self, params: &Map<String, Value>, out: &mpsc::UnboundedSender<Value>) {
        if !self.has(Misbehaviour::ProgressFlood) {
            return;
        }
        let Some(token) = params.get("_meta").and_then(|m| m.get("progressToken")) else {
            return;
        };
        let padding = "p".repeat(PROGRESS_FLOOD_PADDING);
        for n in 1..=PROGRESS_FLOOD {
            let params = json!({"progressToken": token, "progress": n,
                "total": PROGRESS_FLOOD, "message": padding});
            if out
                .send(notification("notifications/progress", params))
                .is_err()
            {
                return;
            }
        }
    }

    /// The answer to a `tools/call`, as this upstream sends it.
    pub fn answers(&self, response: Value) -> Vec<Value> {
        if !self.has(Misbehaviour::WrongIds) {
            return vec![response];
        }
        let mut wrong = response.clone();
        wrong["id"] = json!("not-a-request-of-yours");
        vec![wrong, response.clone(), response]
    }

    /// `stderr-flood`: writes the lines on a thread of its own.
    pub fn flood_stderr(&self) {
        if !self.has(Misbehaviour::StderrFlood) {
            return;
        }
        std::thread::spawn(|| {
            let mut err = std::io::stderr().lock();
            for n in 0..STDERR_FLOOD_LINES {
                let line: &[u8] = if n % 10 == 0 {
                    b"flood \xff\xfe not utf-8\n"
                } else {
                    b"flood: a chatty upstream logs this line\n"
                };
                if err.write_all(line).is_err() {
                    return;
                }
            }
        });
    }
}
