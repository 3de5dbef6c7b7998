//! The estate in a provider plugin's wire form: each node's CRN, JSON
//! properties and cost, and each edge's CRNs and relation string, written
//! as the estate is generated ([`super::generate_wire`]) rather
//! than through engine batches and back.
//!
//! A node's properties are written in the order they are generated, one
//! document straight through: `state` (the state an earlier action left
//! the resource in, else its own) and `created_at` first, then its own,
//! then `tags` (in key order, as the unit keeps them) and
//! `creation_timestamp` (Unix seconds). Each kind of resource writes its
//! keys in one order, as a plugin serialising a struct does; the daemon's
//! decoder learns that order and puts the entries in key order itself,
//! so the document is neither buffered nor sorted here. It holds the
//! properties `serde_json` reads from the graph's form of the node
//! (`wire_node` in the mock plugin), in another key order.

use std::ops::Range;
use std::sync::Arc;

use svc_engine::props::PropWriter;
use svc_engine::{Interner, Sym};

/// Where the wire form of the estate goes: a provider plugin's messages.
pub trait WireOut {
    /// A resource of the estate: told for every node generated, before its
    /// [`WireOut::effect`] is asked, whether it is then written or not.
    fn generated(&mut self, crn: &str);
    /// The state an earlier action left the resource `crn` in, if any;
    /// `deleted` leaves it (and its edges) out.
    fn effect(&self, crn: &str) -> Option<&str>;
    /// A node: CRN (graph form), JSON properties, monthly cost in USD.
    fn node(&mut self, crn: &str, properties: &[u8], cost: f64);
    /// An edge between two written nodes, with the provider's relation string.
    fn edge(&mut self, source: &str, target: &str, relation: &str);
}

/// Every interned string as a JSON string (followed by [`PAD`] bytes, see
/// [`put`]) with its length, by symbol index.
pub(crate) struct Names(Vec<(Box<[u8]>, usize)>);

impl Names {
    /// The interner must hold every key and tag symbol the estate writes.
    pub(crate) fn new(interner: &Interner) -> Names {
        Names(
            interner
                .strings_from(0)
                .iter()
                .map(|s| {
                    let mut q = Vec::with_capacity(s.len() + 2 + PAD);
                    write_str(&mut q, s);
                    let len = q.len();
                    q.extend_from_slice(&[0; PAD]);
                    (q.into_boxed_slice(), len)
                })
                .collect(),
        )
    }

    /// Appends `sym` as a JSON string to `out`.
    // Inlined, as the writers below are: they run for every key and tag of
    // every node, and as calls they cost the generator 2-4% (docs/perf-log.md, plugin
    // row's notes, nineteenth round).
    #[inline(always)]
    fn put_quoted(&self, out: &mut Vec<u8>, sym: Sym) {
        match self.0.get(sym.index()) {
            Some((q, len)) => put(out, q, 0..*len),
            None => out.extend_from_slice(b"\"\""),
        }
    }
}

/// Where the estate's node properties are written: an engine batch's
/// property writer, or a JSON document for the wire.
pub(crate) enum W<'a, 'b> {
    Engine(&'a mut PropWriter<'b>),
    Json(&'a Names, &'a mut Vec<u8>),
}

impl W<'_, '_> {
    pub fn null(&mut self, key: Sym) {
        match self {
            W::Engine(w) => w.null(key),
            W::Json(names, doc) => entry(names, doc, key, |t| t.extend_from_slice(b"null")),
        }
    }
    pub fn bool(&mut self, key: Sym, v: bool) {
        match self {
            W::Engine(w) => w.bool(key, v),
            W::Json(names, doc) => entry(names, doc, key, |t| {
                t.extend_from_slice(if v { b"true" } else { b"false" })
            }),
        }
    }
    #[inline(always)]
    pub fn int(&mut self, key: Sym, v: i64) {
        match self {
            W::Engine(w) => w.int(key, v),
            W::Json(names, doc) => entry(names, doc, key, |t| write_json(t, &v)),
        }
    }
    pub fn float(&mut self, key: Sym, v: f64) {
        match self {
            W::Engine(w) => w.float(key, v),
            W::Json(names, doc) => entry(names, doc, key, |t| write_json(t, &v)),
        }
    }
    #[inline(always)]
    pub fn str(&mut self, key: Sym, v: &str) {
        match self {
            W::Engine(w) => w.str(key, v),
            W::Json(names, doc) => entry(names, doc, key, |t| write_str(t, v)),
        }
    }
    /// An array or object given as JSON text.
    pub fn json(&mut self, key: Sym, v: &str) {
        match self {
            W::Engine(w) => w.json(key, v),
            W::Json(names, doc) => entry(names, doc, key, |t| {
                match serde_json::from_str::<serde_json::Value>(v) {
                    Ok(value) => write_json(t, &value),
                    Err(_) => write_str(t, v),
                }
            }),
        }
    }
}

