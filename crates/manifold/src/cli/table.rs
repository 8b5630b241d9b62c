//! Plain-text tables: a header row and aligned columns separated by two spaces, one
//! line per row, so output reads well in a terminal and greps cleanly.
//!
//! Invariants: a cell never spans lines (control characters become spaces); an
//! empty cell prints as `-`; the last column is not padded (no trailing spaces).

use std::fmt::Write;

/// Between columns.
const GAP: &str = "  ";

pub struct Table {
    header: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&'static str]) -> Table {
        Table {
            header: header.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells print as `-`, extra cells are dropped.
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells: Vec<String> = cells
            .into_iter()
            .take(self.header.len())
            .map(|c| {
                let c = super::one_line(&c);
                if c.is_empty() {
                    "-".to_string()
                } else {
                    c
                }
            })
            .collect();
        cells.resize(self.header.len(), "-".to_string());
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Appends the table to `out`, every line ending in `\n`.
    pub fn render(&self, out: &mut String) {
        let width = |s: &str| s.chars().count();
        let mut widths: Vec<usize> = self.header.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(cell));
            }
        }
        let header = self.header.iter().map(|h| h.to_string()).collect();
        for row in std::iter::once(&header).chain(&self.rows) {
            let last = row.len().saturating_sub(1);
            for (i, cell) in row.iter().enumerate() {
                if i == last {
                    out.push_str(cell);
                } else {
                    let _ = write!(out, "{cell:<w$}{GAP}", w = widths[i]);
                }
            }
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns_without_trailing_spaces() {
        let mut t = Table::new(&["NAME", "STATE", "LAST ERROR"]);
        t.row(vec!["demo".into(), "ready".into(), String::new()]);
        t.row(vec![
            "a-long-name".into(),
            "down".into(),
            "line one\nline two".into(),
        ]);
        t.row(vec!["short".into()]);
        let mut out = String::new();
        t.render(&mut out);
        assert_eq!(
            out,
            "NAME         STATE  LAST ERROR\n\
             demo         ready  -\n\
             a-long-name  down   line one line two\n\
             short        -      -\n"
        );
        assert!(!t.is_empty());
    }
}
