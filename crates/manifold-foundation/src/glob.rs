//! [`Glob`]: the operator's name patterns (`[upstreams.x] tools.allow`,
//! `[[policy]]`, `[[rate_limit]] tools`, `[confirm]`). `*` matches any run of
//! characters (including none), `?` exactly one; everything else is literal.
//!
//! Invariants: matching is iterative with one backtrack point (linear in
//! practice, O(n·m) at worst, no recursion), so a hostile name cannot make it
//! blow the stack or run away.
//!
//! Not here: what a pattern is matched against (the callers: an upstream's own
//! name, an exposed name, a canonical URI).

/// One glob pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(Vec<char>);

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        Glob(pattern.chars().collect())
    }

    pub fn matches(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().collect();
        let (p, n) = (&self.0, &name);
        let (mut pi, mut ni) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while ni < n.len() {
            if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
                pi += 1;
                ni += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some((pi, ni));
                pi += 1;
            } else if let Some((sp, sn)) = star {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|&c| c == '*')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            ("*", "", true),
            ("get_*", "get_issue", true),
            ("get_*", "list_issues", false),
            ("*_issue", "get_issue", true),
            ("*issue*", "list_issues_fast", true),
            ("get_?", "get_x", true),
            ("get_?", "get_xy", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
            ("", "", true),
            ("", "x", false),
            ("ä*", "äbc", true),
        ];
        for (pattern, name, want) in cases {
            assert_eq!(
                Glob::new(pattern).matches(name),
                *want,
                "{pattern} vs {name}"
            );
        }
    }

    #[test]
    fn a_pathological_pattern_stays_bounded() {
        let pattern = "*a".repeat(200);
        let name = "a".repeat(2000) + "b";
        assert!(!Glob::new(&pattern).matches(&name));
    }
}