/// Appends `"key":value` to an object being written (`{` and the entries
/// so far), after a comma unless it is the first.
#[inline(always)]
fn entry(names: &Names, doc: &mut Vec<u8>, key: Sym, value: impl FnOnce(&mut Vec<u8>)) {
    if doc.len() > 1 {
        doc.push(b',');
    }
    names.put_quoted(doc, key);
    doc.push(b':');
    value(doc);
}

/// Bytes readable past the end of a text [`put`] copies from.
const PAD: usize = 32;

/// Appends `src[range]` to `out`. Most pieces of a document (a key, a
/// short value) are under [`PAD`] bytes: with that much text after them in
/// `src`, they are copied as [`PAD`] bytes and cut back, a fixed-size copy
/// done in place rather than a call to `memcpy` for a few bytes.
#[inline(always)]
fn put(out: &mut Vec<u8>, src: &[u8], range: Range<usize>) {
    let len = range.len();
    if len <= PAD
        && let Some(wide) = src.get(range.start..range.start + PAD)
    {
        out.extend_from_slice(wide);
        out.truncate(out.len() - (PAD - len));
    } else {
        out.extend_from_slice(src.get(range).unwrap_or_default());
    }
}

/// A generating thread's wire state: names and reused buffers.
pub(crate) struct Json {
    names: Arc<Names>,
    /// The node being written: its CRN, effective state and document.
    pub(crate) crn: String,
    pub(crate) state: String,
    pub(crate) doc: Vec<u8>,
}

impl Json {
    pub(crate) fn new(names: Arc<Names>) -> Json {
        Json {
            names,
            crn: String::with_capacity(128),
            state: String::new(),
            doc: Vec::with_capacity(512),
        }
    }

    /// Starts a node's document; its properties are written through the
    /// writer returned, in order.
    pub(crate) fn start(&mut self) -> W<'_, '_> {
        self.doc.clear();
        self.doc.push(b'{');
        W::Json(&self.names, &mut self.doc)
    }

    /// Ends the document started by [`Json::start`] with the node's `tags`
    /// and `creation_timestamp`.
    pub(crate) fn finish(&mut self, tags: &[(Sym, Sym)], creation_ts: u64) {
        let Json { names, doc, .. } = self;
        if doc.len() > 1 {
            doc.push(b',');
        }
        doc.extend_from_slice(b"\"tags\":{");
        for (i, (k, v)) in tags.iter().enumerate() {
            if i > 0 {
                doc.push(b',');
            }
            names.put_quoted(doc, *k);
            doc.push(b':');
            names.put_quoted(doc, *v);
        }
        doc.extend_from_slice(b"},\"creation_timestamp\":");
        write_json(doc, &creation_ts);
        doc.push(b'}');
    }
}

/// A JSON string as `serde_json` writes it: text without quotes,
/// backslashes or control characters is copied as it is.
#[inline(always)]
fn write_str(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s.as_bytes()) {
        write_json(out, s);
        return;
    }
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

/// Whether `b` holds a quote, a backslash or a control character: the
/// bytes that end the decoder's runs of plain string content.
fn needs_escape(b: &[u8]) -> bool {
    svc_ingest::decode::plain_run(b) < b.len()
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing into a Vec cannot fail, and these types always serialize.
    let _ = serde_json::to_writer(&mut *out, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The word-at-a-time check agrees with a byte loop.
        #[test]
        fn escapes_are_found_as_a_byte_loop_finds_them(b in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            let naive = b.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\');
            proptest::prop_assert_eq!(needs_escape(&b), naive);
        }
    }

    /// Short or long, with room after it or at the very end of `src`, a
    /// range is appended as it is and nothing else.
    #[test]
    fn put_appends_exactly_the_range() {
        let src: Vec<u8> = (1..=100).collect();
        for start in 0..=src.len() {
            for end in start..=src.len() {
                let mut out = b"ab".to_vec();
                put(&mut out, &src, start..end);
                assert_eq!(&out[..2], b"ab");
                assert_eq!(&out[2..], &src[start..end], "{start}..{end}");
            }
        }
    }

    #[test]
    fn each_special_byte_is_found_wherever_it_is() {
        for len in 1..20 {
            for at in 0..len {
                for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    let mut b = vec![b'a'; len];
                    b[at] = special;
                    assert!(needs_escape(&b), "{b:?}");
                }
                let mut plain = vec![b'a'; len];
                plain[at] = 0x80;
                assert!(!needs_escape(&plain), "{plain:?}");
            }
        }
    }
}
