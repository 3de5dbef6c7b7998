//! The estate in a provider plugin's wire form: each node's CRN, JSON
//! properties and cost, and each edge's CRNs and relation string, written
//! as the estate is generated ([`super::generate_wire`]) rather
//! than through engine batches and back.
//!
//! A node's properties are its generated properties (`state` and
//! `created_at` first), then `state` again (the state an earlier action
//! left it in, else its own), `tags` and `creation_timestamp` (Unix
//! seconds); the document is what `serde_json` writes for that map: keys
//! sorted, the last of a repeated key winning. Nodes of a type mostly share
//! their keys, so each key sequence's order is worked out once
//! ([`Shapes`]).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use rustc_hash::FxBuildHasher;
use svc_engine::props::PropWriter;
use svc_engine::{Interner, Sym};

/// Where the wire form of the estate goes: a provider plugin's messages.
pub trait WireOut {
    /// The state an earlier action left the resource `crn` in, if any;
    /// `deleted` leaves it (and its edges) out.
    fn effect(&self, crn: &str) -> Option<&str>;
    /// A node: CRN (graph form), JSON properties, monthly cost in USD.
    fn node(&mut self, crn: &str, properties: &[u8], cost: f64);
    /// An edge between two written nodes, with the provider's relation string.
    fn edge(&mut self, source: &str, target: &str, relation: &str);
}

/// Every interned string, and as a JSON string (followed by [`PAD`]
/// bytes, see [`put`]) with its length, by symbol index.
pub(crate) struct Names(Vec<(Box<str>, Box<[u8]>, usize)>);

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
                    (Box::from(&**s), q.into_boxed_slice(), len)
                })
                .collect(),
        )
    }

    fn name(&self, sym: Sym) -> &str {
        self.0.get(sym.index()).map_or("", |(n, _, _)| n)
    }

    /// Appends `sym` as a JSON string to `out`.
    fn put_quoted(&self, out: &mut Vec<u8>, sym: Sym) {
        match self.0.get(sym.index()) {
            Some((_, q, len)) => put(out, q, 0..*len),
            None => out.extend_from_slice(b"\"\""),
        }
    }
}

/// Where the estate's node properties are written: an engine batch's
/// property writer, or JSON text for the wire.
pub(crate) enum W<'a, 'b> {
    Engine(&'a mut PropWriter<'b>),
    Json(&'a mut JsonProps),
}

impl W<'_, '_> {
    pub fn null(&mut self, key: Sym) {
        match self {
            W::Engine(w) => w.null(key),
            W::Json(j) => j.push(key, |t| t.extend_from_slice(b"null")),
        }
    }
    pub fn bool(&mut self, key: Sym, v: bool) {
        match self {
            W::Engine(w) => w.bool(key, v),
            W::Json(j) => j.push(key, |t| t.extend_from_slice(if v { b"true" } else { b"false" })),
        }
    }
    pub fn int(&mut self, key: Sym, v: i64) {
        match self {
            W::Engine(w) => w.int(key, v),
            W::Json(j) => j.push(key, |t| write_json(t, &v)),
        }
    }
    pub fn float(&mut self, key: Sym, v: f64) {
        match self {
            W::Engine(w) => w.float(key, v),
            W::Json(j) => j.push(key, |t| write_json(t, &v)),
        }
    }
    pub fn str(&mut self, key: Sym, v: &str) {
        match self {
            W::Engine(w) => w.str(key, v),
            W::Json(j) => j.push(key, |t| write_str(t, v)),
        }
    }
    /// An array or object given as JSON text.
    pub fn json(&mut self, key: Sym, v: &str) {
        match self {
            W::Engine(w) => w.json(key, v),
            W::Json(j) => j.push(key, |t| match serde_json::from_str::<serde_json::Value>(v) {
                Ok(value) => write_json(t, &value),
                Err(_) => write_str(t, v),
            }),
        }
    }
}

/// One node's properties as JSON values, in the order written.
#[derive(Default)]
pub(crate) struct JsonProps {
    keys: Vec<Sym>,
    /// Where each value ends in `text`.
    ends: Vec<usize>,
    text: Vec<u8>,
}

impl JsonProps {
    fn clear(&mut self) {
        self.keys.clear();
        self.ends.clear();
        self.text.clear();
    }

