//! `manifold-demo-upstream`: the demo/mock upstream MCP server.
//! See `manifold_testkit::demo` for the protocol and `demo::cli` for flags.

fn main() -> std::process::ExitCode {
    manifold_testkit::demo::cli::main()
}
