//! The Porter stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980), as
//! in his reference C implementation: `deploys`, `deploying` and `deployed` all
//! become `deploi`, `created` and `creates` become `creat`. Stems are not words and
//! need not be: the same stemmer runs over the index and the queries.
//!
//! Invariants: deterministic and total: any input gives an output, never a panic;
//! only words of lowercase ASCII letters longer than two letters are stemmed, others
//! come back unchanged (numbers, non-ASCII words, `k8s`).
//!
//! Not here: tokenizing and lowercasing (see `text`).

/// The stem of `word`.
pub fn stem(word: &str) -> String {
    if word.len() <= 2 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_string();
    }
    let mut s = Stemmer {
        b: word.as_bytes().to_vec(),
        j: 0,
    };
    s.step1ab();
    if s.b.len() > 1 {
        s.step1c();
        s.step2();
        s.step3();
        s.step4();
        s.step5();
    }
    // Only ASCII letters went in and only ASCII letters are written.
    String::from_utf8(s.b).unwrap_or_else(|_| word.to_string())
}

/// The word being stemmed (`b`, whole) and the length of the stem a suffix test
/// left (`j`), as in the reference implementation (which uses inclusive ends).
struct Stemmer {
    b: Vec<u8>,
    j: usize,
}

impl Stemmer {
    fn k(&self) -> usize {
        self.b.len()
    }

    /// Whether `b[i]` is a consonant: not a vowel, and `y` only after a vowel.
    fn cons(&self, i: usize) -> bool {
        match self.b[i] {
            b'a' | b'e' | b'i' | b'o' | b'u' => false,
            b'y' => i == 0 || !self.cons(i - 1),
            _ => true,
        }
    }

    /// The measure of `b[..j]`: the number of vowel-consonant sequences in
    /// `[C](VC)^m[V]`.
    fn m(&self) -> usize {
        let (j, mut n, mut i) = (self.j, 0, 0);
        loop {
            if i >= j {
                return n;
            }
            if !self.cons(i) {
                break;
            }
            i += 1;
        }
        i += 1;
        loop {
            loop {
                if i >= j {
                    return n;
                }
                if self.cons(i) {
                    break;
                }
                i += 1;
            }
            i += 1;
            n += 1;
            loop {
                if i >= j {
                    return n;
                }
                if !self.cons(i) {
                    break;
                }
                i += 1;
            }
            i += 1;
        }
    }

    fn vowel_in_stem(&self) -> bool {
        (0..self.j).any(|i| !self.cons(i))
    }

    /// Whether `b[i-1..=i]` is a double consonant.
    fn doublec(&self, i: usize) -> bool {
        i >= 1 && self.b[i] == self.b[i - 1] && self.cons(i)
    }

    /// Whether `b[i-2..=i]` is consonant-vowel-consonant and `b[i]` is not w, x or y
    /// (`hop` → `hope` but not `snow`).
    fn cvc(&self, i: usize) -> bool {
        i >= 2
            && self.cons(i)
            && !self.cons(i - 1)
            && self.cons(i - 2)
            && !matches!(self.b[i], b'w' | b'x' | b'y')
    }

    /// Whether the word ends with `s`; if so `j` is the length before it.
    fn ends(&mut self, s: &str) -> bool {
        let s = s.as_bytes();
        if s.len() > self.k() || !self.b.ends_with(s) {
            return false;
        }
        self.j = self.k() - s.len();
        true
    }

    /// Replaces the suffix after `j` with `s`.
    fn setto(&mut self, s: &str) {
        self.b.truncate(self.j);
        self.b.extend_from_slice(s.as_bytes());
    }

    fn r(&mut self, s: &str) {
        if self.m() > 0 {
            self.setto(s);
        }
    }

    fn truncate(&mut self, k: usize) {
        self.b.truncate(k);
    }

    /// Plurals and `-ed`/`-ing`.
    fn step1ab(&mut self) {
        let k = self.k();
        if self.b[k - 1] == b's' {
            if self.ends("sses") {
                self.truncate(k - 2);
            } else if self.ends("ies") {
                self.setto("i");
            } else if self.b[k - 2] != b's' {
                self.truncate(k - 1);
            }
        }
        if self.ends("eed") {
            if self.m() > 0 {
                let k = self.k();
                self.truncate(k - 1);
            }
        } else if (self.ends("ed") || self.ends("ing")) && self.vowel_in_stem() {
            self.truncate(self.j);
            self.j = self.k();
            if self.ends("at") {
                self.setto("ate");
            } else if self.ends("bl") {
                self.setto("ble");
            } else if self.ends("iz") {
                self.setto("ize");
            } else if self.k() >= 1 && self.doublec(self.k() - 1) {
                let k = self.k();
                if !matches!(self.b[k - 1], b'l' | b's' | b'z') {
                    self.truncate(k - 1);
                }
            } else if self.m() == 1 && self.k() >= 1 && self.cvc(self.k() - 1) {
                self.j = self.k();
                self.setto("e");
            }
        }
    }

