//! One script, evaluated: parsed in the Starlark dialect Bazel uses (no
//! `while`, no `load`, nothing but `def` and assignments at the top level),
//! `main()` (or `main(inputs)`) called, its value returned as JSON. The
//! built-ins `call(name, arguments = {})` and `search(query, limit = 5)` are
//! answered by a [`Host`]; `print(...)` writes the log.
//!
//! Invariants: evaluation steps, the Starlark heap, calls, the log and the
//! result are each bounded by a named limit ([`Limits`], `limits.rs`), and
//! going past one ends the script with a [`Failure`] naming it; a call refused
//! by the host fails the script with the host's words; a tool's error result
//! is a value the script reads, not a failure (the host decides which is
//! which).
//!
//! Not here: the wall clock and the process limits (a script runs in a worker
//! process the gateway ends at its timeout: a single Starlark operation such
//! as `"x" * 2**30` allocates before any check can see it, which only a
//! process boundary contains), what a call does (the gateway's call chain).

use serde_json::Value;
use starlark::any::ProvidesStaticType;
use starlark::environment::{Globals, GlobalsBuilder, LibraryExtension, Module};
use starlark::eval::Evaluator;
use starlark::syntax::{AstModule, Dialect};
use starlark::values::Value as Sv;
use starlark::{starlark_module, PrintHandler};
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use manifold_code::{
    Failure, Finished, Limits, Stop, MAX_CALL_DEPTH, MAX_LOG_BYTES, MAX_VALUE_DEPTH,
};

/// What answers a script's calls out.
pub trait Host {
    /// Calls tool `name` with `arguments`: the tool's result (an error result
    /// among them), or why the call was refused (which fails the script).
    fn call(&mut self, name: &str, arguments: Value) -> Result<Value, String>;
    /// The definitions `search_tools` would give for `query`, best first.
    fn search(&mut self, query: &str, limit: u64) -> Result<Value, String>;
}

/// The script's file name in messages.
const FILE: &str = "script.star";

/// How long past its timeout the engine stops itself (the gateway ends the
/// worker at the timeout; this is the engine's own backstop).
const SELF_STOP_GRACE: Duration = Duration::from_millis(500);

/// What the built-ins share during one run.
#[derive(ProvidesStaticType)]
struct Run {
    host: RefCell<Box<dyn Host>>,
    max_calls: u32,
    calls: Cell<u32>,
    last: RefCell<Option<String>>,
    log: RefCell<Vec<String>>,
    log_bytes: Cell<usize>,
    /// A limit a built-in saw passed: (name, value).
    limit: RefCell<Option<(&'static str, u64)>>,
}

/// A built-in's refusal, in its own words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

fn refused(message: String) -> starlark::Error {
    starlark::Error::new_native(Refused(message))
}

macro_rules! refused_fmt {
    ($($t:tt)*) => { refused(format!($($t)*)) };
}

impl PrintHandler for Run {
    fn println(&self, text: &str) -> starlark::Result<()> {
        let total = self.log_bytes.get() + text.len() + 1;
        if total > MAX_LOG_BYTES {
            *self.limit.borrow_mut() = Some(("max_log_bytes", MAX_LOG_BYTES as u64));
            return Err(refused_fmt!(
                "print wrote more than {MAX_LOG_BYTES} bytes in all (max_log_bytes)"
            ));
        }
        self.log_bytes.set(total);
        self.log.borrow_mut().push(text.to_string());
        Ok(())
    }
}

fn run_of<'a>(eval: &'a Evaluator) -> starlark::Result<&'a Run> {
    eval.extra
        .and_then(|e| e.downcast_ref::<Run>())
        .ok_or_else(|| refused_fmt!("internal: the run's context is missing"))
}

/// A Starlark value as JSON, no deeper than [`MAX_VALUE_DEPTH`].
fn to_json(v: Sv, what: &str) -> starlark::Result<Value> {
    let json = v
        .to_json_value()
        .map_err(|e| refused_fmt!("{what} is not JSON: {e}"))?;
    if depth(&json) > MAX_VALUE_DEPTH {
        return Err(refused(format!(
            "{what} nests deeper than {MAX_VALUE_DEPTH} levels"
        )));
    }
    Ok(json)
}

/// How deeply `v` nests (iteratively: a deep value must not take the stack).
fn depth(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    deepest
}