    fn push(&mut self, key: Sym, value: impl FnOnce(&mut Vec<u8>)) {
        value(&mut self.text);
        self.keys.push(key);
        self.ends.push(self.text.len());
    }

    /// Where value `i` is in `text`.
    fn value(&self, i: usize) -> Range<usize> {
        let start = if i == 0 {
            0
        } else {
            self.ends.get(i - 1).copied().unwrap_or(0)
        };
        start..self.ends.get(i).copied().unwrap_or(start)
    }
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

/// The keys every node's properties have besides its own, after them.
const FIXED_KEYS: [&str; 3] = ["state", "tags", "creation_timestamp"];

/// Key sequences remembered before the table starts over.
const SHAPES: usize = 4096;

/// How one key sequence is written: which entries, in what order, each
/// after its rendered key.
#[derive(Default)]
struct Shape {
    /// Entry index and the range of `text` to write before its value.
    order: Vec<(usize, Range<usize>)>,
    /// `"key":` of each written entry, the ones after the first with a
    /// leading comma.
    text: Vec<u8>,
}

impl Shape {
    /// `keys` by entry index, then `fixed`, sorted by name; of equal names
    /// the last entry wins.
    fn new(keys: &[Sym], names: &Names, fixed: &[&str]) -> Shape {
        let mut sorted: Vec<(usize, &str)> = keys
            .iter()
            .map(|k| names.name(*k))
            .chain(fixed.iter().copied())
            .enumerate()
            .collect();
        // Stable, so of equal keys the one written last stays last.
        sorted.sort_by(|a, b| a.1.cmp(b.1));
        let mut shape = Shape::default();
        for (i, (entry, name)) in sorted.iter().enumerate() {
            if sorted.get(i + 1).is_some_and(|next| next.1 == *name) {
                continue;
            }
            let start = shape.text.len();
            if !shape.order.is_empty() {
                shape.text.push(b',');
            }
            write_str(&mut shape.text, name);
            shape.text.push(b':');
            shape.order.push((*entry, start..shape.text.len()));
        }
        shape.text.extend_from_slice(&[0; PAD]);
        shape
    }
}

/// The shapes of the key sequences seen so far. The sequence last asked
/// for under a hint (the node type; for tags, a mix of their keys) is
/// compared first: a type's nodes mostly share their keys.
#[derive(Default)]
struct Shapes {
    index: HashMap<Box<[Sym]>, usize, FxBuildHasher>,
    shapes: Vec<Shape>,
    last: HashMap<u64, (Vec<Sym>, usize), FxBuildHasher>,
}

impl Shapes {
    fn get(&mut self, hint: u64, keys: &[Sym], names: &Names, fixed: &[&str]) -> &Shape {
        let at = match self.last.get(&hint) {
            Some((last, at)) if last.as_slice() == keys && *at < self.shapes.len() => *at,
            _ => {
                let at = match self.index.get(keys) {
                    Some(&at) => at,
                    None => {
                        if self.shapes.len() >= SHAPES {
                            self.index.clear();
                            self.shapes.clear();
                            self.last.clear();
                        }
                        self.shapes.push(Shape::new(keys, names, fixed));
                        self.index.insert(keys.into(), self.shapes.len() - 1);
                        self.shapes.len() - 1
                    }
                };
                let last = self.last.entry(hint).or_default();
                last.0.clear();
                last.0.extend_from_slice(keys);
                last.1 = at;
                at
            }
        };
        static NONE: Shape = Shape {
            order: Vec::new(),
            text: Vec::new(),
        };
        self.shapes.get(at).unwrap_or(&NONE)
    }
}

/// A generating thread's wire state: names, shapes and reused buffers.
pub(crate) struct Json {
    names: Arc<Names>,
    pub(crate) props: JsonProps,
    shapes: Shapes,
    tag_shapes: Shapes,
    tag_keys: Vec<Sym>,
    /// The node being written: its CRN, effective state and document.
    pub(crate) crn: String,
    pub(crate) state: String,
    pub(crate) doc: Vec<u8>,
}

impl Json {
    pub(crate) fn new(names: Arc<Names>) -> Json {
        Json {
            names,
            props: JsonProps::default(),
            shapes: Shapes::default(),
            tag_shapes: Shapes::default(),
            tag_keys: Vec::new(),
            crn: String::with_capacity(128),
            state: String::new(),
            doc: Vec::with_capacity(512),
        }
    }

