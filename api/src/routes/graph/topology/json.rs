//! JSON text written straight into the body's byte buffer: strings escaped
//! exactly as serde_json escapes them, numbers in their shortest form.

/// Writes `s` as a JSON string.
pub(super) fn push_json_str(buf: &mut Vec<u8>, s: &str) {
    buf.push(b'"');
    push_json_str_body(buf, s);
    buf.push(b'"');
}

/// Writes `s` escaped for the inside of a JSON string, as serde_json does.
pub(super) fn push_json_str_body(buf: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        buf.extend_from_slice(s.as_bytes());
        return;
    }
    for c in s.chars() {
        match c {
            '"' => buf.extend_from_slice(b"\\\""),
            '\\' => buf.extend_from_slice(b"\\\\"),
            '\n' => buf.extend_from_slice(b"\\n"),
            '\r' => buf.extend_from_slice(b"\\r"),
            '\t' => buf.extend_from_slice(b"\\t"),
            '\u{8}' => buf.extend_from_slice(b"\\b"),
            '\u{c}' => buf.extend_from_slice(b"\\f"),
            c if (c as u32) < 0x20 => buf.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes()),
            c => {
                let mut tmp = [0u8; 4];
                buf.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
            }
        }
    }
}

/// An `f32` in its shortest form (non-finite values were zeroed before).
pub(super) fn push_number(buf: &mut Vec<u8>, v: f32) {
    if serde_json::to_writer(&mut *buf, &v).is_err() {
        buf.extend_from_slice(b"0.0");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_like_serde_json() {
        for s in [
            "plain",
            "quo\"te",
            "back\\slash",
            "tab\tnew\nline\u{1}\u{8}\u{c}\u{1f}",
            "ünï/",
        ] {
            let mut buf = Vec::new();
            push_json_str(&mut buf, s);
            assert_eq!(String::from_utf8(buf).ok(), serde_json::to_string(s).ok(), "{s:?}");
        }
    }
}
