//! `manifold`: the gateway binary. Thin: parses the command line, sets up logging
//! and the runtime, and hands over to the command modules in [`cli`].
//!
//! Exit codes, for every command: 0 success; 1 a runtime failure or a problem found
//! (the port is taken, an upstream is not ready, a tool reported an error, an audit
//! chain is broken); 2 bad configuration, command line or input.

mod cli;
mod telemetry;

use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use cli::ConfigArg;

/// Every forwarded call allocates many small buffers (JSON values, headers,
/// frames); glibc malloc spent about 10 % of the gateway's CPU at c=16 (see
/// docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `arena_eager_commit` option (`mi_option_arena_eager_commit` in
/// mimalloc v3's `mimalloc.h`).
const MI_OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// On an overcommitting OS (Linux) mimalloc commits its arenas eagerly and
/// never gives freed pages back: the startup peak (configuration, catalogue,
/// validators) stayed resident, about 10 MB of an idle gateway's 13 MB of
/// heap. Without it, freed pages are purged after `purge_delay` (10 ms).
/// Options are read on first use, and the first Rust allocation comes after
/// the `.init_array` constructors run, so this is set before any allocation.
extern "C" fn configure_allocator() {
    // SAFETY: mi_option_set only stores an option value; it is called once,
    // before main, from the process's only thread.
    unsafe { mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) }
}

#[used]
#[link_section = ".init_array"]
static CONFIGURE_ALLOCATOR: extern "C" fn() = configure_allocator;

#[derive(Parser)]
#[command(
    name = "manifold",
    version,
    about = "An MCP gateway: one endpoint in front of many MCP servers"
)]
struct Cli {
    /// Log format (default: text on a terminal, json otherwise). Filter with RUST_LOG
    /// (default `info` for `serve`, `warn` for the other commands).
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Json,
    Text,
}

