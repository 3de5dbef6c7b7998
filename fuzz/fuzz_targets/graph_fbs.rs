//! Binary graph decoding: arbitrary bytes must decode or fail verification,
//! never panic; whatever decodes must survive an encode/decode round trip.

#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_engine::fbs::{FbNode, decode_graph, encode_graph};

fuzz_target!(|data: &[u8]| {
    let Ok((mut nodes, edges, version, last_updated)) = decode_graph(data) else {
        return;
    };
    let bytes = encode_graph(&nodes, &edges, version, last_updated);
    let (n, e, v, t) = decode_graph(&bytes).expect("re-encoded graph decodes");
    // encode_graph writes nodes sorted by CRN (stable).
    nodes.sort_by(|a, b| a.crn.cmp(&b.crn));
    assert_eq!(n.len(), nodes.len());
    for (got, want) in n.iter().zip(&nodes) {
        // Costs keep their bits, except that -0.0 reads back as 0.0.
        let (g, w) = (got.cost_usd_mo, want.cost_usd_mo);
        assert!(
            g.to_bits() == w.to_bits() || (g == 0.0 && w == 0.0),
            "cost {g} != {w}"
        );
        let strip = |x: &FbNode| FbNode {
            cost_usd_mo: 0.0,
            ..x.clone()
        };
        assert_eq!(strip(got), strip(want));
    }
    assert_eq!(e, edges);
    assert_eq!((v, t), (version, last_updated));
});
