//! Binary encodings of stored node and edge versions.
//!
//! Little-endian, length-prefixed ([`crate::bytes`]), versioned by a
//! leading byte. Decoding never panics: a truncated or foreign value is an
//! error naming what broke.

use svc_graph::graph::schema::{Bytes, F32, Flag, Key, MaybeSymbol, Reach, Rel, Stage, Symbol, Text, U64};
use svc_graph::graph::{EdgeFields, EdgeVersion, NodeFields, NodeRow};
use svc_graph::props;
use svc_graph::relation::Relation;

pub use crate::bytes::DecodeError;
use crate::bytes::{Reader, Writer};
use crate::kinds::Stored;

/// Format 1: tag and property blobs in the fixed-width layout
/// ([`svc_graph::props::v1`]), rewritten as they are read.
const NODE_V1: u8 = 1;
/// Format 2: the blobs in the varint layout ([`svc_graph::props`]).
const NODE_V2: u8 = 2;

/// The node value's encoder and decoder, from the schema.
macro_rules! node_codec {
    (
        identity { $($(#[$idoc:meta])* $ifield:ident / $icol:ident : $ikind:ident = $iname:literal,)* }
        fields { $($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)* }
    ) => {
        /// How many bytes [`encode_fields_into`] appends for `f`.
        pub fn encoded_fields_len(f: &NodeFields<'_>) -> usize {
            1 $(+ $ikind::len(f.$ifield))* $(+ $kind::len(f.$field))*
        }

        /// A node version's stored value: the version byte, then every
        /// field of the schema in order, appended to `out`.
        pub fn encode_fields_into(f: &NodeFields<'_>, out: &mut Vec<u8>) {
            let mut w = Writer::new(out);
            w.u8(NODE_V2);
            $($ikind::write(&mut w, f.$ifield);)*
            $($kind::write(&mut w, f.$field);)*
        }

        pub fn decode_node(buf: &[u8]) -> Result<NodeRow, DecodeError> {
            let mut r = Reader::new(buf);
            let version = r.u8("version")?;
            if version != NODE_V1 && version != NODE_V2 {
                return Err(DecodeError("unknown node encoding version"));
            }
            let mut row = NodeRow {
                $($ifield: $ikind::read(&mut r, $iname)?,)*
                $($field: $kind::read(&mut r, $name)?,)*
            };
            if version == NODE_V1 {
                row.tags = props::v1::tags(&row.tags);
                row.props = props::v1::props(&row.props);
            }
            Ok(row)
        }
    };
}

svc_graph::node_schema!(node_codec);

#[cfg(test)]
pub fn encode_node(n: &NodeRow) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_node_len(n));
    encode_node_into(n, &mut out);
    out
}

/// How many bytes [`encode_node_into`] appends for `n`.
pub fn encoded_node_len(n: &NodeRow) -> usize {
    encoded_fields_len(&NodeFields::of(n))
}

/// [`encode_node`], appended to `out`.
pub fn encode_node_into(n: &NodeRow, out: &mut Vec<u8>) {
    encode_fields_into(&NodeFields::of(n), out);
}

/// The key of an edge in the edge tables: source, relation and target.
pub fn edge_key(e: &EdgeVersion) -> String {
    format!("{}\u{1}{}\u{1}{}", e.src, e.relation as u8, e.dst)
}

/// [`edge_key`]'s bytes, appended to `out`.
pub fn edge_key_into(e: &EdgeVersion, out: &mut Vec<u8>) {
    out.extend_from_slice(e.src.as_bytes());
    relation_key_into(e.relation, out);
    out.extend_from_slice(e.dst.as_bytes());
}

/// The part of an edge key between its endpoints: the relation's number in
/// decimal between two 1 bytes.
pub fn relation_key_into(relation: Relation, out: &mut Vec<u8>) {
    let n = relation as u8;
    out.push(1);
    if n >= 100 {
        out.push(b'0' + n / 100);
    }
    if n >= 10 {
        out.push(b'0' + n / 10 % 10);
    }
    out.push(b'0' + n % 10);
    out.push(1);
}

/// Format 1 (the version byte 2): the property blob in the fixed-width layout.
const EDGE_KEYED_V1: u8 = 2;
/// Format 2 (the version byte 3): the blob in the varint layout.
const EDGE_KEYED_V2: u8 = 3;

/// The edge value's encoder and decoder, from the schema.
macro_rules! edge_codec {
    ($($(#[$doc:meta])* $field:ident / $col:ident : $kind:ident = $name:literal,)*) => {
        /// How many bytes [`encode_edge_fields_into`] appends for `f`.
        pub fn encoded_edge_fields_len(f: &EdgeFields<'_>) -> usize {
            1 $(+ $kind::len(f.$field))*
        }

        /// An edge's stored value, without its endpoints, which its key
        /// ([`edge_key`]) carries: the version byte, then every field of
        /// the schema in order, appended to `out`.
        pub fn encode_edge_fields_into(f: &EdgeFields<'_>, out: &mut Vec<u8>) {
            let mut w = Writer::new(out);
            w.u8(EDGE_KEYED_V2);
            $($kind::write(&mut w, f.$field);)*
        }

        /// Rebuilds an edge from its key and [`encode_edge_fields_into`] bytes.
        pub fn decode_edge_keyed(key: &[u8], value: &[u8]) -> Result<EdgeVersion, DecodeError> {
            let key = std::str::from_utf8(key).map_err(|_| DecodeError("edge key"))?;
            let mut parts = key.splitn(3, '\u{1}');
            let (Some(src), Some(_), Some(dst)) = (parts.next(), parts.next(), parts.next()) else {
                return Err(DecodeError("edge key"));
            };
            let mut r = Reader::new(value);
            let version = r.u8("version")?;
            if version != EDGE_KEYED_V1 && version != EDGE_KEYED_V2 {
                return Err(DecodeError("unknown edge encoding version"));
            }
            let mut edge = EdgeVersion {
                src: src.to_owned(),
                dst: dst.to_owned(),
                $($field: $kind::read(&mut r, $name)?,)*
            };
            if version == EDGE_KEYED_V1 {
                edge.props = props::v1::props(&edge.props);
            }
            Ok(edge)
        }
    };
}

svc_graph::edge_schema!(edge_codec);

/// An edge's stored value ([`encode_edge_fields_into`]).
#[cfg(test)]
pub fn encode_edge_value(e: &EdgeVersion) -> Vec<u8> {
    let mut out = Vec::new();
    encode_edge_value_into(e, &mut out);
    out
}

/// How many bytes [`encode_edge_value_into`] appends for `e`.
pub fn encoded_edge_value_len(e: &EdgeVersion) -> usize {
    encoded_edge_fields_len(&EdgeFields::of(e))
}

/// [`encode_edge_value`], appended to `out`.
pub fn encode_edge_value_into(e: &EdgeVersion, out: &mut Vec<u8>) {
    encode_edge_fields_into(&EdgeFields::of(e), out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_graph::graph::{Phase, Reachability};
    use svc_graph::ids::Sym;

    fn sym(raw: u32) -> Sym {
        Sym::from_raw(raw).unwrap()
    }

    /// The stored layouts, spelled out byte by byte.
    #[test]
    fn node_and_edge_values_keep_their_layout() {
        let n = NodeRow {
            key: [sym(1), sym(2), sym(3), sym(4), sym(0x0102_0304)],
            id: "vol-é".into(),
            ty: sym(6),
            state: sym(7),
            cost_usd_mo: 1.5,
            creation_ts: 0x0102_0304_0506_0708,
            valid_from: 9,
            valid_to: u64::MAX,
            is_waste: true,
            waste_reason: "idle".into(),
            risk_score: -2.0,
            reachability: Reachability::from_u8(1),
            phase: Phase::from_u8(2),
            verdict: None,
            tags: vec![0xff],
            props: Vec::new(),
        };
        let want: Vec<u8> = [
            &[2u8, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 4, 3, 2, 1][..],
            &[6, 0, 0, 0, b'v', b'o', b'l', b'-', 0xc3, 0xa9],
            &[6, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0xc0, 0x3f],
            &[
                8, 7, 6, 5, 4, 3, 2, 1, 9, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255,
            ],
            &[1, 4, 0, 0, 0, b'i', b'd', b'l', b'e', 0, 0, 0, 0xc0, 1, 2, 0, 0, 0, 0],
            &[1, 0, 0, 0, 0xff, 0, 0, 0, 0],
        ]
        .concat();
        assert_eq!(encode_node(&n), want);
        assert_eq!(encoded_node_len(&n), want.len());
        assert_eq!(decode_node(&want).unwrap(), n);

        let e = EdgeVersion {
            src: "a".into(),
            dst: "b".into(),
            relation: Relation::ALL[3],
            inferred: true,
            valid_from: 5,
            valid_to: 0x0100,
            props: vec![7, 8],
        };
        let want = [
            3u8, 3, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 7, 8,
        ];
        assert_eq!(encode_edge_value(&e), want);
        assert_eq!(encoded_edge_value_len(&e), want.len());
        assert_eq!(decode_edge_keyed(b"a\x013\x01b", &want).unwrap(), e);
    }

    /// Versions stored in format 1 read with their blobs in the current layout.
    #[test]
    fn format_1_versions_read_with_their_blobs_rewritten() {
        let (k, v) = (sym(5), sym(300));
        let old_tags = (u64::from(k.to_raw()) | u64::from(v.to_raw()) << 32).to_le_bytes();
        let old_props = [&[5u8, 0, 0, 0, 5, 2, 0, 0, 0][..], b"hi"].concat();
        let mut want_tags = Vec::new();
        props::write_tag(&mut want_tags, k, v);
        let mut want_props = Vec::new();
        props::PropWriter::new(&mut want_props).str(k, "hi");

        let mut node = vec![NODE_V1];
        node.extend(std::iter::repeat_n(1u8, 20));
        node.extend_from_slice(&[0, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0xc0, 0x3f]);
        node.extend_from_slice(&[0; 24]);
        // Waste flag, reason, risk, reachability, phase, verdict.
        node.extend_from_slice(&[0; 15]);
        for blob in [&old_tags[..], &old_props] {
            node.extend_from_slice(&(blob.len() as u32).to_le_bytes());
            node.extend_from_slice(blob);
        }
        let row = decode_node(&node).unwrap();
        assert_eq!((row.tags, row.props), (want_tags, want_props.clone()));

        let mut edge = vec![EDGE_KEYED_V1, 3, 0];
        edge.extend_from_slice(&[0; 16]);
        edge.extend_from_slice(&(old_props.len() as u32).to_le_bytes());
        edge.extend_from_slice(&old_props);
        assert_eq!(decode_edge_keyed(b"a\x013\x01b", &edge).unwrap().props, want_props);
    }

    #[test]
    fn a_relation_key_is_its_number_in_decimal_as_stored_before() {
        for r in Relation::ALL {
            let mut key = Vec::new();
            relation_key_into(r, &mut key);
            assert_eq!(key, [&[1u8][..], (r as u8).to_string().as_bytes(), &[1]].concat());
        }
    }
}
