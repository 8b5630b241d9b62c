//! `manifold-demo-upstream`: the demo upstream MCP server as a binary of its own,
//! for tests. The shipped `gateway.toml` runs the same code as
//! `manifold demo-upstream`. See `manifold_demo` for the protocol and `cli` for flags.

fn main() -> std::process::ExitCode {
    manifold_demo::cli::main()
}
