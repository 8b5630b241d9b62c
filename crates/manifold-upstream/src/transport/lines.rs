//! [`Lines`]: newline-delimited lines from a child's pipe, as bytes, each at
//! most `max` bytes. A longer line is discarded up to its newline and reading
//! goes on; bytes that are not UTF-8 are the caller's to judge.
//!
//! Why not `FramedRead` with a lines codec: a codec error (an over-long line,
//! invalid UTF-8) ends a `FramedRead` stream for good, so one bad line from a
//! child would end its connection.
//!
//! Invariants: memory per reader is bounded by `max` plus the read buffer; a
//! final line without a newline is still returned at EOF.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// One read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// A whole line, without its `\n` (and without a `\r` before it).
    Text(&'a [u8]),
    /// A line over `max`, discarded.
    TooLong,
    /// The pipe is closed.
    Eof,
}

pub(crate) struct Lines<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    max: usize,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub(crate) fn new(inner: R, max: usize) -> Lines<R> {
        Lines {
            reader: BufReader::new(inner),
            buf: Vec::new(),
            max,
        }
    }

    /// The next line. Cancel-safe only between lines: callers select on it
    /// against their connection's end, after which the reader is dropped.
    pub(crate) async fn next(&mut self) -> std::io::Result<Line<'_>> {
        self.buf.clear();
        let mut too_long = false;
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                if too_long {
                    return Ok(Line::TooLong);
                }
                if self.buf.is_empty() {
                    return Ok(Line::Eof);
                }
                break;
            }
            let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], true),
                None => (available, false),
            };
            let used = chunk.len() + usize::from(found);
            if !too_long {
                if self.buf.len() + chunk.len() > self.max {
                    too_long = true;
                    self.buf = Vec::new();
                } else {
                    self.buf.extend_from_slice(chunk);
                }
            }
            self.reader.consume(used);
            if found {
                if too_long {
                    return Ok(Line::TooLong);
                }
                break;
            }
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Line::Text(&self.buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], max: usize) -> Vec<String> {
        let mut lines = Lines::new(input, max);
        let mut out = Vec::new();
        loop {
            match lines.next().await.expect("read") {
                Line::Text(t) => out.push(String::from_utf8_lossy(t).into_owned()),
                Line::TooLong => out.push("<too long>".into()),
                Line::Eof => return out,
            }
        }
    }

    #[tokio::test]
    async fn bad_lines_are_skipped_and_reading_goes_on() {
        let cases: &[(&[u8], usize, &[&str])] = &[
            (b"a\nb\n", 10, &["a", "b"]),
            (b"a\r\nb", 10, &["a", "b"]),
            (
                b"short\nthis one is too long\nok\n",
                8,
                &["short", "<too long>", "ok"],
            ),
            (b"\xff\xfe\nafter\n", 8, &["\u{fffd}\u{fffd}", "after"]),
            (b"too long at the end", 4, &["<too long>"]),
            (b"", 4, &[]),
            (b"\n\n", 4, &["", ""]),
        ];
        for (input, max, want) in cases {
            assert_eq!(all(input, *max).await, *want, "{input:?}");
        }
    }

    #[tokio::test]
    async fn a_line_longer_than_the_read_buffer_is_bounded() {
        let mut input = vec![b'x'; 100_000];
        input.extend_from_slice(b"\nfine\n");
        assert_eq!(all(&input, 1000).await, ["<too long>", "fine"]);
        let mut input = vec![b'y'; 20_000];
        input.push(b'\n');
        assert_eq!(all(&input, 20_000).await, ["y".repeat(20_000)]);
    }
}
