//! [`Call`]: the per-call context — one forwarded request (`tools/call`,
//! `prompts/get`, `resources/read`, `completion/complete`) as the chain's
//! steps see it: what the client named, where it goes, the request rewritten
//! for that upstream, and what the steps decided on the way (the arguments
//! the client sent, the output check, the rate-limit places, whether a human
//! confirmed it).
//!
//! Invariants: built only by `resolve`, which found the target in the
//! caller's view; every later step reads and adds, none looks the target up
//! again; moved into the relay whole.
//!
//! Not here: the request's own facts (era, caller, principal, id, the
//! observation: [`Request`](crate::request::Request)).

use manifold_catalog::Catalog;
use manifold_protocol::RequestId;
use manifold_upstream::{ExtraHeaders, Upstream};
use serde_json::{Map, Value};
use std::sync::Arc;

use crate::era::Era;
use crate::observe::{Facts, Observed};
use crate::refusal::Refusal;
use crate::request::{Caller, Request};
use crate::state::Gateway;

/// Which forwarded request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    Tool,
    Prompt,
    Resource,
    Completion,
    /// `tasks/get`, `tasks/update`, `tasks/cancel`: to the upstream that owns
    /// the task.
    Task,
    /// `skills/get` (SEP-2640): to the upstream that serves the skill.
    Skill,
    /// `resources/directory/read` (SEP-2640): to the upstream that serves
    /// the directory and declared `directoryRead`.
    Directory,
}

/// A skill file's read: what its bytes must be (the announcing skill's
/// digest and size), checked on the answer (`check_output::skill_file`).
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    /// The URI as the client asked for it (exposed).
    pub uri: String,
    /// The URI as the upstream names it (a content's `uri` in its answer).
    pub original: String,
    pub file: manifold_catalog::SkillFile,
}

/// What the answer does with a task (the Tasks extension).
#[derive(Debug, Clone)]
pub(crate) enum TaskHook {
    /// Neither a `tools/call` nor a `tasks/*` request.
    None,
    /// A 2026-07-28 `tools/call`: a task answer gets a sealed id of this
    /// caller's (or, when the request did not declare the extension, is
    /// refused and cancelled upstream).
    Create {
        /// The caller's audit name (the owner).
        owner: String,
        declared: bool,
        /// The upstream's endpoint digest (`state::tasks::endpoint_digest`).
        endpoint: String,
        /// The exposed tool name and the upstream's own.
        tool: String,
        original: String,
        /// The Manifold endpoint the call came through.
        path: String,
    },
    /// A session-era client's (or `manifold call`'s) `tools/call`: the caller
    /// can hold no task, so a task answer (a broken 2026-07-28 upstream's) is
    /// refused and cancelled upstream.
    Unwanted,
    /// A `tasks/*` request: the answer gets the client's id back, and its
    /// status may be the task's end.
    Relay {
        client_id: String,
        facts: Box<crate::state::tasks::TaskFacts>,
        /// `tasks/get`, `tasks/update` or `tasks/cancel`.
        method: String,
    },
}

/// How an upstream's failure to answer reaches the client, and how a result is
/// decorated for a 2026-07-28 client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultShape {
    /// `tools/call`: failures are tool results with `isError: true`, which a model
    /// reads.
    Tool,
    /// Failures are JSON-RPC errors.
    Rpc,
    /// `resources/read`: failures are JSON-RPC errors; 2026-07-28 results carry
    /// cache hints.
    Read,
}

