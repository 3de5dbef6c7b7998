//! CRN parsing: any UTF-8 input must parse or fail without panicking, and a
//! parsed CRN must print to a string that parses back to an equal CRN.

#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_engine::crn::Crn;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(crn) = Crn::parse(s) {
        let printed = crn.to_string();
        let reparsed =
            Crn::parse(&printed).unwrap_or_else(|e| panic!("{printed:?} (printed from {s:?}) does not parse: {e}"));
        assert_eq!(reparsed, crn, "{s:?} -> {printed:?} changed on reparse");
    }
});