    /// A final `y` after a vowel in the stem becomes `i`.
    fn step1c(&mut self) {
        if self.ends("y") && self.vowel_in_stem() {
            let k = self.k();
            self.b[k - 1] = b'i';
        }
    }

    /// Double suffixes to single ones, in the reference order (the first suffix that
    /// matches decides, whether or not the measure lets it be replaced).
    fn step2(&mut self) {
        const RULES: &[(&str, &str)] = &[
            ("ational", "ate"),
            ("tional", "tion"),
            ("enci", "ence"),
            ("anci", "ance"),
            ("izer", "ize"),
            ("bli", "ble"),
            ("alli", "al"),
            ("entli", "ent"),
            ("eli", "e"),
            ("ousli", "ous"),
            ("ization", "ize"),
            ("ation", "ate"),
            ("ator", "ate"),
            ("alism", "al"),
            ("iveness", "ive"),
            ("fulness", "ful"),
            ("ousness", "ous"),
            ("aliti", "al"),
            ("iviti", "ive"),
            ("biliti", "ble"),
            ("logi", "log"),
        ];
        self.rules(RULES);
    }

    fn step3(&mut self) {
        const RULES: &[(&str, &str)] = &[
            ("icate", "ic"),
            ("ative", ""),
            ("alize", "al"),
            ("iciti", "ic"),
            ("ical", "ic"),
            ("ful", ""),
            ("ness", ""),
        ];
        self.rules(RULES);
    }

    fn rules(&mut self, rules: &[(&str, &str)]) {
        if self.k() < 2 {
            return;
        }
        for (suffix, replacement) in rules {
            if self.ends(suffix) {
                self.r(replacement);
                return;
            }
        }
    }

    /// Drops `-ant`, `-ence`, … when the stem's measure is over one.
    fn step4(&mut self) {
        const SUFFIXES: &[&str] = &[
            "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
            "ou", "ism", "ate", "iti", "ous", "ive", "ize",
        ];
        if self.k() < 2 {
            return;
        }
        for suffix in SUFFIXES {
            if self.ends(suffix) {
                if *suffix == "ion" && !(self.j >= 1 && matches!(self.b[self.j - 1], b's' | b't')) {
                    continue;
                }
                if self.m() > 1 {
                    self.truncate(self.j);
                }
                return;
            }
        }
    }

    /// A final `e` (when the measure allows) and `ll` → `l`.
    fn step5(&mut self) {
        if self.k() == 0 {
            return;
        }
        self.j = self.k();
        let k = self.k();
        if self.b[k - 1] == b'e' {
            let a = self.m();
            if a > 1 || (a == 1 && !(k >= 2 && self.cvc(k - 2))) {
                self.truncate(k - 1);
            }
        }
        let k = self.k();
        if k >= 1 && self.b[k - 1] == b'l' && self.doublec(k - 1) && self.m() > 1 {
            self.truncate(k - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn reference_vocabulary() {
        // Pairs from Porter's published voc.txt / output.txt.
        for (word, want) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("generalizations", "gener"),
            ("oscillators", "oscil"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("adjustment", "adjust"),
            ("effective", "effect"),
            ("controll", "control"),
            ("roll", "roll"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
        ] {
            assert_eq!(stem(word), want, "{word}");
        }
    }

    #[test]
    fn inflections_of_one_word_meet() {
        for family in [
            &["deploy", "deploys", "deployed", "deploying"][..],
            &["create", "creates", "created", "creating"],
            &["list", "lists", "listed", "listing"],
            &["repository", "repositories"],
        ] {
            let stems: Vec<String> = family.iter().map(|w| stem(w)).collect();
            assert!(
                stems.windows(2).all(|w| w[0] == w[1]),
                "{family:?}: {stems:?}"
            );
        }
    }

    #[test]
    fn leaves_what_it_does_not_know_alone() {
        for word in ["k8s", "10", "é", "ab", "", "x", "Deploy", "naïve"] {
            assert_eq!(stem(word), word);
        }
        // Degenerate shapes do not panic.
        for word in ["sss", "ies", "eed", "ing", "yyy", "sses", "ying", "eeds"] {
            let _ = stem(word);
        }
    }
}
