//! The binary graph form (SPEC 2.4): an arbitrary buffer verifies or is
//! refused, never panics; a verified buffer can be walked field by field
//! without a panic, and what it holds survives an encode/decode round trip
//! (nodes come back sorted by CRN, the table key).

#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_api::fbs::{FbGraph, FbNode, decode_graph, encode_graph, verified_root};

fuzz_target!(|data: &[u8]| {
    let Ok(root) = verified_root(data) else {
        assert!(decode_graph(data).is_err(), "decode accepts what the verifier refuses");
        return;
    };
    // Zero-copy walk: every field of every table.
    let mut seen = 0usize;
    for n in root.nodes().iter().flatten() {
        seen += n.crn().len() + n.type_().len() + n.state().map_or(0, str::len);
        seen += n.cost_usd_mo().to_bits() as usize % 2 + (n.creation_timestamp() ^ n.valid_to()) as usize % 2;
        for p in n.properties().iter().flatten() {
            seen += p.key().map_or(0, str::len) + p.value().map_or(0, str::len);
        }
        let _ = n.key_compare_with_value(n.crn());
    }
    for e in root.edges().iter().flatten() {
        seen += e.source_crn().len() + e.target_crn().len() + usize::from(e.relationship().0);
        seen += e.valid_to() as usize % 2;
        for p in e.properties().iter().flatten() {
            seen += p.key().map_or(0, str::len) + p.value().map_or(0, str::len);
        }
    }
    std::hint::black_box((seen, root.version(), root.last_updated()));

    let g = decode_graph(data).expect("a verified buffer decodes");
    let bytes = encode_graph(&g);
    let back = decode_graph(&bytes).expect("a re-encoded graph decodes");
    let mut want = g.nodes.clone();
    want.sort_by(|a, b| a.crn.cmp(&b.crn));
    assert_eq!(back.nodes.len(), want.len());
    for (got, want) in back.nodes.iter().zip(&want) {
        // Costs keep their bits, except that -0.0 reads back as 0.0.
        let (a, b) = (got.cost_usd_mo, want.cost_usd_mo);
        assert!(a.to_bits() == b.to_bits() || (a == 0.0 && b == 0.0), "cost {a} != {b}");
        let strip = |x: &FbNode| FbNode {
            cost_usd_mo: 0.0,
            ..x.clone()
        };
        assert_eq!(strip(got), strip(want));
    }
    assert_eq!(back.edges, g.edges);
    assert_eq!((back.version, back.last_updated), (g.version, g.last_updated));
    let _: &FbGraph = &back;
});
