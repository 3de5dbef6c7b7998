//! A borrowed view of a `svc.provider.v1.ScanResponse` as it came off the
//! wire: its nodes and edges read field by field from the message bytes,
//! strings and properties borrowed, instead of decoded into owned prost
//! messages (two or three allocations and copies per node or edge).
//!
//! It accepts exactly what prost accepts, and reads it the same way:
//! fields in any order, repeated `nodes` and `edges` kept in wire order
//! (prost keeps each list in order; a response's nodes and edges land in
//! separate batches, so their interleaving does not matter), the last of a
//! repeated scalar winning, unknown fields skipped (groups included, nested
//! no deeper than prost's recursion limit), strings checked for UTF-8.
//! What prost refuses (truncated input, an overlong varint, field number 0,
//! wire types 6 and 7, a known field with the wrong wire type, a string
//! that is not UTF-8, an unmatched group end) is a [`WireError`]. The
//! strings a view hands on as bytes (CRNs, relations) are checked for
//! UTF-8 by the decoder as it reads them: most are vouched for without a
//! pass of their own.

use thiserror::Error;

/// prost's nesting limit (`DecodeContext`'s recursion limit).
const RECURSION_LIMIT: u32 = 100;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

/// A `Node` of the response, borrowing from the message bytes. Its CRN is
/// the bytes sent: the decoder takes a CRN whose fixed segments it has met
/// in a CRN that parsed, and whose id is printable ASCII, as the text it
/// is; any other it checks for UTF-8 before parsing it, and fails the
/// message with [`WireError::Utf8`] if it is not, as for any other string
/// field.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct NodeView<'a> {
    pub crn: &'a [u8],
    pub properties: &'a [u8],
    pub cost: f64,
}

/// An `Edge` of the response, borrowing from the message bytes. Its CRNs
/// and relation are the bytes sent: the decoder checks that they are UTF-8
/// only when it has not seen the same bytes before (an endpoint is named
/// about four times in a batch, a relation string thousands of times) and
/// cannot vouch for a CRN as for a node's, and fails the message with
/// [`WireError::Utf8`] if not, as for any other string field.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EdgeView<'a> {
    pub source_crn: &'a [u8],
    pub target_crn: &'a [u8],
    pub relation: &'a [u8],
}

/// A node's string field `field` as text, or the error for it.
pub(super) fn node_str(bytes: &[u8], field: u32) -> Result<&str, WireError> {
    std::str::from_utf8(bytes).map_err(|_| WireError::Utf8 { message: NODE, field })
}

/// An edge's string field `field` as text, or the error for it.
pub(super) fn edge_str(bytes: &[u8], field: u32) -> Result<&str, WireError> {
    std::str::from_utf8(bytes).map_err(|_| WireError::Utf8 { message: EDGE, field })
}

/// One entry of a response's `nodes` or `edges`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Item<'a> {
    Node(NodeView<'a>),
    Edge(EdgeView<'a>),
}

impl<'a> From<&'a svc_proto::provider::v1::Node> for NodeView<'a> {
    fn from(n: &'a svc_proto::provider::v1::Node) -> NodeView<'a> {
        NodeView {
            crn: n.crn.as_bytes(),
            properties: &n.properties,
            cost: n.cost,
        }
    }
}

impl<'a> From<&'a svc_proto::provider::v1::Edge> for EdgeView<'a> {
    fn from(e: &'a svc_proto::provider::v1::Edge) -> EdgeView<'a> {
        EdgeView {
            source_crn: e.source_crn.as_bytes(),
            target_crn: e.target_crn.as_bytes(),
            relation: e.relation.as_bytes(),
        }
    }
}

/// Why the bytes are not a `ScanResponse`.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("truncated at byte {at}")]
    Truncated { at: usize },
    #[error("invalid varint at byte {at}")]
    Varint { at: usize },
    #[error("invalid field key {key} at byte {at}")]
    Key { key: u64, at: usize },
    #[error("field {field} of {message} has wire type {found}, expected {expected}")]
    WireType {
        message: &'static str,
        field: u32,
        found: u8,
        expected: u8,
    },
    #[error("field {field} of {message} is not valid UTF-8")]
    Utf8 { message: &'static str, field: u32 },
    #[error("unexpected end of group {field} at byte {at}")]
    EndGroup { field: u32, at: usize },
    #[error("length of {message} at byte {at} runs past its end")]
    Length { message: &'static str, at: usize },
    #[error("groups nested deeper than {RECURSION_LIMIT}")]
    TooDeep,
}

/// A cursor over message bytes; positions are offsets into `b`.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.pos >= self.b.len()
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, WireError> {
        // Keys and most lengths of a scan response take one byte.
        if let Some(&byte) = self.b.get(self.pos)
            && byte < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(byte));
        }
        self.long_varint()
    }

    fn long_varint(&mut self) -> Result<u64, WireError> {
        let at = self.pos;
        let mut value = 0u64;
        for i in 0..10 {
            let byte = *self.b.get(self.pos).ok_or(WireError::Truncated { at: self.pos })?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                // The tenth byte holds only the top bit of a u64.
                if i == 9 && byte >= 0x02 {
                    return Err(WireError::Varint { at });
                }
                return Ok(value);
            }
        }
        Err(WireError::Varint { at })
    }

    /// A field key: its number and wire type.
    fn key(&mut self) -> Result<(u32, u8), WireError> {
        let at = self.pos;
        let key = self.varint()?;
        let wire = (key & 7) as u8;
        if key > u64::from(u32::MAX) || key >> 3 == 0 || wire > FIXED32 {
            return Err(WireError::Key { key, at });
        }
        Ok(((key >> 3) as u32, wire))
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8], WireError> {
        let at = self.pos;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| at.checked_add(len))
            .filter(|end| *end <= self.b.len())
            .ok_or(WireError::Truncated { at })?;
        self.pos = end;
        Ok(&self.b[at..end])
    }

    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let len = self.varint()?;
        self.take(len)
    }

    fn fixed64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(b);
        Ok(u64::from_le_bytes(word))
    }

    /// Skips the value of an unknown field, as prost's `skip_field` does.
    fn skip(&mut self, field: u32, wire: u8, depth: u32) -> Result<(), WireError> {
        if depth == 0 {
            return Err(WireError::TooDeep);
        }
        match wire {
            VARINT => self.varint().map(drop),
            FIXED64 => self.take(8).map(drop),
            LEN => self.bytes().map(drop),
            FIXED32 => self.take(4).map(drop),
            START_GROUP => loop {
                let at = self.pos;
                let (inner, inner_wire) = self.key()?;
                if inner_wire == END_GROUP {
                    if inner != field {
                        return Err(WireError::EndGroup { field: inner, at });
                    }
                    return Ok(());
                }
                self.skip(inner, inner_wire, depth - 1)?;
            },
            _ => Err(WireError::EndGroup { field, at: self.pos }),
        }
    }

    /// A length-delimited submessage, as a reader of its own bytes.
    fn message(&mut self, name: &'static str) -> Result<Reader<'a>, WireError> {
        let at = self.pos;
        let b = self.bytes().map_err(|e| match e {
            WireError::Truncated { .. } => WireError::Length { message: name, at },
            other => other,
        })?;
        Ok(Reader { b, pos: 0 })
    }
}