/// One forwarded request on its way through the chain.
pub(crate) struct Call {
    pub what: What,
    /// The exposed tool or prompt name the client asked for (empty for a
    /// resource or a completion).
    pub exposed: String,
    /// The caller's catalogue view that resolved a tool or prompt.
    pub view: Option<Arc<Catalog>>,
    /// The validators of the generation that view is of: the schemas the
    /// arguments and the result are checked against are the ones the caller
    /// was shown.
    pub validators: Option<Arc<manifold_policy::ArgumentValidators>>,
    /// The params, rewritten for the upstream: its own name, an override's
    /// pins and hidden arguments, the canonical URI.
    pub params: Map<String, Value>,
    /// The arguments as the client sent them, when an override rewrote them
    /// and they are validated (`None`: `params` holds them as sent).
    pub sent_arguments: Option<Value>,
    pub upstream: Upstream,
    /// SEP-2243 headers for HTTP upstreams (`Mcp-Method`, `Mcp-Name`,
    /// `Mcp-Param-*`), and an `Authorization` for a caller's exchanged token.
    pub headers: ExtraHeaders,
    pub shape: ResultShape,
    /// `[validation] output`: the exposed tool whose `outputSchema` the result
    /// is checked against, with its generation's validators.
    pub output_check: Option<OutputCheck>,
    /// The rate-limit places the call holds until it ends.
    pub permit: Option<manifold_policy::Permit>,
    /// `[confirm]` covers the call: a human was asked and accepted, or it was
    /// let through unasked (`without_elicitation = "allow"`).
    pub confirmed: bool,
    /// What the answer does with a task.
    pub task: TaskHook,
    /// A skill file's read: the digest its bytes are checked against.
    pub expected: Option<Expected>,
    /// What the steps decided that the audit record holds: handed to the
    /// observation once, by step finish (or, past dispatch, by the call's
    /// [`Answering`]).
    pub facts: Facts,
}

impl Call {
    /// The call is refused before dispatch: what the steps decided goes on
    /// the request's record (which the pipeline, or step finish for a call
    /// confirmed on its stream, finishes with `r`'s outcome).
    pub(crate) fn refused(self, x: &mut Request, r: Refusal) -> Refusal {
        if let Some(o) = x.observation() {
            o.note(self.facts);
        }
        r
    }
}

/// A result to check against its tool's `outputSchema` (`[validation] output`).
#[derive(Clone)]
pub(crate) struct OutputCheck {
    /// The exposed tool name.
    pub tool: String,
    /// The validators of the generation whose view resolved the tool.
    pub validators: Arc<manifold_policy::ArgumentValidators>,
}

/// Who gets a call's answer and how it is recorded: what the relay, a pump
/// and the input bridge share. Holds the request's observation until it is
/// finished.
pub(crate) struct Answering {
    /// `upstream.call`: closes when the answer is recorded (this drops).
    pub span: tracing::Span,
    pub gw: Arc<Gateway>,
    pub caller: Caller,
    pub upstream: Arc<str>,
    pub id: RequestId,
    pub shape: ResultShape,
    pub era: Era,
    pub obs: Option<Observed>,
    /// The exposed tool whose `outputSchema` the result is checked against.
    pub output_check: Option<OutputCheck>,
    /// Rate-limit places held until the answer (dropped with this).
    pub permit: Option<manifold_policy::Permit>,
    /// What the answer does with a task (the Tasks extension).
    pub task: TaskHook,
    /// A skill file's read: the digest its bytes are checked against.
    pub expected: Option<Expected>,
    /// The pool member that answers, when the upstream is a pool (a task
    /// made there lives there).
    pub member: Option<usize>,
    /// The call's decisions (from its [`Call`]) and the relay's (attempts,
    /// coalescing, a task made): noted on `obs` once, when it is finished —
    /// or dropped unfinished ([`Drop`]).
    pub facts: Facts,
}

impl Drop for Answering {
    fn drop(&mut self) {
        // An observation dropped unfinished is recorded as cancelled: with
        // what the call decided.
        if let Some(o) = self.obs.as_mut() {
            o.note(std::mem::take(&mut self.facts));
        }
    }
}

impl Answering {
    /// A copy that takes over the observation (which is finished once).
    pub(crate) fn hand_over(&mut self) -> Answering {
        Answering {
            span: self.span.clone(),
            gw: self.gw.clone(),
            caller: self.caller.clone(),
            upstream: self.upstream.clone(),
            id: self.id.clone(),
            shape: self.shape,
            era: self.era,
            obs: self.obs.take(),
            output_check: self.output_check.clone(),
            permit: self.permit.take(),
            task: std::mem::replace(&mut self.task, TaskHook::None),
            expected: self.expected.take(),
            member: self.member,
            facts: std::mem::take(&mut self.facts),
        }
    }
}
