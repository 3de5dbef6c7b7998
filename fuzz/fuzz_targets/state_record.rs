//! A `graph.redb` state record (`svc_store::replica`) from arbitrary
//! bytes, as a standby reads what a leader shipped: decoding never
//! panics; a record it accepts encodes to the same bytes; applying it to
//! a real store (seq one past the store's) never panics, and either
//! applies and moves the store's seq or is refused and leaves it.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use parking_lot::Mutex;
use svc_engine::store::replica::StateRecord;
use svc_engine::store::{GraphStore, StoreError};

/// One store for the whole run, in memory-backed scratch space when there is some.
static STORE: LazyLock<Mutex<GraphStore>> = LazyLock::new(|| {
    let base = std::path::Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_owned()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("svc-fuzz-state-record-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    Mutex::new(GraphStore::open(&dir.join("graph.redb")).expect("a new store"))
});

fuzz_target!(|data: &[u8]| {
    let decoded = StateRecord::decode(data);
    if let Ok(record) = &decoded {
        assert_eq!(record.encode(), data, "an accepted record encodes to other bytes");
    }
    let store = STORE.lock();
    let seq = store.state_seq().expect("the seq reads");
    let applied = store.apply_record(seq + 1, data);
    let now = store.state_seq().expect("the seq reads");
    match applied {
        Ok(true) => {
            assert!(decoded.is_ok(), "a record that does not decode was applied");
            assert_eq!(now, seq + 1);
        }
        Ok(false) => panic!("a record one past the store's seq was taken for an old one"),
        // A record that decodes is refused only for a table that exists with other types.
        Err(StoreError::BadRecord { .. }) => assert_eq!(now, seq, "a refused record moved the seq"),
        Err(e) => panic!("not a record error: {e}"),
    }
});