#[starlark_module]
fn builtins(builder: &mut GlobalsBuilder) {
    /// Calls a tool: `call("github__create_issue", {"title": "…"})`. Returns
    /// its result as a dict (`content`, `structuredContent`, `isError`).
    fn call<'v>(
        #[starlark(require = pos)] name: &str,
        arguments: Option<Sv<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Sv<'v>> {
        let run = run_of(eval)?;
        *run.last.borrow_mut() = Some(format!("call({})", Value::from(name)));
        if run.calls.get() >= run.max_calls {
            *run.limit.borrow_mut() = Some(("max_calls", u64::from(run.max_calls)));
            return Err(refused(format!(
                "call({}) would be tool call {} of at most {} (max_calls)",
                Value::from(name),
                run.calls.get() + 1,
                run.max_calls
            )));
        }
        let arguments = match arguments {
            Some(a) if !a.is_none() => to_json(a, "call's arguments")?,
            _ => Value::Object(Default::default()),
        };
        if !arguments.is_object() {
            return Err(refused(
                "call's arguments must be a dict of the tool's arguments by name".to_string(),
            ));
        }
        run.calls.set(run.calls.get() + 1);
        let result = run
            .host
            .borrow_mut()
            .call(name, arguments)
            .map_err(refused)?;
        Ok(eval.heap().alloc(result))
    }

    /// Finds tools for a task: `search("open a pull request", limit = 3)`.
    /// Returns their definitions (`name`, `description`, `inputSchema`, …),
    /// best first.
    fn search<'v>(
        #[starlark(require = pos)] query: &str,
        #[starlark(default = 5)] limit: i32,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Sv<'v>> {
        let run = run_of(eval)?;
        *run.last.borrow_mut() = Some(format!("search({})", Value::from(query)));
        if limit < 1 {
            return Err(refused("search's limit must be at least 1".to_string()));
        }
        let found = run
            .host
            .borrow_mut()
            .search(query, limit as u64)
            .map_err(refused)?;
        Ok(eval.heap().alloc(found))
    }
}

/// Whether `main` takes its inputs (`def main(inputs)`) or nothing.
fn main_takes_inputs(script: &str) -> bool {
    script
        .split("def main(")
        .nth(1)
        .is_some_and(|rest| !rest.trim_start().starts_with(')'))
}

/// The script's globals: Starlark's own, `print`, `json`, `map`, `filter`,
/// and the built-ins. Built once per worker, before its script arrives (a
/// spare worker waits with them ready).
pub fn globals() -> Globals {
    GlobalsBuilder::extended_by(&[
        LibraryExtension::Print,
        LibraryExtension::Json,
        LibraryExtension::Map,
        LibraryExtension::Filter,
    ])
    .with(builtins)
    .build()
}

/// Runs `script` with `inputs` under `limits` and `globals`, its calls out
/// answered by `host`.
pub fn run(
    globals: &Globals,
    script: &str,
    inputs: Option<Value>,
    limits: &Limits,
    host: Box<dyn Host>,
) -> Result<Finished, Box<Failure>> {
    let dialect = Dialect {
        enable_load: false,
        ..Dialect::Standard
    };
    let ast = AstModule::parse(FILE, script.to_string(), &dialect)
        .map_err(|e| Box::new(failure(&e, Stop::Syntax)))?;
    let run = Run {
        host: RefCell::new(host),
        max_calls: limits.max_calls,
        calls: Cell::new(0),
        last: RefCell::new(None),
        log: RefCell::new(Vec::new()),
        log_bytes: Cell::new(0),
        limit: RefCell::new(None),
    };
    let deadline = Instant::now() + Duration::from_millis(limits.timeout_ms) + SELF_STOP_GRACE;
    let takes_inputs = main_takes_inputs(script);
    let mut steps = 0u64;
    let result: Result<Value, Box<Failure>> = Module::with_temp_heap(|module| {
        let mut eval = Evaluator::new(&module);
        eval.extra = Some(&run);
        eval.set_print_handler(&run);
        let setup = eval
            .set_max_callstack_size(MAX_CALL_DEPTH)
            .and_then(|()| eval.set_max_tick_count(limits.max_steps.max(1)))
            .and_then(|()| eval.set_max_heap_size(limits.max_memory.max(1) as usize));
        if let Err(e) = setup {
            return Err(Box::new(internal(&e.to_string())));
        }
        eval.set_check_cancelled(Box::new(move || Instant::now() > deadline));
        let evaluated = eval.eval_module(ast, globals).and_then(|_| {
            let main = module.get("main").ok_or_else(|| {
                refused_fmt!(
                    "the script defines no `main`: write `def main():` (or `def main(inputs):`) and return the result"
                )
            })?;
            let args: Vec<Sv> = match takes_inputs {
                true => vec![module
                    .heap()
                    .alloc(inputs.unwrap_or(Value::Object(Default::default())))],
                false => Vec::new(),
            };
            eval.eval_function(main, &args, &[])
        });
        steps = eval.get_total_tick_count();
        let value = match evaluated {
            Ok(v) => v,
            Err(e) => {
                let limit = run.limit.borrow_mut().take();
                let late = Instant::now() > deadline;
                return Err(Box::new(classify(&e, limit, limits, steps, late)));
            }
        };
        let json = to_json(value, "main's return value").map_err(|e| {
            let mut f = internal(&e.to_string());
            f.stop = Stop::Runtime;
            Box::new(f)
        })?;
        Ok(json)
    });
    let calls = run.calls.get();
    let last = run.last.borrow().clone();
    let log = run.log.into_inner();
    match result {
        Ok(value) => {
            let size = serde_json::to_vec(&value).map_or(usize::MAX, |b| b.len());
            if size > limits.max_result_bytes {
                let mut f = Failure::limit(
                    "max_result_bytes",
                    limits.max_result_bytes as u64,
                    format!(
                        "main returned {size} bytes of JSON, more than max_result_bytes ({}); return only what the task needs",
                        limits.max_result_bytes
                    ),
                );
                f.calls = calls;
                f.last = last;
                f.log = log;
                f.steps = steps;
                return Err(Box::new(f));
            }
            Ok(Finished {
                value,
                calls,
                log,
                steps,
            })
        }
        Err(mut f) => {
            f.calls = calls;
            f.last = last;
            f.log = log;
            f.steps = steps;
            Err(f)
        }
    }
}

