//! The command lists of the docs against `manifold --help`: README.md's table
//! under `## Commands` and the list under docs/architecture.md's "The binary,
//! `manifold`" name every command `--help` shows (a command with subcommands by
//! each of them: `audit verify`), and no command that does not exist. A hidden
//! command (`demo-upstream`) may be named when the binary accepts it.

use std::collections::BTreeSet;
use std::process::Command;

use super::{bin, repo_file};

/// Where a document keeps its command list: the section under `heading` (up
/// to the next heading), and in it each line that starts with `item` names one
/// command in its first code span.
struct List {
    file: &'static str,
    heading: &'static str,
    item: &'static str,
}

const LISTS: [List; 2] = [
    List {
        file: "README.md",
        heading: "## Commands",
        item: "| `manifold ",
    },
    List {
        file: "docs/architecture.md",
        heading: "### The binary, `manifold`",
        item: "- `manifold ",
    },
];

/// `manifold ARGS --help`: its stdout, or why it failed.
fn help(args: &[&str]) -> Result<String, String> {
    let out = Command::new(bin())
        .args(args)
        .arg("--help")
        .env_remove("RUST_LOG")
        .output()
        .map_err(|e| format!("cannot run manifold: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`manifold {} --help` exited with {}: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ))
    }
}

/// The subcommands a clap help text lists under `Commands:`, without `help`.
/// An entry starts two spaces in; a description wrapped onto the next line is
/// indented further and skipped.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| line.trim_end() != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Every command `manifold --help` leads to, as typed after `manifold`: a
/// top-level command, or for one with subcommands each `parent child`.
fn commands_of_help() -> (Vec<String>, BTreeSet<String>) {
    let top = subcommands(&help(&[]).expect("manifold --help"));
    assert!(
        top.len() > 3,
        "cannot read the commands of `manifold --help`: {top:?}"
    );
    let mut all = BTreeSet::new();
    for command in &top {
        let nested = subcommands(&help(&[command]).expect("a command's --help"));
        if nested.is_empty() {
            all.insert(command.clone());
        }
        all.extend(nested.into_iter().map(|child| format!("{command} {child}")));
    }
    (top, all)
}

/// A command's name as the docs write it: lower case, digits and `-`; the
/// words after it in the code span are its arguments (`NAME`, `[--json]`).
fn is_command_word(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_lowercase())
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The commands a document's list names, in its order; `Err` when the
/// section or its list is not found.
fn documented(list: &List) -> Result<Vec<String>, String> {
    let path = repo_file(list.file);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: cannot be read: {e}", list.file))?;
    let mut lines = text
        .lines()
        .skip_while(|line| line.trim_end() != list.heading);
    if lines.next().is_none() {
        return Err(format!(
            "{}: no heading \"{}\" (the command list's section)",
            list.file, list.heading
        ));
    }
    let mut in_fence = false;
    let mut named = Vec::new();
    for line in lines {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence && line.starts_with('#') {
            break;
        }
        if in_fence || !line.starts_with(list.item) {
            continue;
        }
        let span = line[list.item.len()..].split('`').next().unwrap_or("");
        let words: Vec<&str> = span
            .split_whitespace()
            .take_while(|word| is_command_word(word))
            .collect();
        if words.is_empty() {
            return Err(format!(
                "{}: a command list line names no command: {line}",
                list.file
            ));
        }
        named.push(words.join(" "));
    }
    if named.is_empty() {
        return Err(format!(
            "{}: no command list under \"{}\" (lines starting with \"{}\")",
            list.file, list.heading, list.item
        ));
    }
    Ok(named)
}

#[test]
fn readme_and_architecture_list_every_command_of_help_and_no_other() {
    let (top, commands) = commands_of_help();
    let mut problems = Vec::new();
    for list in &LISTS {
        let named = match documented(list) {
            Ok(named) => named,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
        for command in &commands {
            if !named.contains(command) {
                problems.push(format!(
                    "`manifold {command}` (in `manifold --help`) is missing from {}'s command \
                     list (under \"{}\", a line starting with \"{}\")",
                    list.file, list.heading, list.item
                ));
            }
        }
        for command in named.iter().filter(|c| !commands.contains(*c)) {
            // A hidden command is not in `--help`; the binary must still take it.
            let words: Vec<&str> = command.split(' ').collect();
            let hidden = words.len() == 1 && !top.iter().any(|t| t == words[0]);
            match help(&words) {
                Ok(_) if hidden => {}
                Ok(_) => problems.push(format!(
                    "{} names `manifold {command}`, which `manifold --help` does not list \
                     (a command with subcommands is named by each of them)",
                    list.file
                )),
                Err(why) => problems.push(format!(
                    "{} names `manifold {command}`, which is not a command: {why}",
                    list.file
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
