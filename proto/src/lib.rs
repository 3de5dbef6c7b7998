//! svc-proto: the gRPC protocols between the daemon and its plugins.
//!
//! - [`provider::v1`]: provider plugins (`Provider`, `Remediator`), SPEC 2.5 and 4.6.
//! - [`heuristic::v1`]: heuristic plugins (`HeuristicPlugin`), SPEC 2.6 and 4.7.
//! - [`plugin`]: the subprocess plugin framework's own services
//!   (`GRPCController`, `GRPCStdio`), vendored from go-plugin.
//! - [`health::v1`]: the standard gRPC health service (`grpc.health.v1`).
//!
//! Each module holds the prost messages, a `*_client` module and a `*_server`
//! module per service. The sources are under `proto/`.

/// Provider plugin protocol.
pub mod provider {
    /// The trailer with which a provider ends a `Scan` that succeeded
    /// without listing all of its estate (binary metadata, so any UTF-8
    /// travels): a JSON array of objects with optional string members
    /// `provider`, `account`, `region`, `service` (the CRN segments of the
    /// part not listed; one not given spans every value) and a string
    /// `error`. The daemon keeps that part's resources as they were and
    /// retires, elsewhere, what the scan did not report.
    pub const SCAN_UNLISTED_TRAILER: &str = "svc-scan-unlisted-bin";

    /// Package `svc.provider.v1`.
    #[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::bare_urls)]
    pub mod v1 {
        tonic::include_proto!("svc.provider.v1");
    }
}

/// Heuristic plugin protocol.
pub mod heuristic {
    /// Package `svc.heuristic.v1`.
    #[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::bare_urls)]
    pub mod v1 {
        tonic::include_proto!("svc.heuristic.v1");
    }
}

/// Package `plugin`: the plugin framework's controller and stdio services.
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::bare_urls)]
pub mod plugin {
    tonic::include_proto!("plugin");
}

/// Standard gRPC health checking.
pub mod health {
    /// Package `grpc.health.v1`.
    #[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::bare_urls)]
    pub mod v1 {
        tonic::include_proto!("grpc.health.v1");
    }
}

#[cfg(test)]
mod tests {
    //! Field numbers and wire types are the contract with plugins written in
    //! other languages, so each message is decoded from hand-written bytes.

    use super::*;
    use prost::Message;
    use std::collections::HashMap;

    const VARINT: u32 = 0;
    const FIXED64: u32 = 1;
    const LEN: u32 = 2;

    fn key(field: u32, wire: u32, out: &mut Vec<u8>) {
        varint_raw(u64::from((field << 3) | wire), out);
    }

