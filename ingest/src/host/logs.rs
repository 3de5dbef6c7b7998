//! A plugin's stderr and stray stdout in the daemon's log. Plugins built on
//! go-plugin write hclog JSON lines (`{"@level":"info","@message":"..."}`);
//! those keep their level, anything else is logged at info as it is. A
//! line need not be UTF-8 (it is logged with replacement characters), and
//! one longer than [`MAX_LINE`] is logged in pieces: whatever a plugin
//! writes, its pipes are read to their end with bounded memory.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Longest line logged in one piece: a longer one is logged in pieces of
/// this size, so a plugin writing without newlines cannot make the daemon
/// hold more than this of its output.
const MAX_LINE: usize = 16 * 1024;

/// Forwards every line of `stream` to the log until it closes.
pub(crate) async fn forward_lines(plugin: String, stream: impl AsyncRead + Unpin, source: &'static str) {
    read_lines(stream, |line| log_line(&plugin, source, &String::from_utf8_lossy(line))).await;
}

/// Reads `stream` to its end, handing each line to `each` without its line
/// ending: bytes as they came (a line need not be UTF-8), at most
/// [`MAX_LINE`] of them at a time. The stream is drained whatever it holds,
/// so a plugin never blocks on a full pipe because of what it wrote.
async fn read_lines(stream: impl AsyncRead + Unpin, mut each: impl FnMut(&[u8])) {
    let mut reader = BufReader::new(stream);
    let mut line: Vec<u8> = Vec::new();
    let mut emit = |line: &mut Vec<u8>| {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        each(text);
        line.clear();
    };
    loop {
        let buf = match reader.fill_buf().await {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if buf.is_empty() {
            break;
        }
        let room = MAX_LINE - line.len();
        let window = &buf[..buf.len().min(room)];
        let used = match window.iter().position(|&b| b == b'\n') {
            Some(end) => {
                line.extend_from_slice(&window[..end]);
                emit(&mut line);
                end + 1
            }
            None => {
                line.extend_from_slice(window);
                if line.len() >= MAX_LINE {
                    emit(&mut line);
                }
                window.len()
            }
        };
        reader.consume(used);
    }
    if !line.is_empty() {
        emit(&mut line);
    }
}

fn log_line(plugin: &str, source: &str, line: &str) {
    if line.trim().is_empty() {
        return;
    }
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
        tracing::info!(plugin, source, "{line}");
        return;
    };
    let message = obj.get("@message").and_then(Value::as_str).unwrap_or(line);
    let module = obj.get("@module").and_then(Value::as_str).unwrap_or("");
    let fields: Vec<String> = obj
        .iter()
        .filter(|(k, _)| !k.starts_with('@'))
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    let fields = fields.join(" ");
    match obj.get("@level").and_then(Value::as_str).unwrap_or("info") {
        "trace" => tracing::trace!(plugin, module, fields, "{message}"),
        "debug" => tracing::debug!(plugin, module, fields, "{message}"),
        "warn" | "warning" => tracing::warn!(plugin, module, fields, "{message}"),
        "error" => tracing::error!(plugin, module, fields, "{message}"),
        _ => tracing::info!(plugin, module, fields, "{message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        read_lines(bytes, |l| out.push(l.to_vec())).await;
        out
    }

    #[tokio::test]
    async fn lines_that_are_not_utf8_are_passed_on_and_reading_goes_on() {
        let got = lines_of(b"caf\xe9 au lait\r\nnext\n\nlast without newline").await;
        assert_eq!(
            got,
            [
                b"caf\xe9 au lait".to_vec(),
                b"next".to_vec(),
                Vec::new(),
                b"last without newline".to_vec()
            ]
        );
        assert_eq!(String::from_utf8_lossy(&got[0]), "caf\u{fffd} au lait");
    }

    #[tokio::test]
    async fn a_line_longer_than_the_limit_comes_in_pieces() {
        let mut bytes = vec![b'x'; 2 * MAX_LINE + 10];
        bytes.extend_from_slice(b"\nafter\n");
        let got = lines_of(&bytes).await;
        let lens: Vec<usize> = got.iter().map(Vec::len).collect();
        assert_eq!(lens, [MAX_LINE, MAX_LINE, 10, 5]);
        assert_eq!(got[3], b"after");
    }
}
