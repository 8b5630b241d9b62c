//! Property tests of the canonical form and fingerprints, over arbitrary
//! definitions: the same definition sent with its members in another order,
//! with other white space or with escaped characters has the same canonical
//! text and fingerprint; the canonical text reads back as the same value and
//! is its own canonical form; every double reads back as itself; any changed string (a value or a key), anywhere
//! outside the top-level `_meta`, changes the fingerprint and shows in the
//! diff.

use super::*;
use proptest::prelude::*;

/// Strings that exercise escaping and UTF-16 ordering: ASCII, controls,
/// quotes, non-BMP characters, characters from U+E000..U+FFFF.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::char::range('a', 'z'),
            1 => prop::char::range('\u{0}', '\u{1f}'),
            1 => Just('"'),
            1 => Just('\\'),
            1 => Just('/'),
            1 => prop::char::range('\u{e000}', '\u{fffd}'),
            1 => prop::char::range('\u{1f600}', '\u{1f64f}'),
            1 => prop::char::range('\u{80}', '\u{7ff}'),
        ],
        0..8,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn definition() -> impl Strategy<Value = Map<String, Value>> {
    (text(), prop::collection::vec((text(), json()), 0..6)).prop_map(|(name, extra)| {
        let mut m: Map<String, Value> = extra.into_iter().collect();
        m.insert("name".into(), Value::String(name));
        m.remove("_meta");
        m
    })
}

/// A small deterministic generator (xorshift64*) for shuffling.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
    }
}

/// The same value with every object's members in a shuffled order.
fn shuffled(v: &Value, rng: &mut Rng) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(|i| shuffled(i, rng)).collect()),
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            for i in (1..members.len()).rev() {
                let j = rng.below(i + 1);
                members.swap(i, j);
            }
            Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k.clone(), shuffled(v, rng)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// JSON text with white space around every token and every non-ASCII
/// character written as a `\u` escape (surrogate pairs above the BMP).
fn spaced(v: &Value) -> String {
    let mut out = String::new();
    write_spaced(&mut out, v);
    out
}

fn write_spaced(out: &mut String, v: &Value) {
    match v {
        Value::Array(items) => {
            out.push_str("[ \n");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(" ,\t");
                }
                write_spaced(out, item);
            }
            out.push_str("\r\n]");
        }
        Value::Object(map) => {
            out.push_str("{\n  ");
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n  ");
                }
                escaped(out, k);
                out.push_str(" :  ");
                write_spaced(out, item);
            }
            out.push_str("\n}");
        }
        Value::String(s) => escaped(out, s),
        other => out.push_str(&other.to_string()),
    }
}

fn escaped(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04X}"));
            }
        }
    }
    out.push('"');
}

/// Every string in `v` (keys and values) outside the top-level `_meta`, as
/// paths for [`mutate`].
fn string_sites(v: &Value, path: &mut Vec<Step>, out: &mut Vec<(Vec<Step>, bool)>) {
    match v {
        Value::String(_) => out.push((path.clone(), false)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                string_sites(item, path, out);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                if path.is_empty() && k == "_meta" {
                    continue;
                }
                path.push(Step::Key(k.clone()));
                out.push((path.clone(), true));
                string_sites(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Appends `extra` to the string at `path`, or to the key the path ends at
/// (`key_site`).
fn mutate(v: &mut Value, path: &[Step], extra: &str, key_site: bool) {
    match (v, path) {
        (Value::String(s), []) => s.push_str(extra),
        (Value::Object(map), [Step::Key(k)]) if key_site => {
            let item = map.remove(k).unwrap_or(Value::Null);
            let mut renamed = format!("{k}{extra}");
            while map.contains_key(&renamed) {
                renamed.push_str(extra);
            }
            map.insert(renamed, item);
        }
        (Value::Object(map), [Step::Key(k), rest @ ..]) => {
            if let Some(child) = map.get_mut(k) {
                mutate(child, rest, extra, key_site);
            }
        }
        (Value::Array(items), [Step::Index(i), rest @ ..]) => {
            if let Some(child) = items.get_mut(*i) {
                mutate(child, rest, extra, key_site);
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stable_under_member_order_and_white_space(def in definition(), seed in any::<u64>()) {
        let value = Value::Object(def.clone());
        let mut rng = Rng(seed | 1);
        let reordered = shuffled(&value, &mut rng);
        let reparsed: Value = serde_json::from_str(&spaced(&reordered)).expect("spaced json");
        let again: Value = serde_json::from_str(&serde_json::to_string_pretty(&reordered).expect("pretty"))
            .expect("pretty json");
        let canonical = canonical_json(&value);
        prop_assert_eq!(&canonical_json(&reparsed), &canonical);
        prop_assert_eq!(&canonical_json(&again), &canonical);
        let (Value::Object(a), Value::Object(b)) = (&reparsed, &again) else { unreachable!() };
        prop_assert_eq!(Fingerprint::of(a), Fingerprint::of(&def));
        prop_assert_eq!(Fingerprint::of(b), Fingerprint::of(&def));
        prop_assert!(diff(&def, a).is_empty());
        // The canonical text reads back as the same value, and is a fixed point.
        let back: Value = serde_json::from_str(&canonical).expect("canonical json");
        prop_assert_eq!(canonical_json(&back), canonical);
    }

    #[test]
    fn any_changed_string_changes_the_fingerprint(
        def in definition(),
        pick in any::<prop::sample::Index>(),
        extra in "[a-z\u{0}\u{e9}\u{1f600}\"]{1,3}",
        meta in json(),
    ) {
        let value = Value::Object(def.clone());
        let mut sites = Vec::new();
        string_sites(&value, &mut Vec::new(), &mut sites);
        // `name` is always there: there is always a string to change.
        prop_assert!(!sites.is_empty());
        let (site, key_site) = pick.get(&sites).clone();
        let mut changed = value.clone();
        mutate(&mut changed, &site, &extra, key_site);
        let Value::Object(changed) = changed else { unreachable!() };
        prop_assert_ne!(Fingerprint::of(&changed), Fingerprint::of(&def), "{:?}", site);
        prop_assert!(!diff(&def, &changed).is_empty());
        // A change inside the top-level `_meta` alone changes nothing.
        let mut with_meta = def.clone();
        with_meta.insert("_meta".into(), meta);
        prop_assert_eq!(Fingerprint::of(&with_meta), Fingerprint::of(&def));
    }

    /// Every finite double prints as digits that read back as itself (the
    /// JavaScript spelling was checked against node for 200,000 doubles).
    #[test]
    fn numbers_read_back_as_themselves(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let text = canonical_json(&Value::from(f));
        let back: f64 = text.parse().expect("a number");
        prop_assert!(back == f, "{} → {} → {}", f, text, back);
    }
}