fn expect(message: &'static str, field: u32, found: u8, expected: u8) -> Result<(), WireError> {
    if found == expected {
        Ok(())
    } else {
        Err(WireError::WireType {
            message,
            field,
            found,
            expected,
        })
    }
}

pub(super) const NODE: &str = "svc.provider.v1.Node";

fn node<'a>(mut r: Reader<'a>) -> Result<NodeView<'a>, WireError> {
    let mut n = NodeView {
        crn: &[],
        properties: &[],
        cost: 0.0,
    };
    while !r.done() {
        let (field, wire) = r.key()?;
        match field {
            1 => {
                expect(NODE, field, wire, LEN)?;
                // Of a repeated field the last value counts; the ones it
                // replaces are checked here, the last by the decoder.
                if !n.crn.is_empty() {
                    node_str(n.crn, field)?;
                }
                n.crn = r.bytes()?;
            }
            2 => {
                expect(NODE, field, wire, LEN)?;
                n.properties = r.bytes()?;
            }
            3 => {
                expect(NODE, field, wire, FIXED64)?;
                n.cost = f64::from_bits(r.fixed64()?);
            }
            _ => r.skip(field, wire, RECURSION_LIMIT - 1)?,
        }
    }
    Ok(n)
}

pub(super) const EDGE: &str = "svc.provider.v1.Edge";

fn edge<'a>(mut r: Reader<'a>) -> Result<EdgeView<'a>, WireError> {
    let mut e = EdgeView {
        source_crn: &[],
        target_crn: &[],
        relation: &[],
    };
    while !r.done() {
        let (field, wire) = r.key()?;
        match field {
            1..=3 => {
                expect(EDGE, field, wire, LEN)?;
                let text = match field {
                    1 => &mut e.source_crn,
                    2 => &mut e.target_crn,
                    _ => &mut e.relation,
                };
                // Of a repeated field the last value counts; the ones it
                // replaces are checked here, the last by the decoder.
                if !text.is_empty() {
                    edge_str(text, field)?;
                }
                *text = r.bytes()?;
            }
            _ => r.skip(field, wire, RECURSION_LIMIT - 1)?,
        }
    }
    Ok(e)
}

/// The nodes and edges of the `ScanResponse` in `bytes`, in wire order;
/// an `Err` ends the iteration.
pub fn items(bytes: &[u8]) -> Items<'_> {
    Items {
        r: Reader { b: bytes, pos: 0 },
        failed: false,
    }
}

/// Iterator returned by [`items`].
pub struct Items<'a> {
    r: Reader<'a>,
    failed: bool,
}

impl<'a> Items<'a> {
    fn step(&mut self) -> Option<Result<Item<'a>, WireError>> {
        const NAME: &str = "svc.provider.v1.ScanResponse";
        while !self.r.done() {
            let item = self.r.key().and_then(|(field, wire)| match field {
                1 => {
                    expect(NAME, field, wire, LEN)?;
                    node(self.r.message(NODE)?).map(|n| Some(Item::Node(n)))
                }
                2 => {
                    expect(NAME, field, wire, LEN)?;
                    edge(self.r.message("svc.provider.v1.Edge")?).map(|e| Some(Item::Edge(e)))
                }
                _ => self.r.skip(field, wire, RECURSION_LIMIT).map(|()| None),
            });
            match item {
                Ok(None) => continue,
                Ok(Some(item)) => return Some(Ok(item)),
                Err(e) => return Some(Err(e)),
            }
        }
        None
    }
}

impl<'a> Iterator for Items<'a> {
    type Item = Result<Item<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.step();
        self.failed = matches!(next, Some(Err(_)));
        next
    }
}

#[cfg(test)]
mod tests;