    /// Starts a node's properties.
    pub(crate) fn start(&mut self) -> W<'_, '_> {
        self.props.clear();
        W::Json(&mut self.props)
    }

    /// Writes the document of the properties written since [`Json::start`]
    /// for a node of type `ty`, with `state` (in `self.state`), `tags` and
    /// `creation_timestamp`.
    pub(crate) fn finish(&mut self, ty: Sym, tags: &[(Sym, Sym)], creation_ts: u64) {
        let Json {
            names,
            props,
            shapes,
            tag_shapes,
            tag_keys,
            state,
            doc,
            ..
        } = self;
        let own = props.keys.len();
        let shape = shapes.get(u64::from(ty.to_raw()), &props.keys, names, &FIXED_KEYS);
        props.text.extend_from_slice(&[0; PAD]);
        doc.clear();
        doc.push(b'{');
        for (entry, key) in &shape.order {
            put(doc, &shape.text, key.clone());
            match entry.checked_sub(own) {
                None => put(doc, &props.text, props.value(*entry)),
                Some(0) => write_str(doc, state),
                Some(1) => {
                    tag_keys.clear();
                    tag_keys.extend(tags.iter().map(|(k, _)| *k));
                    let hint = tag_keys
                        .iter()
                        .fold(0u64, |h, k| h.rotate_left(7) ^ u64::from(k.to_raw()));
                    let tag_shape = tag_shapes.get(hint, tag_keys, names, &[]);
                    doc.push(b'{');
                    for (i, key) in &tag_shape.order {
                        put(doc, &tag_shape.text, key.clone());
                        if let Some((_, v)) = tags.get(*i) {
                            names.put_quoted(doc, *v);
                        }
                    }
                    doc.push(b'}');
                }
                Some(_) => write_json(doc, &creation_ts),
            }
        }
        doc.push(b'}');
    }
}

/// A [`Json`] lent out of a shared list of spares, and put back when
/// dropped: a writer works out the key orders of the documents it writes
/// once, and the next pieces of work reuse them instead of starting over.
pub(crate) struct Lent<'a> {
    /// Held from `new` until `drop` takes it back.
    json: Option<Json>,
    home: &'a Mutex<Vec<Json>>,
}

impl<'a> Lent<'a> {
    /// A spare from `home`, or `make()` when there is none.
    pub(crate) fn new(home: &'a Mutex<Vec<Json>>, make: impl FnOnce() -> Json) -> Lent<'a> {
        let json = home.lock().ok().and_then(|mut spares| spares.pop());
        Lent {
            json: Some(json.unwrap_or_else(make)),
            home,
        }
    }

    pub(crate) fn get(&mut self) -> &mut Json {
        self.json.as_mut().expect("a lent writer is held until dropped")
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let (Some(json), Ok(mut spares)) = (self.json.take(), self.home.lock()) {
            spares.push(json);
        }
    }
}

/// A JSON string as `serde_json` writes it: text without quotes,
/// backslashes or control characters is copied as it is.
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
    crate::decode::json::plain_run(b) < b.len()
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
