//! `manifold tools`: the exposed tool names, one per line, sorted (the catalog's
//! own order, which is by exposed name), for scripts and shell completion.
//!
//! Exit codes: 0 every upstream is ready, 1 some are not (the names of the ready
//! ones are still printed, the others named on stderr), 2 configuration error.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::inproc::InProcess;
use super::{load_config, one_line, FAILED};

pub fn run(rt: &tokio::runtime::Runtime, config: &Path) -> ExitCode {
    let cfg = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (names, not_ready) = rt.block_on(async {
        let core = InProcess::start(cfg).await;
        let names: Vec<String> = core
            .gw
            .catalog()
            .tools
            .entries()
            .iter()
            .map(|e| e.exposed.clone())
            .collect();
        let not_ready: Vec<String> = core
            .not_ready()
            .iter()
            .map(|u| {
                let st = u.status();
                let why = st.last_error.unwrap_or_default();
                one_line(&format!("{} ({}) {why}", u.name(), st.state.as_str()))
            })
            .collect();
        core.stop().await;
        (names, not_ready)
    });
    let mut out = String::with_capacity(names.iter().map(|n| n.len() + 1).sum());
    for n in &names {
        out.push_str(n);
        out.push('\n');
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if not_ready.is_empty() {
        return ExitCode::SUCCESS;
    }
    for u in &not_ready {
        eprintln!(
            "manifold: upstream not ready, its tools are missing: {}",
            u.trim_end()
        );
    }
    ExitCode::from(FAILED)
}
