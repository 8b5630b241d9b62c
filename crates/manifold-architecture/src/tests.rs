//! The checker on small crates written to a temporary folder.

use crate::chain::chain;
use crate::find::{calls, numbers};
use crate::imports::{paths, ModPath};
use crate::layers::{check, Layers};
use crate::text::{strip_comments, strip_inline_modules};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// A crate under a fresh temporary folder, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(name: &str, files: &[(&str, &str)]) -> Tree {
        let dir = std::env::temp_dir().join(format!("arch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        Tree(dir)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn paths_are_found_in_uses_groups_and_inline_but_not_comments_strings_or_tests() {
    let code = strip_inline_modules(&strip_comments(
        r##"
        use crate::a::X;
        use crate::{b, c::{D, e::F}, self};
        use super::sib::{self as s};
        // use crate::commented;
        /// [`crate::doc`]
        fn f() { crate::d::g(); let s = "crate::in_string"; let r = r#"crate::raw"#; my_crate::e(); kid::h(); }
        #[cfg(test)]
        mod tests { use crate::only_tests::Z; }
        "##,
    ));
    let me: ModPath = vec!["m".into(), "n".into()];
    let kids: BTreeSet<String> = ["kid".to_string()].into();
    let got: Vec<String> = paths(&code, &me, &kids)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        got,
        [
            "a::X",
            "b",
            "c::D",
            "c::e::F",
            "",
            "m::sib",
            "d::g",
            "m::n::kid::h"
        ]
    );
}

#[test]
fn upward_imports_and_cycles_between_files_are_reported() {
    let t = Tree::new(
        "layers",
        &[
            ("lib.rs", "mod top; mod mid; mod low; pub use top::X;"),
            ("top.rs", "use crate::low::Y; use crate::Shared;"),
            ("mid/mod.rs", "mod a; mod b; fn f() { a::g(); }"),
            ("mid/a.rs", "use super::b::Z;"),
            ("mid/b.rs", "pub fn z() { super::f() }"),
            ("low/mod.rs", "mod inner;"),
            ("low/inner.rs", "use crate::top::X;"),
        ],
    );
    let layers: Layers = &[&["top"], &["mid"], &["low"]];
    let problems = check(&t.0, layers);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].contains("top.rs: names crate::Shared through the crate root"),
        "{problems:#?}"
    );
    let problems = problems[1..].to_vec();
    assert!(
        problems[0].contains("low/inner.rs: imports crate::top"),
        "{problems:#?}"
    );
    // mid/mod.rs → a → b → mid/mod.rs: the files and the imports are named.
    assert!(
        problems[1].contains("mid/a.rs, mid/b.rs, mid/mod.rs")
            && problems[1].contains("mid/b.rs imports mid/mod.rs"),
        "{problems:#?}"
    );
    std::fs::write(t.0.join("extra.rs"), "").unwrap();
    assert!(check(&t.0, layers)
        .iter()
        .any(|p| p.contains("`extra` is in no layer")));
}

#[test]
fn the_crate_root_is_a_face_only() {
    let t = Tree::new(
        "root",
        &[
            (
                "lib.rs",
                "//! fn in a comment\nmod a;\npub use a::{X, y as z};\n\
                 pub const N: u8 = 1;\nimpl X { fn f() {} }\n#[cfg(test)]\nmod tests { fn t() {} }",
            ),
            ("a.rs", "pub struct X; pub fn y() {}"),
        ],
    );
    let problems = check(&t.0, &[&["a"]]);
    assert_eq!(
        problems,
        [
            "lib.rs:4: defines a `const`; the crate root holds only `mod` and `pub use` (move the item into a module)",
            "lib.rs:5: defines a `impl`; the crate root holds only `mod` and `pub use` (move the item into a module)",
        ]
    );
}

#[test]
fn a_chain_keeps_its_files_and_its_order() {
    let doc = "resolve → check → send";
    let t = Tree::new(
        "chain",
        &[
            ("lib.rs", "mod chain;"),
            (
                "chain/mod.rs",
                "mod ctx; mod resolve; mod check; mod send;\n\
                 fn a() { resolve::f(); check::g(); send::h(); }\n\
                 fn b() { resolve::f(); send::h(); }",
            ),
            ("chain/ctx.rs", ""),
            ("chain/resolve.rs", "use super::ctx::C;"),
            ("chain/check.rs", ""),
            ("chain/send.rs", ""),
            ("README.md", doc),
        ],
    );
    let steps = ["resolve", "check", "send"];
    let readme = t.0.join("README.md");
    let docs = [(readme.as_path(), "README")];
    assert_eq!(
        chain(&t.0, "chain", &steps, &["ctx"], &docs),
        Vec::<String>::new()
    );
    // Out of order, a file that is no step, a step without a file.
    std::fs::write(
        t.0.join("chain/mod.rs"),
        "mod ctx; mod resolve; mod send; mod extra;\n fn a() { send::h(); resolve::f(); }",
    )
    .unwrap();
    std::fs::remove_file(t.0.join("chain/check.rs")).unwrap();
    std::fs::write(t.0.join("chain/extra.rs"), "").unwrap();
    // A back-call: the last step calls the first.
    std::fs::write(t.0.join("chain/send.rs"), "fn h() { super::resolve::f(); }").unwrap();
    std::fs::write(&readme, "resolve → send").unwrap();
    let problems = chain(&t.0, "chain", &steps, &["ctx"], &docs);
    let has = |s: &str| problems.iter().any(|p| p.contains(s));
    assert!(has("fn a calls `resolve` after `send`"), "{problems:#?}");
    assert!(has("chain/extra.rs: not a step"), "{problems:#?}");
    assert!(
        has("no file or folder for the step `check`"),
        "{problems:#?}"
    );
    assert!(has("README: does not show the call chain"), "{problems:#?}");
    assert!(
        has("chain/send: the step `send` imports an earlier step, `resolve`"),
        "{problems:#?}"
    );
}

#[test]
fn calls_and_numbers_are_found_in_code_only() {
    let t = Tree::new(
        "calls",
        &[
            (
                "a.rs",
                "fn f() { o.finish(1); } // o.finish(2)\nfn g() { let c = -32601; let s = \"-32602\"; }",
            ),
            ("table.rs", "const C: i64 = -32600;"),
        ],
    );
    assert_eq!(calls(&t.0, ".finish("), ["a.rs:1"]);
    let found = numbers(&t.0, &["table.rs"]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].starts_with("a.rs:2"), "{found:#?}");
}
