//! How a provider ends a `Scan` that succeeded without listing all of its
//! estate: an OK status whose trailer ([`SCAN_UNLISTED_TRAILER`]) names
//! the parts not listed, so the daemon keeps their resources as they were
//! and still retires, elsewhere, what the scan did not report.

use serde_json::{Map, Value};
use svc_proto::provider::SCAN_UNLISTED_TRAILER;
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::{Code, Status};

/// The trailer's budget: HTTP/2 clients refuse a header block of 16 KiB
/// and more, and binary metadata travels base64 (4/3 larger).
const TRAILER_BYTES: usize = 9 * 1024;
/// What is kept of an error when the parts would not fit otherwise.
const SHORT_ERROR: usize = 120;

/// A part of the estate a scan could not list; each field set narrows it
/// (`None` spans every value).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnlistedPart {
    /// CRN provider segment; `None`: every provider the plugin reports.
    pub provider: Option<String>,
    pub account: Option<String>,
    pub region: Option<String>,
    /// CRN service segment (`rds`, `ec2`, ...).
    pub service: Option<String>,
    /// Why it could not be listed.
    pub error: String,
}

fn encode(parts: &[UnlistedPart], error_chars: usize) -> Vec<u8> {
    let list: Vec<Value> = parts
        .iter()
        .map(|p| {
            let mut o = Map::new();
            for (k, v) in [
                ("provider", &p.provider),
                ("account", &p.account),
                ("region", &p.region),
                ("service", &p.service),
            ] {
                if let Some(v) = v {
                    o.insert(k.into(), v.as_str().into());
                }
            }
            let error: String = p.error.chars().take(error_chars).collect();
            o.insert("error".into(), error.into());
            Value::Object(o)
        })
        .collect();
    Value::Array(list).to_string().into_bytes()
}

/// The final status of a scan that listed all but `parts`: send it as the
/// stream's last item (`Err(status)`; its code is OK). `None` when even
/// with shortened errors the parts do not fit a trailer: the scan must
/// then end with an error status, so nothing is retired.
pub fn scan_end_unlisted(parts: &[UnlistedPart]) -> Option<Status> {
    let mut json = encode(parts, usize::MAX);
    if json.len() > TRAILER_BYTES {
        json = encode(parts, SHORT_ERROR);
    }
    if json.len() > TRAILER_BYTES {
        return None;
    }
    let mut metadata = MetadataMap::new();
    metadata.insert_bin(SCAN_UNLISTED_TRAILER, MetadataValue::from_bytes(&json));
    let message = format!("{} parts of the estate were not listed", parts.len());
    Some(Status::with_metadata(Code::Ok, message, metadata))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_travel_in_the_trailer_and_oversized_lists_are_refused() {
        let part = |region: &str, error: &str| UnlistedPart {
            region: Some(region.into()),
            error: error.into(),
            ..UnlistedPart::default()
        };
        let status = scan_end_unlisted(&[part("eu-west-1", "connection refused")]).unwrap();
        assert_eq!(status.code(), Code::Ok);
        let bytes = status
            .metadata()
            .get_bin(SCAN_UNLISTED_TRAILER)
            .unwrap()
            .to_bytes()
            .unwrap();
        assert_eq!(&bytes[..], br#"[{"error":"connection refused","region":"eu-west-1"}]"#);
        // Long errors are shortened to fit; too many parts do not.
        let long = "x".repeat(5000);
        let shortened = scan_end_unlisted(&[part("a", &long), part("b", &long)]).unwrap();
        let bytes = shortened
            .metadata()
            .get_bin(SCAN_UNLISTED_TRAILER)
            .unwrap()
            .to_bytes()
            .unwrap();
        assert!(
            bytes.len() < TRAILER_BYTES && bytes.len() > 2 * SHORT_ERROR,
            "{}",
            bytes.len()
        );
        let many: Vec<_> = (0..200).map(|i| part(&format!("region-{i}"), &long)).collect();
        assert!(scan_end_unlisted(&many).is_none());
    }
}