fn internal(message: &str) -> Failure {
    Failure {
        stop: Stop::Runtime,
        message: message.to_string(),
        line: None,
        column: None,
        limit: None,
        value: None,
        last: None,
        calls: 0,
        log: Vec::new(),
        steps: 0,
    }
}

/// A Starlark error as a [`Failure`] of kind `stop`, with its place.
fn failure(e: &starlark::Error, stop: Stop) -> Failure {
    let span = e.span().cloned().or_else(|| {
        e.call_stack()
            .frames
            .iter()
            .rev()
            .find_map(|f| f.location.clone())
    });
    let place = span.map(|s| s.resolve().span.begin);
    let mut f = internal(&e.without_diagnostic().to_string());
    f.stop = stop;
    f.line = place.as_ref().map(|p| p.line as u32 + 1);
    f.column = place.as_ref().map(|p| p.column as u32 + 1);
    f
}

/// Which limit, if any, ended an evaluation that failed with `e`.
fn classify(
    e: &starlark::Error,
    seen: Option<(&'static str, u64)>,
    limits: &Limits,
    steps: u64,
    late: bool,
) -> Failure {
    let mut f = failure(e, Stop::Runtime);
    let text = f.message.clone();
    let named = seen.or_else(|| {
        if late || text.contains("Evaluation cancelled") {
            Some(("timeout", limits.timeout_ms))
        } else if text.contains("ticks has been exceeded") || steps >= limits.max_steps {
            Some(("max_steps", limits.max_steps))
        } else if text.contains("Heap memory limit") {
            Some(("max_memory", limits.max_memory))
        } else if text.contains("call stack overflow") {
            Some(("max_call_depth", MAX_CALL_DEPTH as u64))
        } else {
            None
        }
    });
    if let Some((name, value)) = named {
        f.stop = Stop::Limit;
        f.message = match name {
            "timeout" => format!("it ran past its timeout of {value} ms"),
            "max_steps" => format!(
                "it took more than max_steps ({value}) evaluation steps; loop over less, or do the work in fewer calls"
            ),
            "max_memory" => format!("its heap grew past max_memory ({value} bytes)"),
            "max_call_depth" => format!(
                "its functions nested deeper than {value} calls (recursion is not supported)"
            ),
            _ => text,
        };
        f.limit = Some(name.to_string());
        f.value = Some(value);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A host that answers `echo` with its arguments and refuses the rest.
    struct Echo;
    impl Host for Echo {
        fn call(&mut self, name: &str, arguments: Value) -> Result<Value, String> {
            match name {
                "echo" => Ok(json!({"content": [], "structuredContent": arguments})),
                "broken" => {
                    Ok(json!({"content": [{"type": "text", "text": "no"}], "isError": true}))
                }
                other => Err(format!("unknown tool {other}")),
            }
        }
        fn search(&mut self, query: &str, limit: u64) -> Result<Value, String> {
            Ok(json!([{"name": "echo", "description": query, "limit": limit}]))
        }
    }

    fn go(script: &str) -> Result<Finished, Box<Failure>> {
        run(
            &globals(),
            script,
            Some(json!({"n": 3})),
            &Limits::default(),
            Box::new(Echo),
        )
    }

    fn small(script: &str, limits: Limits) -> Result<Finished, Box<Failure>> {
        run(&globals(), script, None, &limits, Box::new(Echo))
    }

    #[test]
    fn a_script_composes_calls_and_returns_json() {
        let f = go("def main(inputs):\n  out = []\n  for i in range(inputs['n']):\n    r = call('echo', {'i': i})\n    out.append(r['structuredContent']['i'])\n  print('done', len(out))\n  return {'got': out}\n")
            .unwrap();
        assert_eq!(f.value, json!({"got": [0, 1, 2]}));
        assert_eq!(f.calls, 3);
        assert_eq!(f.log, vec!["done 3".to_string()]);
        assert!(f.steps > 0);
    }

    #[test]
    fn a_tool_error_is_a_value_and_a_refused_call_fails_with_its_words() {
        let f = go("def main():\n  return call('broken')['isError']\n").unwrap();
        assert_eq!(f.value, json!(true));
        let e = go("def main():\n  x = 1\n  return call('nope')\n").unwrap_err();
        assert_eq!(e.stop, Stop::Runtime);
        assert!(e.message.contains("unknown tool nope"), "{e:?}");
        assert_eq!(e.line, Some(3));
        assert_eq!(e.last.as_deref(), Some("call(\"nope\")"));
        assert!(e.describe().contains("line 3"), "{}", e.describe());
    }

    #[test]
    fn the_dialect_refuses_while_load_and_top_level_statements() {
        for script in [
            "def main():\n  while True:\n    pass\n",
            "load('x.star', 'y')\ndef main():\n  return 1\n",
            "for i in range(3):\n  pass\ndef main():\n  return 1\n",
        ] {
            let e = go(script).unwrap_err();
            assert_eq!(e.stop, Stop::Syntax, "{script}: {e:?}");
            assert!(e.line.is_some(), "{script}: {e:?}");
        }
    }

    #[test]
    fn each_limit_ends_the_script_naming_it() {
        let cases: [(&str, Limits, &str); 5] = [
            (
                "def main():\n  n = 0\n  for i in range(100000000):\n    n += i\n  return n\n",
                Limits { max_steps: 10_000, ..Limits::default() },
                "max_steps",
            ),
            (
                "def main():\n  x = []\n  for i in range(1000000):\n    x.append('abcdefgh' + str(i))\n  return len(x)\n",
                Limits { max_memory: 1 << 20, ..Limits::default() },
                "max_memory",
            ),
            (
                "def main():\n  for i in range(10):\n    call('echo')\n",
                Limits { max_calls: 3, ..Limits::default() },
                "max_calls",
            ),
            (
                "def main():\n  return 'x' * 5000\n",
                Limits { max_result_bytes: 1000, ..Limits::default() },
                "max_result_bytes",
            ),
            ("def f(n):\n  return f(n + 1)\ndef main():\n  return f(0)\n", Limits::default(), "max_call_depth"),
        ];
        for (script, limits, name) in cases {
            let e = small(script, limits).unwrap_err();
            assert_eq!(e.stop, Stop::Limit, "{name}: {e:?}");
            assert_eq!(e.limit.as_deref(), Some(name), "{e:?}");
            assert!(e.value.is_some());
        }
    }

    #[test]
    fn printing_megabytes_stops_at_the_log_limit() {
        let e = go("def main():\n  for i in range(100000):\n    print('x' * 100)\n").unwrap_err();
        assert_eq!(e.limit.as_deref(), Some("max_log_bytes"), "{e:?}");
        let logged: usize = e.log.iter().map(|l| l.len() + 1).sum();
        assert!(logged <= MAX_LOG_BYTES);
    }

    #[test]
    fn main_is_required_and_its_value_must_be_json() {
        let e = go("x = 1\n").unwrap_err();
        assert!(e.message.contains("main"), "{e:?}");
        let e = go("def main():\n  return main\n").unwrap_err();
        assert!(e.message.contains("not JSON"), "{e:?}");
    }
}
