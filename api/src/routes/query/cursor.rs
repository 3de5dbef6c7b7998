//! Page cursors: opaque base64url text standing for where the last page ended.

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use serde::{Deserialize, Deserializer};
use svc_engine::NodeId;
use utoipa::openapi::{RefOr, Schema};

use super::{ParamValue, own};

/// Base64url without padding: the text of every graph cursor.
fn encode_cursor(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn graph_cursor_error(raw: &str) -> String {
    format!("invalid cursor {raw:?}: take next_cursor from a previous response")
}

fn decode_graph_cursor(raw: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD.decode(raw.trim()).map_err(|_| graph_cursor_error(raw))
}

/// A node page cursor: the last node's id (8 bytes, big-endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeCursor(pub NodeId);

impl NodeCursor {
    pub fn encode(id: NodeId) -> String {
        encode_cursor(&id.to_raw().to_be_bytes())
    }

    /// Reads a cursor as the query parameter does.
    #[cfg(test)]
    pub(crate) fn parse_text(raw: &str) -> Result<NodeCursor, String> {
        <NodeCursor as ParamValue>::parse(raw)
    }
}

impl ParamValue for NodeCursor {
    fn parse(raw: &str) -> Result<Self, String> {
        let bytes: [u8; 8] = decode_graph_cursor(raw)?
            .try_into()
            .map_err(|_| graph_cursor_error(raw))?;
        Ok(NodeCursor(NodeId::from_raw(u64::from_be_bytes(bytes))))
    }
}

/// A time-travel page cursor: the last CRN listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrnCursor(pub String);

impl CrnCursor {
    pub fn encode(crn: &str) -> String {
        encode_cursor(crn.as_bytes())
    }
}

impl ParamValue for CrnCursor {
    fn parse(raw: &str) -> Result<Self, String> {
        String::from_utf8(decode_graph_cursor(raw)?)
            .map(CrnCursor)
            .map_err(|_| graph_cursor_error(raw))
    }
}

/// History cursors are written without padding and read with or without it.
const HISTORY_CURSOR: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A history page cursor: the base64url text of the seq of the last event returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryCursor(pub u64);

impl HistoryCursor {
    pub fn encode(seq: u64) -> String {
        HISTORY_CURSOR.encode(seq.to_string())
    }
}

impl ParamValue for HistoryCursor {
    fn parse(raw: &str) -> Result<Self, String> {
        HISTORY_CURSOR
            .decode(raw)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|text| text.parse::<u64>().ok())
            .filter(|seq| *seq > 0)
            .map(HistoryCursor)
            .ok_or_else(|| format!("invalid cursor {raw:?}: pass next_cursor of a previous response unchanged"))
    }
}

/// Cursors are opaque strings in the document, of the base64url text each
/// is written in.
impl utoipa::PartialSchema for NodeCursor {
    fn schema() -> RefOr<Schema> {
        crate::wire::input::cursor(crate::wire::input::NODE_CURSOR_PATTERN)
    }
}

impl utoipa::PartialSchema for CrnCursor {
    fn schema() -> RefOr<Schema> {
        crate::wire::input::cursor(crate::wire::input::BASE64URL_PATTERN)
    }
}

impl utoipa::PartialSchema for HistoryCursor {
    fn schema() -> RefOr<Schema> {
        crate::wire::input::cursor(crate::wire::input::HISTORY_CURSOR_PATTERN)
    }
}

deserialize_via_parse!(NodeCursor, CrnCursor, HistoryCursor);
super::to_schema!(NodeCursor, CrnCursor, HistoryCursor);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_cursors_round_trip_and_reject_garbage() {
        let id = NodeId::new(17, 4242, 3);
        assert_eq!(NodeCursor::parse(&NodeCursor::encode(id)), Ok(NodeCursor(id)));
        for bad in ["!!", "AAAA", "not a cursor"] {
            assert!(NodeCursor::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn history_cursors_round_trip_and_reject_garbage() {
        for seq in [1, 100, u64::MAX] {
            assert_eq!(
                HistoryCursor::parse(&HistoryCursor::encode(seq)),
                Ok(HistoryCursor(seq))
            );
        }
        assert_eq!(HistoryCursor::parse("MTAw"), Ok(HistoryCursor(100)));
        assert_eq!(HistoryCursor::parse("MTA"), Ok(HistoryCursor(10)));
        assert_eq!(HistoryCursor::parse("MTA="), Ok(HistoryCursor(10)));
        for bad in ["!!", "MA", "YWJj", "-1", "%%%"] {
            assert!(HistoryCursor::parse(bad).is_err(), "{bad}");
        }
    }
}
