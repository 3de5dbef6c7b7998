//! Terraform state (`iac.terraform_states`): any bytes must read as a
//! state or fail with an error, never panic; what reads must match against
//! a graph, report its drift and say its code change without panicking,
//! and each instance's address must name its module path as read.

#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_iac::drift::{Index, Live, LiveNode, Seen};

/// A graph holding one live node of every CRN it is asked about.
struct Everything;

impl Live for Everything {
    fn contains(&self, _crn: &str) -> bool {
        true
    }

    fn live(&self, _crn: &str) -> Option<LiveNode> {
        let mut node = LiveNode::default();
        node.props.insert("size_gib".into(), serde_json::json!(1));
        node.tags.insert("team".into(), "x".into());
        Some(node)
    }

    fn each(&self, f: &mut dyn FnMut(&Seen<'_>)) {
        f(&Seen {
            provider: "aws",
            region: "us-east-1",
            service: "ec2",
            kind: "volume",
            account: "1",
            id: "vol-1",
            live: true,
            cost_usd_mo: f64::NAN,
        });
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(state) = svc_iac::state::parse(data) else {
        return;
    };
    for d in &state.resources {
        let steps = svc_iac::address::parse_module(&d.module).expect("a read module path reads again");
        assert_eq!(steps, d.modules);
        assert!(d.address.starts_with(&d.module), "{} outside {}", d.address, d.module);
        for intent in ["delete", "stop", "resize"] {
            let change = svc_iac::change::for_intent(d, intent, None);
            assert!(!change.summary.is_empty());
        }
    }
    let index = Index::build(&[&state], &Everything);
    let report = svc_iac::drift::report(&index, &Everything, 16);
    assert!(report.gone.len() <= 16 && report.changed.len() <= 16 && report.unmanaged.len() <= 16);
    for e in &index.entries {
        if let Some(crn) = &e.crn {
            let _ = svc_iac::drift::report_one(&index, &Everything, crn);
        }
    }
});
