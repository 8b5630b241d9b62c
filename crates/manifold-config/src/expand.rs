//! `${VAR}` expansion from the environment, for values that carry secrets or
//! per-deployment settings (`headers = { Authorization = "Bearer ${TOKEN}" }`).
//! `$$` writes a literal `$`. An unset variable is an error, never an empty string:
//! a silently empty credential is worse than a refusal to start.

pub fn expand(value: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err("unterminated `${`".into());
            };
            let name = &body[..end];
            let valid = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                return Err(format!("`${{{name}}}` is not a valid variable name"));
            }
            match lookup(name) {
                Some(v) => out.push_str(&v),
                None => return Err(format!("environment variable `{name}` is not set")),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_table() {
        let env = |k: &str| match k {
            "TOKEN" => Some("abc".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        let ok: &[(&str, &str)] = &[
            ("Bearer ${TOKEN}", "Bearer abc"),
            ("${TOKEN}${TOKEN}", "abcabc"),
            ("a$$b", "a$b"),
            ("cost $5", "cost $5"),
            ("x${EMPTY}y", "xy"),
            ("plain", "plain"),
        ];
        for (input, want) in ok {
            assert_eq!(expand(input, &env).unwrap(), *want, "{input}");
        }
        for bad in ["${MISSING}", "${TOKEN", "${}", "${1A}", "${A-B}"] {
            assert!(expand(bad, &env).is_err(), "{bad}");
        }
    }
}
