//! A whole session with `svc-plugin-mock` as the daemon runs it: handshake
//! line, health, Handshake, Scan, safety check, remediation, quarantine,
//! shutdown.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use common::*;
use svc_proto::plugin::Empty;
use svc_proto::provider::v1::{HandshakeRequest, QuarantineRequest, RemediateRequest, ReversibilityRequest};

fn remediate(crn: &str, action: &str, dry_run: bool) -> RemediateRequest {
    RemediateRequest {
        crn: crn.into(),
        action: action.into(),
        properties: HashMap::new(),
        dry_run,
    }
}

#[tokio::test]
async fn unix_session_scan_remediate_quarantine_and_shutdown() {
    let (mut p, h, mut c) = started(&[]).await;
    assert_eq!(h.network, "unix");
    let sock = Path::new(&h.addr).to_owned();
    assert!(sock.exists());

    assert!(is_serving(&mut c.health, "plugin").await);
    assert!(is_serving(&mut c.health, "").await);

    let hs = c
        .provider
        .handshake(HandshakeRequest {
            daemon_version: "0.1.0".into(),
        })
        .await
        .expect("handshake")
        .into_inner();
    assert!(hs.compatible, "{}", hs.message);
    assert_eq!(hs.plugin_version, env!("CARGO_PKG_VERSION"));
    let hs = c
        .provider
        .handshake(HandshakeRequest {
            daemon_version: "2.0.0".into(),
        })
        .await
        .expect("handshake")
        .into_inner();
    assert!(!hs.compatible);

    let responses = scan_all(&mut c.provider, &[("scale", "300"), ("batch_size", "64")]).await;
    assert!(responses.len() > 4, "nodes are chunked: {}", responses.len());
    let nodes: Vec<_> = responses.iter().flat_map(|r| &r.nodes).collect();
    let edges: Vec<_> = responses.iter().flat_map(|r| &r.edges).collect();
    assert!(responses.iter().all(|r| r.nodes.len() <= 64));
    assert!(
        (270..=330).contains(&nodes.len()),
        "about 300 nodes, got {}",
        nodes.len()
    );
    let mut crns = HashSet::new();
    for n in &nodes {
        svc_engine::Crn::parse(&n.crn).unwrap_or_else(|e| panic!("{e}"));
        assert!(crns.insert(n.crn.clone()), "duplicate {}", n.crn);
        let props: serde_json::Value = serde_json::from_slice(&n.properties).expect("properties are JSON");
        assert!(props.is_object());
        assert!(props["state"].is_string() && props["tags"].is_object());
        assert!(props["creation_timestamp"].as_u64().is_some_and(|t| t > 1_000_000_000));
        assert!(n.cost.is_finite() && n.cost >= 0.0);
    }
    assert!(!edges.is_empty());
    for e in &edges {
        assert!(crns.contains(&e.source_crn) && crns.contains(&e.target_crn), "{e:?}");
        assert!(!e.relation.is_empty());
    }

    // The same scan again is byte-identical; the next epoch differs a little.
    let again = scan_all(&mut c.provider, &[("scale", "300"), ("batch_size", "64")]).await;
    assert_eq!(again, responses);

    let crn = nodes[0].crn.clone();
    let proof = c
        .provider
        .check_reversibility(ReversibilityRequest {
            crn: crn.clone(),
            properties: HashMap::new(),
        })
        .await
        .expect("reversibility")
        .into_inner();
    assert!(proof.safe, "{}", proof.reason);
    let proof = c
        .provider
        .check_reversibility(ReversibilityRequest {
            crn: crn.clone(),
            properties: [("deletion_protection".to_owned(), "true".to_owned())].into(),
        })
        .await
        .expect("reversibility")
        .into_inner();
    assert!(!proof.safe);
    assert_eq!(proof.reason, "deletion protection is enabled");
    let proof = c
        .provider
        .check_reversibility(ReversibilityRequest {
            crn: "crn:svc:aws:us-east-1:ec2:volume:000000000000:vol-nope".into(),
            properties: HashMap::new(),
        })
        .await
        .expect("reversibility")
        .into_inner();
    assert_eq!((proof.safe, proof.reason.as_str()), (false, "unknown resource"));

    let r = c
        .remediator
        .remediate(remediate(&crn, "stop", true))
        .await
        .expect("rpc")
        .into_inner();
    assert!(r.success && r.error.is_empty(), "{r:?}");
    assert!(r.snapshot.is_empty(), "dry run takes no snapshot");
    let r = c
        .remediator
        .remediate(remediate(&crn, "stop", false))
        .await
        .expect("rpc")
        .into_inner();
    assert!(r.success, "{r:?}");
    assert_eq!(r.status, "stopped");
    assert!(
        r.snapshot.get("snapshot_id").is_some_and(|s| s.starts_with("snap-")),
        "{r:?}"
    );
    let r = c
        .remediator
        .remediate(remediate(&crn, "delete", false))
        .await
        .expect("rpc")
        .into_inner();
    assert_eq!((r.success, r.status.as_str()), (true, "deleted"));
    let r = c
        .remediator
        .remediate(remediate(&crn, "stop", true))
        .await
        .expect("rpc")
        .into_inner();
    assert!(!r.success && r.error.contains("deleted"), "{r:?}");
    let r = c
        .remediator
        .remediate(remediate(&crn, "explode", false))
        .await
        .expect("rpc")
        .into_inner();
    assert!(!r.success && r.error.contains("unknown action \"explode\""), "{r:?}");
    let r = c
        .remediator
        .remediate(remediate(
            "crn:svc:aws:us-east-1:ec2:volume:000000000000:vol-nope",
            "stop",
            false,
        ))
        .await
        .expect("rpc")
        .into_inner();
    assert!(!r.success && r.error.contains("unknown resource"), "{r:?}");

    let other = nodes[1].crn.clone();
    let q = c
        .provider
        .apply_quarantine(QuarantineRequest {
            crn: other.clone(),
            action: "ISOLATE".into(),
            reason: "idle for 30 days".into(),
        })
        .await
        .expect("rpc")
        .into_inner();
    assert!(q.success, "{q:?}");
    assert!(q.message.contains("isolated"));
    let q = c
        .provider
        .apply_quarantine(QuarantineRequest {
            crn: other,
            action: "SHRED".into(),
            reason: String::new(),
        })
        .await
        .expect("rpc")
        .into_inner();
    assert!(!q.success && q.message.contains("unknown quarantine action"), "{q:?}");

    // Actions show in the next scan: the deleted resource is gone, the
    // isolated one reports its new state.
    let rescan = scan_all(&mut c.provider, &[("scale", "300"), ("batch_size", "64")]).await;
    let after: HashMap<String, serde_json::Value> = rescan
        .iter()
        .flat_map(|r| &r.nodes)
        .map(|n| (n.crn.clone(), serde_json::from_slice(&n.properties).expect("JSON")))
        .collect();
    assert!(!after.contains_key(&crn));
    assert_eq!(after.len(), nodes.len() - 1);
    assert_eq!(after[&nodes[1].crn]["state"], "isolated");
    assert!(
        rescan
            .iter()
            .flat_map(|r| &r.edges)
            .all(|e| e.source_crn != crn && e.target_crn != crn)
    );

    // Shutdown: the reply may be lost with the connection; the process exits 0.
    let _ = c.controller.shutdown(Empty {}).await;
    assert_eq!(p.exit_code().await, Some(0));
    assert!(!sock.exists(), "socket removed");
    assert!(sock.parent().is_some_and(|d| !d.exists()), "socket directory removed");
}

