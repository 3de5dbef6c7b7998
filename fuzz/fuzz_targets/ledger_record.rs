//! A stored ledger event (`events.redb`'s value, `svc_store::ledger::codec`)
//! from arbitrary bytes, read as every reader of the ledger reads it:
//! decoding never panics; an event it accepts encodes to bytes that decode
//! to the same event and encode the same way again; the timestamp and type
//! read alone (the time search and type filters) are the decoded ones; its
//! hash and its public form (the payload parsed as JSON) come out or fail
//! without panicking.

#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_engine::store::ledger::codec::{decode, peek_ts, peek_type};

fuzz_target!(|data: &[u8]| {
    let ts = peek_ts(data);
    let ty = peek_type(data);
    let Ok(stored) = decode(data) else {
        return;
    };
    assert_eq!(ts, Ok(stored.ts_us));
    assert_eq!(ty, Ok(stored.event_type));
    let once = stored.encode();
    let again = decode(&once).unwrap_or_else(|e| panic!("a re-encoded event does not decode: {e}"));
    assert_eq!(again, stored);
    assert_eq!(again.encode(), once);
    let seq = stored.ts_us.rotate_left(17);
    assert_eq!(again.compute_hash(seq), stored.compute_hash(seq));
    if let Ok(event) = stored.to_event(seq) {
        assert_eq!((event.seq, event.ts_us, event.hash), (seq, stored.ts_us, stored.hash));
        assert_eq!(event.event_type, stored.event_type);
    }
});
