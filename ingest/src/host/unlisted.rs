//! The [`SCAN_UNLISTED_TRAILER`] a provider ends a partly listed scan
//! with: which parts of its estate it could not list.

use serde::Deserialize;
use svc_engine::scan::Unlisted;
use svc_proto::provider::SCAN_UNLISTED_TRAILER;
use tonic::metadata::MetadataMap;

/// More parts than this is not a scan that mostly succeeded.
pub const MAX_UNLISTED: usize = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Part {
    provider: Option<String>,
    account: Option<String>,
    region: Option<String>,
    service: Option<String>,
    error: String,
}

/// The parts the trailers name (none without the trailer), or why the
/// trailer is unusable (then the scan counts as failed: nothing is retired
/// on a view the daemon cannot tell the extent of).
pub fn from_trailers(trailers: Option<&MetadataMap>) -> Result<Vec<Unlisted>, String> {
    let Some(value) = trailers.and_then(|t| t.get_bin(SCAN_UNLISTED_TRAILER)) else {
        return Ok(Vec::new());
    };
    let bytes = value
        .to_bytes()
        .map_err(|e| format!("its {SCAN_UNLISTED_TRAILER} trailer is not base64: {e}"))?;
    let parts: Vec<Part> = serde_json::from_slice(&bytes)
        .map_err(|e| format!("its {SCAN_UNLISTED_TRAILER} trailer is not a JSON list of parts: {e}"))?;
    if parts.len() > MAX_UNLISTED {
        return Err(format!(
            "its {SCAN_UNLISTED_TRAILER} trailer names {} parts not listed (at most {MAX_UNLISTED})",
            parts.len()
        ));
    }
    let named = |v: Option<String>, what: &str| match v {
        Some(s) if s.is_empty() => Err(format!("its {SCAN_UNLISTED_TRAILER} trailer has an empty {what}")),
        v => Ok(v),
    };
    parts
        .into_iter()
        .map(|p| {
            Ok(Unlisted {
                provider: named(p.provider, "provider")?,
                account: named(p.account, "account")?,
                region: named(p.region, "region")?,
                service: named(p.service, "service")?,
                error: p.error,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::metadata::MetadataValue;

    fn trailers(json: &[u8]) -> MetadataMap {
        let mut m = MetadataMap::new();
        m.insert_bin(SCAN_UNLISTED_TRAILER, MetadataValue::from_bytes(json));
        m
    }

    #[test]
    fn parts_are_read_and_bad_trailers_refused() {
        assert_eq!(from_trailers(None), Ok(Vec::new()));
        assert_eq!(from_trailers(Some(&MetadataMap::new())), Ok(Vec::new()));
        let t = trailers(
            br#"[{"region":"eu-west-1","error":"refused"},{"region":"us-east-1","service":"rds","error":"5xx"}]"#,
        );
        let got = from_trailers(Some(&t)).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].region.as_deref(), Some("eu-west-1"));
        assert_eq!((got[1].service.as_deref(), got[1].error.as_str()), (Some("rds"), "5xx"));
        for (bad, why) in [
            (&br#"{"region":"x"}"#[..], "not a JSON list"),
            (br#"[{"region":"x"}]"#, "not a JSON list"),
            (br#"[{"region":"","error":"e"}]"#, "empty region"),
            (br#"[{"zone":"a","error":"e"}]"#, "not a JSON list"),
        ] {
            let e = from_trailers(Some(&trailers(bad))).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let many = format!("[{}]", vec![r#"{"error":"e"}"#; MAX_UNLISTED + 1].join(","));
        assert!(
            from_trailers(Some(&trailers(many.as_bytes())))
                .unwrap_err()
                .contains("at most")
        );
    }
}