#[tokio::test]
async fn tcp_transport_in_port_range() {
    let (mut p, h, mut c) = started(&[
        ("SVC_PLUGIN_TRANSPORT", "tcp"),
        ("PLUGIN_MIN_PORT", "20000"),
        ("PLUGIN_MAX_PORT", "40000"),
    ])
    .await;
    assert_eq!(h.network, "tcp");
    let addr: std::net::SocketAddr = h.addr.parse().expect("host:port");
    assert!(addr.ip().is_loopback());
    assert!((20000..=40000).contains(&addr.port()), "{addr}");
    assert!(is_serving(&mut c.health, "plugin").await);
    let responses = scan_all(&mut c.provider, &[("scale", "100")]).await;
    assert!(responses.iter().map(|r| r.nodes.len()).sum::<usize>() > 50);
    let _ = c.controller.shutdown(Empty {}).await;
    assert_eq!(p.exit_code().await, Some(0));
}

#[tokio::test]
async fn scan_epochs_follow_scan_seq() {
    let (mut p, _h, mut c) = started(&[]).await;
    let crns = |rs: &[svc_proto::provider::v1::ScanResponse]| -> HashSet<String> {
        rs.iter().flat_map(|r| &r.nodes).map(|n| n.crn.clone()).collect()
    };
    let first = crns(&scan_all(&mut c.provider, &[("scan_seq", "1")]).await);
    let fifth = crns(&scan_all(&mut c.provider, &[("scan_seq", "5")]).await);
    assert_ne!(first, fifth, "the estate changes between epochs");
    assert!(
        first.intersection(&fifth).count() > first.len() * 8 / 10,
        "but only a little"
    );
    let err = c
        .provider
        .scan(scan_request(&[("scale", "lots")]))
        .await
        .expect_err("bad config is rejected");
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    let _ = c.controller.shutdown(svc_proto::plugin::Empty {}).await;
    assert_eq!(p.exit_code().await, Some(0));
}