    fn varint_raw(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// Hand-built protobuf encoding, one field at a time.
    #[derive(Default)]
    struct Wire(Vec<u8>);

    impl Wire {
        fn varint(mut self, field: u32, v: u64) -> Self {
            key(field, VARINT, &mut self.0);
            varint_raw(v, &mut self.0);
            self
        }
        fn double(mut self, field: u32, v: f64) -> Self {
            key(field, FIXED64, &mut self.0);
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn bytes(mut self, field: u32, v: &[u8]) -> Self {
            key(field, LEN, &mut self.0);
            varint_raw(v.len() as u64, &mut self.0);
            self.0.extend_from_slice(v);
            self
        }
        fn string(self, field: u32, v: &str) -> Self {
            self.bytes(field, v.as_bytes())
        }
        fn message(self, field: u32, m: Wire) -> Self {
            self.bytes(field, &m.0)
        }
        /// One `map<string, string>` entry.
        fn entry(self, field: u32, k: &str, v: &str) -> Self {
            self.message(field, Wire::default().string(1, k).string(2, v))
        }
    }

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn node_cost_is_field_3_double() {
        let bytes = [0x19, 0, 0, 0, 0, 0, 0, 0x24, 0x40];
        let node = provider::v1::Node::decode(&bytes[..]).expect("decodes");
        assert_eq!(node.cost, 10.0);
        assert_eq!(node.encode_to_vec(), bytes);
    }

    #[test]
    fn scan_response_round_trip_and_field_numbers() {
        let want = provider::v1::ScanResponse {
            nodes: vec![
                provider::v1::Node {
                    crn: "crn:svc:aws:us-east-1:123456789012:volume:vol-1".into(),
                    properties: r#"{"size_gb":100,"name":"données"}"#.as_bytes().to_vec(),
                    cost: 8.5,
                },
                provider::v1::Node::default(),
            ],
            edges: vec![provider::v1::Edge {
                source_crn: "crn:a".into(),
                target_crn: "crn:b".into(),
                relation: "ATTACHED_TO".into(),
            }],
        };
        let encoded = want.encode_to_vec();
        assert_eq!(
            provider::v1::ScanResponse::decode(encoded.as_slice()).expect("decodes"),
            want
        );

        let hand = Wire::default()
            .message(
                1,
                Wire::default()
                    .string(1, "crn:svc:aws:us-east-1:123456789012:volume:vol-1")
                    .string(2, r#"{"size_gb":100,"name":"données"}"#)
                    .double(3, 8.5),
            )
            .message(1, Wire::default())
            .message(
                2,
                Wire::default()
                    .string(1, "crn:a")
                    .string(2, "crn:b")
                    .string(3, "ATTACHED_TO"),
            );
        assert_eq!(hand.0, encoded);
        assert_eq!(
            provider::v1::ScanResponse::decode(hand.0.as_slice()).expect("decodes"),
            want
        );
    }

    #[test]
    fn heuristic_finding_round_trip_and_field_numbers() {
        let want = heuristic::v1::HeuristicFinding {
            crn: "crn:svc:aws:us-east-1:123456789012:volume:vol-1".into(),
            is_waste: true,
            risk_score: 42,
            reason: "unattached for 30 days".into(),
            suggested_action: "delete".into(),
            projected_savings_usd: 12.25,
            annotations: map(&[("idle_days", "30")]),
        };
        let encoded = want.encode_to_vec();
        assert_eq!(
            heuristic::v1::HeuristicFinding::decode(encoded.as_slice()).expect("decodes"),
            want
        );

        let hand = Wire::default()
            .string(1, "crn:svc:aws:us-east-1:123456789012:volume:vol-1")
            .varint(2, 1)
            .varint(3, 42)
            .string(4, "unattached for 30 days")
            .string(5, "delete")
            .double(6, 12.25)
            .entry(7, "idle_days", "30");
        assert_eq!(hand.0, encoded);
    }

    #[test]
    fn provider_messages_field_numbers() {
        use provider::v1::*;

        let m = HandshakeRequest::decode(Wire::default().string(1, "1.2.3").0.as_slice()).unwrap();
        assert_eq!(m.daemon_version, "1.2.3");

        let m = HandshakeResponse::decode(
            Wire::default()
                .varint(1, 1)
                .string(2, "0.4.0")
                .string(3, "ok")
                .0
                .as_slice(),
        )
        .unwrap();
        assert_eq!(
            m,
            HandshakeResponse {
                compatible: true,
                plugin_version: "0.4.0".into(),
                message: "ok".into()
            }
        );

        let m = ScanRequest::decode(
            Wire::default()
                .entry(1, "region", "us-east-1")
                .entry(1, "project", "p-1")
                .0
                .as_slice(),
        )
        .unwrap();
        assert_eq!(m.config, map(&[("region", "us-east-1"), ("project", "p-1")]));

        let m = RemediateRequest::decode(
            Wire::default()
                .string(1, "crn:x")
                .string(2, "stop")
                .entry(3, "region", "eu-west-1")
                .varint(4, 1)
                .0
                .as_slice(),
        )
        .unwrap();
        assert_eq!(
            m,
            RemediateRequest {
                crn: "crn:x".into(),
                action: "stop".into(),
                properties: map(&[("region", "eu-west-1")]),
                dry_run: true
            }
        );

        let m = RemediateResponse::decode(
            Wire::default()
                .varint(1, 1)
                .string(2, "stopped")
                .string(3, "")
                .entry(4, "snapshot_id", "snap-1")
                .0
                .as_slice(),
        )
        .unwrap();
        assert_eq!(
            m,
            RemediateResponse {
                success: true,
                status: "stopped".into(),
                error: String::new(),
                snapshot: map(&[("snapshot_id", "snap-1")])
            }
        );

        let m = QuarantineRequest::decode(
            Wire::default()
                .string(1, "crn:x")
                .string(2, "ISOLATE")
                .string(3, "idle")
                .0
                .as_slice(),
        )
        .unwrap();
        assert_eq!(
            m,
            QuarantineRequest {
                crn: "crn:x".into(),
                action: "ISOLATE".into(),
                reason: "idle".into()
            }
        );

        let m = QuarantineResponse::decode(Wire::default().varint(1, 1).string(2, "done").0.as_slice()).unwrap();
        assert_eq!(
            m,
            QuarantineResponse {
                success: true,
                message: "done".into()
            }
        );

        let m = ReversibilityRequest::decode(
            Wire::default()
                .string(1, "crn:x")
                .entry(2, "action", "delete")
                .0
                .as_slice(),
        )
        .unwrap();
        assert_eq!(
            m,
            ReversibilityRequest {
                crn: "crn:x".into(),
                properties: map(&[("action", "delete")])
            }
        );

        let m = ReversibilityProof::decode(
            Wire::default()
                .varint(1, 1)
                .string(2, "deletion protection is enabled")
                .0
                .as_slice(),
        )
        .unwrap();
        assert_eq!(
            m,
            ReversibilityProof {
                safe: true,
                reason: "deletion protection is enabled".into()
            }
        );

        let m = PreflightRequest::decode(Wire::default().entry(1, "region", "us-east-1").0.as_slice()).unwrap();
        assert_eq!(m.config, map(&[("region", "us-east-1")]));

        let m = PreflightResponse::decode(
            Wire::default()
                .varint(1, 0)
                .string(2, "credentials rejected")
                .string(3, "AWS_ACCESS_KEY_ID")
                .string(3, "ec2:DescribeVolumes")
                .0
                .as_slice(),
        )
        .unwrap();
        assert_eq!(
            m,
            PreflightResponse {
                ok: false,
                message: "credentials rejected".into(),
                missing: strings(&["AWS_ACCESS_KEY_ID", "ec2:DescribeVolumes"])
            }
        );
    }

    #[test]
    fn heuristic_messages_field_numbers() {
        use heuristic::v1::*;

        assert!(MetadataRequest::default().encode_to_vec().is_empty());

        let m = MetadataResponse::decode(
            Wire::default()
                .string(1, "idle-volumes")
                .string(2, "finds unattached volumes")
                .string(3, "1.0.0")
                .string(4, "volume")
                .string(4, "ec2:snapshot")
                .string(5, "attachments")
                .varint(6, 500)
                .0
                .as_slice(),
        )
        .unwrap();
        assert_eq!(
            m,
            MetadataResponse {
                name: "idle-volumes".into(),
                description: "finds unattached volumes".into(),
                version: "1.0.0".into(),
                resource_type_filter: strings(&["volume", "ec2:snapshot"]),
                required_properties: strings(&["attachments"]),
                preferred_batch_size: 500,
            }
        );

        let node = Wire::default()
            .string(1, "crn:x")
            .string(2, "ec2:volume")
            .double(3, 4.0)
            .entry(4, "attachments", "[]");
        let m = NodeBatch::decode(Wire::default().message(1, node).varint(2, 1).0.as_slice()).unwrap();
        assert_eq!(
            m,
            NodeBatch {
                nodes: vec![GraphNode {
                    crn: "crn:x".into(),
                    resource_type: "ec2:volume".into(),
                    cost_usd: 4.0,
                    properties: map(&[("attachments", "[]")]),
                }],
                is_last: true,
            }
        );
    }

    #[test]
    fn plugin_framework_messages_field_numbers() {
        let m = plugin::StdioData::decode(Wire::default().varint(1, 2).bytes(2, b"log line\n").0.as_slice()).unwrap();
        assert_eq!(m.channel(), plugin::stdio_data::Channel::Stderr);
        assert_eq!(m.data, b"log line\n");
        assert!(plugin::Empty {}.encode_to_vec().is_empty());

        let m = health::v1::HealthCheckRequest::decode(Wire::default().string(1, "plugin").0.as_slice()).unwrap();
        assert_eq!(m.service, "plugin");
        let m = health::v1::HealthCheckResponse::decode(Wire::default().varint(1, 1).0.as_slice()).unwrap();
        assert_eq!(m.status(), health::v1::health_check_response::ServingStatus::Serving);
    }

    #[test]
    fn service_names() {
        assert_eq!(provider::v1::provider_server::SERVICE_NAME, "svc.provider.v1.Provider");
        assert_eq!(
            provider::v1::remediator_server::SERVICE_NAME,
            "svc.provider.v1.Remediator"
        );
        assert_eq!(
            heuristic::v1::heuristic_plugin_server::SERVICE_NAME,
            "svc.heuristic.v1.HeuristicPlugin"
        );
        assert_eq!(plugin::grpc_controller_server::SERVICE_NAME, "plugin.GRPCController");
        assert_eq!(plugin::grpc_stdio_server::SERVICE_NAME, "plugin.GRPCStdio");
        assert_eq!(health::v1::health_server::SERVICE_NAME, "grpc.health.v1.Health");
    }
}
