//! `completion/complete`: a `ref/prompt` goes to the prompt's upstream with its
//! original name; a `ref/resource` to the owner of the URI or template.
//!
//! Not here: resolving the reference (`relay::resolve`).

use serde_json::{Map, Value};

use crate::exchange::Exchange;
use crate::refusal::Refusal;
use crate::relay::{self, resolve};
use crate::reply::Reply;

pub(crate) async fn complete(
    x: &mut Exchange,
    mut params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let target = resolve::completion(&x.gw, &x.access(), &mut params)?;
    relay::forward(x, params, target).await
}
