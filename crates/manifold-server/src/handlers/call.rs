//! `tools/call` and `prompts/get`: the exposed name resolves to its upstream and
//! that upstream's own name, and the request is forwarded.
//!
//! Invariants: an unknown name answers as unknown, whoever asks; the audit record
//! names what the client asked for even when it is refused.
//!
//! Not here: resolving (`relay::resolve`), forwarding (`relay`).

use manifold_catalog::Kind;
use manifold_protocol::methods as m;
use serde_json::{Map, Value};

use crate::exchange::Exchange;
use crate::refusal::Refusal;
use crate::relay::{self, resolve};
use crate::reply::Reply;

pub(crate) async fn call(
    x: &mut Exchange,
    mut params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let kind = match x.method.as_str() {
        m::TOOLS_CALL => Kind::Tools,
        _ => Kind::Prompts,
    };
    let name = resolve::required_str(&params, "name", &x.method)?;
    if let Some(o) = x.observation() {
        o.name = Some(name.clone());
    }
    let target = resolve::named(&x.gw, kind, &x.method, &name, &mut params)?;
    relay::forward(x, params, target).await
}