#[derive(Subcommand)]
enum Command {
    /// Run the demo upstream MCP server (what the shipped gateway.toml fronts).
    /// All following arguments go to it; see `manifold demo-upstream --help`.
    #[command(hide = true, disable_help_flag = true)]
    DemoUpstream {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Run the gateway in the foreground until SIGINT or SIGTERM.
    ///
    /// Exit codes: 0 clean stop, 1 runtime failure (e.g. the port is taken),
    /// 2 configuration error.
    Serve {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Serve one MCP client on stdin/stdout (for desktop clients that launch
    /// servers as commands), through the same pipeline as `serve`. Logs go to
    /// stderr; when stdin closes, calls in flight finish, the audit log is
    /// flushed and every upstream is stopped.
    ///
    /// Exit codes: 0 after stdin closed, 1 runtime failure, 2 configuration error.
    Stdio {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Validate the configuration, connect every upstream (without listening) and
    /// print the merged catalog, what was left out and why, and each upstream's status.
    ///
    /// Exit codes: 0 every upstream is ready, 1 some are not, 2 configuration error.
    Check {
        #[command(flatten)]
        config: ConfigArg,
        /// Print the same facts as one JSON object.
        #[arg(long)]
        json: bool,
        /// Print the catalogue this caller would see under `[[policy]]`, and
        /// the rule that hides each other item: `group:ops`, `key:ci-bot`,
        /// `subject:corp:alice,group:ops` (`subject:alice` with one identity
        /// source), `cert:cn:alice`, `scope:mcp:tools` or `anonymous`.
        #[arg(long = "as", value_name = "WHO")]
        as_who: Option<String>,
        /// Print the catalogue of the endpoint served at PATH (`[server]
        /// path` or an `[[endpoint]]` path) instead of the default one's.
        #[arg(long = "endpoint", value_name = "PATH")]
        endpoint: Option<String>,
    },
    /// Rank tools for a query as `search_tools` does, with each ranking's
    /// score (lexical, semantic, fused): why a tool is or is not found.
    ///
    /// Exit codes: 0 printed, 1 an upstream not ready or the model could not
    /// load, 2 a bad query, `--as`, `--endpoint` or configuration error.
    Search {
        #[command(flatten)]
        config: ConfigArg,
        /// The task, in a user's words, e.g. "any chargebacks opened lately?".
        query: String,
        /// Rank on the endpoint served at PATH (`[server] path` or an
        /// `[[endpoint]]` path) instead of the default one.
        #[arg(long = "endpoint", value_name = "PATH")]
        endpoint: Option<String>,
        /// Rank within this caller's view under `[[policy]]` (as `check --as`).
        #[arg(long = "as", value_name = "WHO")]
        as_who: Option<String>,
        /// How many tools (default 8, at most 50, as `search_tools`).
        #[arg(long)]
        limit: Option<usize>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print the exposed tool names, one per line, sorted.
    ///
    /// Exit codes: 0 every upstream is ready, 1 some are not (the names of the ready
    /// ones are still printed), 2 configuration error.
    Tools {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Call one tool through the gateway's name table and print its result as JSON.
    ///
    /// Exit codes: 0 a result without `isError`, 1 `isError`, a JSON-RPC error or an
    /// upstream failure, 2 unknown tool, bad arguments or configuration error.
    Call {
        #[command(flatten)]
        config: ConfigArg,
        /// The exposed tool name, e.g. `demo__echo` (see `manifold tools`).
        name: String,
        /// The arguments, a JSON object, e.g. '{"text":"hi"}' (default `{}`).
        #[arg(value_name = "JSON-ARGS")]
        args: Option<String>,
    },
    /// Log in to an upstream with `auth.type = "oauth"`: prints (and opens)
    /// the authorization URL, receives the code on a loopback redirect, and
    /// keeps the tokens in `[credentials]` for `serve` to use and refresh.
    ///
    /// Exit codes: 0 logged in, 1 the flow failed, 2 configuration error or not
    /// an `oauth` upstream.
    Login {
        #[command(flatten)]
        config: ConfigArg,
        /// The upstream's name in the configuration.
        upstream: String,
        /// Only print the authorization URL; open it yourself in a browser on this
        /// host (the redirect comes back to a loopback address here).
        #[arg(long)]
        no_browser: bool,
    },
    /// Audit log tools.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Client authentication tools.
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
    /// The admin listener's local admin token (when `[admin]` names no
    /// credentials).
    Admin {
        #[command(subcommand)]
        command: cli::admin::AdminCommand,
    },
    /// Tool integrity: the approved tool, prompt and template definitions in
    /// `[integrity] store`, and the held ones waiting for approval.
    Pins {
        #[command(subcommand)]
        command: cli::pins::PinsCommand,
    },
    /// Read MCP client configurations (Claude Desktop, Claude Code, VS Code,
    /// Cursor, Windsurf) into a gateway.toml, secrets as ${VAR} references,
    /// then check it.
    ///
    /// Exit codes: 0 written (and every upstream ready, when checked), 1
    /// written but some upstream is not ready, 2 bad input (nothing written).
    Import {
        /// Client configuration files, e.g.
        /// ~/.config/Claude/claude_desktop_config.json, .vscode/mcp.json.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// The gateway configuration to write.
        #[arg(long, value_name = "FILE", default_value = cli::DEFAULT_CONFIG)]
        out: PathBuf,
        /// Add to an existing --out file (its comments kept).
        #[arg(long)]
        merge: bool,
        /// Read every PATH as this format instead of detecting it.
        #[arg(long, value_enum)]
        format: Option<cli::import::Format>,
        /// Replace upstreams of the same name already in --out.
        #[arg(long)]
        force: bool,
    },
    /// Print (or with --write, add to the client's own file) the entry that
    /// points an MCP client at this gateway.
    ///
    /// Exit codes: 0 printed or written, 1 the file could not be written, 2
    /// bad arguments or configuration.
    Connect {
        #[command(flatten)]
        config: ConfigArg,
        /// The client: claude (Claude Desktop), claude-code, vscode, cursor
        /// or windsurf.
        #[arg(value_enum)]
        client: cli::import::Format,
        /// The client launches `manifold stdio` (the default for Claude
        /// Desktop).
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// The client connects to the HTTP endpoint (the default for the
        /// others).
        #[arg(long)]
        http: bool,
        /// Add the entry to the client's file (a copy is kept as <file>.bak).
        #[arg(long)]
        write: bool,
        /// The client's file (default: where the client keeps it).
        #[arg(long, value_name = "PATH", requires = "write")]
        file: Option<PathBuf>,
        /// With --write: also remove the entries `manifold import` took from
        /// that file.
        #[arg(long, requires = "write")]
        replace: bool,
    },
    /// Callers' own accounts at `user_oauth` and `user_secret` upstreams, in
    /// `[credentials] store`: who is connected to what (never a secret), and
    /// revoking one.
    Credentials {
        #[command(subcommand)]
        command: cli::credentials::CredentialsCommand,
    },
}

#[derive(Subcommand)]
enum AuthCommand {
    /// Read an API key on stdin and print its `[[auth.api_keys]] hash` value
    /// (`sha256:…`). The key itself never goes in the configuration.
    ///
    /// Exit codes: 0 printed, 2 no usable key on stdin.
    HashKey,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check the hash chain of audit log files.
    ///
    /// One path: that log and its rotated siblings (`PATH.N` … `PATH.1`, `PATH`),
    /// oldest first. Several paths: those files, in the order given.
    ///
    /// Exit codes: 0 the chain is intact, 1 a problem was found (named as
    /// file:line), 2 a file cannot be read.
    Verify {
        /// Audit log files.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
}

fn init_logging(format: Option<LogFormat>, default_level: &'static str, now: bool) {
    let json = match format {
        Some(LogFormat::Json) => true,
        Some(LogFormat::Text) => false,
        None => !std::io::stderr().is_terminal(),
    };
    let setup = telemetry::LogSetup {
        json,
        default_level,
    };
    if now {
        telemetry::init_logging(setup, None);
    } else {
        telemetry::defer_logging(setup);
    }
}

/// Set to the running executable before the configuration is loaded, so
/// `command = "${MANIFOLD_SELF}"` works whatever the build profile or install path.
const SELF_VAR: &str = "MANIFOLD_SELF";

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::DemoUpstream { args } = cli.command {
        let argv = std::iter::once(std::ffi::OsString::from("manifold demo-upstream")).chain(args);
        return manifold_demo::cli::main_from(argv);
    }
    if let Ok(exe) = std::env::current_exe() {
        // Single-threaded here: no other thread reads the environment yet.
        std::env::set_var(SELF_VAR, exe);
    }
    // The one-shot commands keep stdout for their answer and stderr for what went
    // wrong. The catalog's warnings about left-out items are left to `check`, which
    // lists them on stdout; on every `call` they would only be noise.
    let default_level = match cli.command {
        Command::Serve { .. } | Command::Stdio { .. } => "info",
        Command::Check { .. }
        | Command::Tools { .. }
        | Command::Call { .. }
        | Command::Search { .. } => "warn,manifold_catalog=error",
        _ => "warn",
    };
    // `serve` and `stdio` set logging up once `[tracing]` is read, with its
    // OpenTelemetry layer (see `telemetry`).
    let deferred = matches!(cli.command, Command::Serve { .. } | Command::Stdio { .. });
    init_logging(cli.log_format, default_level, !deferred);
    if let Command::Audit {
        command: AuditCommand::Verify { paths },
    } = &cli.command
    {
        return cli::audit::verify(paths);
    }
    if let Command::Auth {
        command: AuthCommand::HashKey,
    } = &cli.command
    {
        return cli::auth::hash_key();
    }
    let cli = match cli.command {
        Command::Pins { command } => return cli::pins::run(command),
        Command::Credentials { command } => return cli::credentials::run(command),
        Command::Connect {
            config,
            client,
            stdio,
            http,
            write,
            file,
            replace,
        } => {
            return cli::connect::run(cli::connect::Connect {
                client,
                config: &config.config,
                http: if stdio {
                    Some(false)
                } else if http {
                    Some(true)
                } else {
                    None
                },
                write,
                file,
                replace,
            })
        }
        Command::Admin { command } => return cli::admin::run(command),
        command => Cli { command, ..cli },
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("manifold: cannot start the runtime: {e}");
            return ExitCode::from(cli::FAILED);
        }
    };
    let code = match cli.command {
        Command::DemoUpstream { .. }
        | Command::Audit { .. }
        | Command::Auth { .. }
        | Command::Admin { .. }
        | Command::Credentials { .. }
        | Command::Connect { .. }
        | Command::Pins { .. } => ExitCode::SUCCESS,
        Command::Import {
            paths,
            out,
            merge,
            format,
            force,
        } => cli::import::run(
            &rt,
            cli::import::Import {
                paths: &paths,
                out: &out,
                merge,
                format,
                force,
            },
        ),
        Command::Serve { config } => cli::serve::run(&rt, &config.config),
        Command::Stdio { config } => cli::stdio::run(&rt, &config.config),
        Command::Check {
            config,
            json,
            as_who,
            endpoint,
        } => cli::check::run(
            &rt,
            &config.config,
            json,
            as_who.as_deref(),
            endpoint.as_deref(),
        ),
        Command::Tools { config } => cli::tools::run(&rt, &config.config),
        Command::Search {
            config,
            query,
            endpoint,
            as_who,
            limit,
            json,
        } => cli::search::run(
            &rt,
            &config.config,
            cli::search::Options {
                query: &query,
                endpoint: endpoint.as_deref(),
                as_who: as_who.as_deref(),
                limit,
                json,
            },
        ),
        Command::Login {
            config,
            upstream,
            no_browser,
        } => cli::login::run(&rt, &config.config, &upstream, !no_browser),
        Command::Call { config, name, args } => {
            cli::call::run(&rt, &config.config, &name, args.as_deref())
        }
    };
    // Every shutdown wait is bounded already; a task stuck past them (a blocked
    // read, say) must not keep the process alive.
    rt.shutdown_timeout(RUNTIME_STOP);
    code
}

/// How long the runtime waits for tasks still running once a command is done.
const RUNTIME_STOP: std::time::Duration = std::time::Duration::from_secs(1);
