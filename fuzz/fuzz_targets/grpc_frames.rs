//! The gRPC framing of a provider's `Scan` response, which the host reads
//! off HTTP/2 itself (`svc_ingest::host::read_body`): arbitrary bytes cut
//! into arbitrary DATA frames, then trailers with a status or none. The
//! reader never panics and yields exactly the messages, and ends exactly
//! as, a plain reading of the bytes in one piece says: each message a flag
//! byte (0; 1 or anything else is an error), a big-endian length (past the
//! limit is an error) and that many bytes; a message cut short is an
//! error; then the trailers' status (none: an error).

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use svc_ingest::host::read_body;
use tonic::Code;

/// What the bytes hold, read in one piece: the messages, and the code the
/// stream ends with (`None` for OK).
fn expected(body: &[u8], status: Option<u16>, max: usize) -> (Vec<&[u8]>, Option<Code>) {
    let mut messages = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let Some((&[flag, a, b, c, d], after)) = rest.split_first_chunk::<5>() else {
            return (messages, Some(Code::Internal));
        };
        if flag != 0 {
            return (messages, Some(Code::Internal));
        }
        let len = u32::from_be_bytes([a, b, c, d]) as usize;
        if len > max {
            return (messages, Some(Code::OutOfRange));
        }
        let Some((message, after)) = after.split_at_checked(len) else {
            return (messages, Some(Code::Internal));
        };
        messages.push(message);
        rest = after;
    }
    let end = match status {
        Some(0) => None,
        Some(code) => Some(Code::from_i32(i32::from(code))),
        None => Some(Code::Unknown),
    };
    (messages, end)
}

fuzz_target!(|data: &[u8]| {
    // Byte 0: the trailers and the size limit; byte 1: how many cuts; then
    // one byte per cut (the frame's length), then the body.
    let Some((&[how, cuts], rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let status = match how % 3 {
        0 => Some(0),
        1 => Some(13),
        _ => None,
    };
    let max = [16, 4096, 1 << 20][usize::from(how / 3 % 3)];
    let cuts = usize::from(cuts % 16).min(rest.len());
    let (sizes, body) = rest.split_at(cuts);
    let whole = Bytes::copy_from_slice(body);
    let mut frames = Vec::new();
    let mut at = 0;
    for &size in sizes {
        let end = (at + usize::from(size)).min(whole.len());
        frames.push(whole.slice(at..end));
        at = end;
    }
    frames.push(whole.slice(at..));

    let (want, want_end) = expected(body, status, max);
    let (got, end) = read_body(frames, status, max);
    let got: Vec<&[u8]> = got.iter().map(|m| &m[..]).collect();
    assert_eq!(got, want);
    assert_eq!(end.as_ref().err().map(|s| s.code()), want_end, "{end:?}");
});
