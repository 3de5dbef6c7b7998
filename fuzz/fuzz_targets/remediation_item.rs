//! A `remediation_items` value (`svc_remediation::store::record`) from
//! arbitrary bytes, as a start reads one from `graph.redb`: decoding never
//! panics, and an item it accepts is written as a record that reads back
//! as the same item (the same bytes again).

#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_engine::remediation::store::record;

fuzz_target!(|data: &[u8]| {
    const CRN: &str = "crn:svc:aws:us-east-1:ec2:volume:1:vol-1";
    if let Ok(item) = record::decode(CRN, data) {
        let mut written = Vec::new();
        record::encode(&mut written, &item);
        let read = record::decode(CRN, &written).expect("a written record reads back");
        let mut again = Vec::new();
        record::encode(&mut again, &read);
        assert_eq!(again, written, "a written record reads back as another item");
    }
});
