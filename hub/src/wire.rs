//! JSON-RPC lines read from a byte stream (the client's stdin, the agent's stdout) as the SDK
//! reads them, except that bytes that are not UTF-8 do not end the connection.
//!
//! The SDK reads lines with `AsyncBufReadExt::lines`, whose stream fails on the first line
//! that is not UTF-8, and a failed stream ends the connection: one stray byte from the client
//! ended the hub with the prompt in progress unanswered, and one from the agent cut the hub off
//! from an agent that was still running (new-user trial helper-129, 1). Such a line is read
//! with U+FFFD in place of what is not UTF-8, said on stderr, and goes on as any other line
//! (JSON text is UTF-8 by definition; a lossy reading of one line is what every other reader
//! of a harness's files in asp does with such text).

use std::io;

use futures::io::BufReader;
use futures::{AsyncBufReadExt as _, AsyncRead, Stream};

/// The lines of `input`, each without its `\n` (or `\r\n`), as `lines()` gives them. `who`
/// names the sender in what is said about a line that is not UTF-8.
pub(crate) fn lossy_lines(
    input: impl AsyncRead + Send + Unpin + 'static,
    who: &'static str,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    futures::stream::unfold(
        (BufReader::new(input), 0u64),
        move |(mut reader, mut n)| async move {
            let mut buf = Vec::new();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) => None,
                Ok(_) => {
                    n += 1;
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                        if buf.last() == Some(&b'\r') {
                            buf.pop();
                        }
                    }
                    let line = String::from_utf8(buf).unwrap_or_else(|e| {
                        crate::log::line(format_args!(
                            "asp hub: line {n} from {who} is not UTF-8; read with U+FFFD in \
                             place of what is not"
                        ));
                        String::from_utf8_lossy(e.as_bytes()).into_owned()
                    });
                    Some((Ok(line), (reader, n)))
                }
                Err(e) => Some((Err(e), (reader, n))),
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;

    #[test]
    fn a_line_that_is_not_utf8_is_read_lossily_and_the_next_one_follows() {
        let input: &[u8] = b"{\"a\":1}\r\n{\"b\":\"\xff\"}\nlast";
        let lines: Vec<String> = futures::executor::block_on(
            super::lossy_lines(futures::io::Cursor::new(input.to_vec()), "the test")
                .map(Result::unwrap)
                .collect(),
        );
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":\"\u{fffd}\"}", "last"]);
    }
}
