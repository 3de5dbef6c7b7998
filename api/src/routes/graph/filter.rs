//! The node filters of `GET /api/v1/graph/nodes` and `GET /api/v1/nodes`:
//! provider, type, state, waste, a tag, and a search over the CRN and the
//! tags. Names are resolved to symbols once per request, so a node is
//! matched by comparing integers; only the search reads strings.

use rustc_hash::FxHashMap;
use svc_engine::Graph;
use svc_engine::Sym;
use svc_engine::graph::NodeRef;
use svc_engine::intern::InternerReader;

/// What a request asked for, as it came (trimmed; empty means unset).
#[derive(Debug, Default, Clone)]
pub struct NodeFilter {
    pub provider: Option<String>,
    pub ty: Option<String>,
    pub state: Option<String>,
    pub waste: Option<bool>,
    /// `key` (the tag is set) or `key=value`.
    pub tag: Option<String>,
    /// Case-insensitive substring of the CRN or of a tag's `key=value`.
    pub search: Option<String>,
}

fn given(s: Option<String>) -> Option<String> {
    s.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

impl NodeFilter {
    pub fn new(
        provider: Option<String>,
        ty: Option<String>,
        state: Option<String>,
        waste: Option<bool>,
        tag: Option<String>,
        search: Option<String>,
    ) -> NodeFilter {
        NodeFilter {
            provider: given(provider),
            ty: given(ty),
            state: given(state),
            waste,
            tag: given(tag),
            search: given(search).map(|s| s.to_lowercase()),
        }
    }

    /// The filter with its names resolved against `g`'s interner; `None`
    /// when a name the graph never saw makes it match nothing.
    pub fn resolve(&self, g: &Graph) -> Option<Resolved> {
        let sym = |name: &Option<String>| -> Option<Option<Sym>> {
            match name {
                Some(n) => g.interner().get(n).map(Some),
                None => Some(None),
            }
        };
        let tag = match self.tag.as_deref() {
            None => None,
            Some(t) => {
                let (key, value) = match t.split_once('=') {
                    Some((k, v)) => (k, Some(v)),
                    None => (t, None),
                };
                let key = g.interner().get(key.trim())?;
                let value = match value {
                    Some(v) => Some(g.interner().get(v.trim())?),
                    None => None,
                };
                Some((key, value))
            }
        };
        Some(Resolved {
            provider: sym(&self.provider)?,
            ty: sym(&self.ty)?,
            state: sym(&self.state)?,
            waste: self.waste,
            tag,
            search: self.search.clone(),
        })
    }
}

/// A [`NodeFilter`] ready to match nodes of one graph.
pub struct Resolved {
    provider: Option<Sym>,
    ty: Option<Sym>,
    state: Option<Sym>,
    waste: Option<bool>,
    tag: Option<(Sym, Option<Sym>)>,
    search: Option<String>,
}

impl Resolved {
    /// Whether `n` passes every filter; `buf` is scratch space for the search.
    pub fn matches(&self, n: &NodeRef<'_>, r: &InternerReader<'_>, buf: &mut String) -> bool {
        if self.provider.is_some_and(|p| n.provider() != p)
            || self.ty.is_some_and(|t| n.ty() != t)
            || self.state.is_some_and(|s| n.state() != s)
            || self.waste.is_some_and(|w| n.is_waste() != w)
        {
            return false;
        }
        if let Some((key, value)) = self.tag {
            match n.tags().get(key) {
                None => return false,
                Some(v) if value.is_some_and(|want| want != v) => return false,
                Some(_) => {}
            }
        }
        let Some(needle) = &self.search else { return true };
        write_crn(buf, n, r);
        if contains_folded(buf, needle) {
            return true;
        }
        n.tags().any(|(key, value)| {
            buf.clear();
            buf.push_str(r.resolve(key));
            buf.push('=');
            buf.push_str(r.resolve(value));
            contains_folded(buf, needle)
        })
    }
}

/// The terminal UI's filter (`filter=` of `GET /api/v1/nodes`): terms
/// separated by spaces, all of which must hold. `key:value` matches the
/// start of a column (`state`, `type`, `provider`, `region`, `phase`,
/// `reach`), `waste:yes|no` the verdict; any other word is a substring of
/// the CRN, type, state, region or waste reason. Case is ignored.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Terms {
    fields: Vec<(Column, String)>,
    waste: Option<bool>,
    words: Vec<String>,
}

/// A column a `key:value` term names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Column {
    State,
    Type,
    Provider,
    Region,
    Phase,
    Reach,
}

impl Terms {
    /// The terms of `text`; a `waste:` term that is not yes or no is an error.
    pub fn parse(text: &str) -> Result<Terms, String> {
        let mut t = Terms::default();
        for term in text.split_whitespace() {
            let lower = term.to_lowercase();
            let Some((key, value)) = lower.split_once(':') else {
                t.words.push(lower);
                continue;
            };
            let column = match key {
                "state" => Column::State,
                "type" => Column::Type,
                "provider" => Column::Provider,
                "region" => Column::Region,
                "phase" => Column::Phase,
                "reach" => Column::Reach,
                "waste" => {
                    t.waste = Some(match value {
                        "yes" | "y" | "true" | "1" => true,
                        "no" | "n" | "false" | "0" => false,
                        _ => return Err(format!("filter term {term:?}: waste takes yes or no")),
                    });
                    continue;
                }
                // A CRN or a type has colons of its own: a word.
                _ => {
                    t.words.push(lower);
                    continue;
                }
            };
            t.fields.push((column, value.to_owned()));
        }
        Ok(t)
    }

    /// A matcher over one graph's nodes; it remembers its answer for each
    /// symbol, so a column is read as text once per distinct value.
    pub fn matcher(&self) -> TermsMatcher<'_> {
        TermsMatcher {
            terms: self,
            fields: FxHashMap::default(),
            words: FxHashMap::default(),
            buf: String::new(),
        }
    }
}

/// [`Terms`] at work over one graph.
pub struct TermsMatcher<'t> {
    terms: &'t Terms,
    /// Whether a symbol starts with a field term's value, per term.
    fields: FxHashMap<(usize, Sym), bool>,
    /// Whether a symbol contains a word, per word.
    words: FxHashMap<(usize, Sym), bool>,
    buf: String,
}

impl TermsMatcher<'_> {
    pub fn matches(&mut self, n: &NodeRef<'_>, r: &InternerReader<'_>) -> bool {
        let terms = self.terms;
        if terms.waste.is_some_and(|w| n.is_waste() != w) {
            return false;
        }
        for (i, (column, value)) in terms.fields.iter().enumerate() {
            let hit = match column {
                Column::Phase => n.phase().name().starts_with(value.as_str()),
                Column::Reach => n.reachability().name().starts_with(value.as_str()),
                _ => {
                    let sym = match column {
                        Column::State => n.state(),
                        Column::Type => n.ty(),
                        Column::Provider => n.provider(),
                        _ => n.region(),
                    };
                    *self
                        .fields
                        .entry((i, sym))
                        .or_insert_with(|| starts_with_folded(r.resolve(sym), value))
                }
            };
            if !hit {
                return false;
            }
        }
        for (i, word) in terms.words.iter().enumerate() {
            let mut in_sym = |sym: Sym| {
                *self
                    .words
                    .entry((i, sym))
                    .or_insert_with(|| contains_folded(r.resolve(sym), word))
            };
            if in_sym(n.ty()) || in_sym(n.state()) || in_sym(n.region()) {
                continue;
            }
            if contains_folded(n.waste_reason(), word) {
                continue;
            }
            write_crn(&mut self.buf, n, r);
            if !contains_folded(&self.buf, word) {
                return false;
            }
        }
        true
    }
}

/// `n`'s CRN, written into `buf` in place of what it held.
fn write_crn(buf: &mut String, n: &NodeRef<'_>, r: &InternerReader<'_>) {
    buf.clear();
    let k = n.key();
    svc_engine::crn::write_crn(
        buf,
        [
            r.resolve(k[0]),
            r.resolve(k[1]),
            r.resolve(k[2]),
            r.resolve(k[3]),
            r.resolve(k[4]),
            n.physical_id(),
        ],
    );
}

/// Whether `hay` starts with `prefix` (already lower case), ignoring case.
fn starts_with_folded(hay: &str, prefix: &str) -> bool {
    if hay.is_ascii() {
        return hay.len() >= prefix.len() && hay.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes());
    }
    hay.to_lowercase().starts_with(prefix)
}

/// Whether `hay` contains `needle` (already lower case), ignoring ASCII case.
fn contains_folded(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.len() > h.len() {
        return false;
    }
    if hay.is_ascii() && needle.is_ascii() {
        return h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    }
    hay.to_lowercase().contains(needle)
}

#[cfg(test)]
mod tests {
    use super::Terms;

    #[test]
    fn terms_parse_fields_words_and_the_verdict() {
        let t = Terms::parse("  State:avail  vol-9 waste:YES crn:svc:aws ").unwrap();
        assert_eq!(t.words, vec!["vol-9".to_owned(), "crn:svc:aws".to_owned()]);
        assert_eq!(t.fields, vec![(super::Column::State, "avail".to_owned())]);
        assert_eq!(t.waste, Some(true));
        assert_eq!(Terms::parse("").unwrap(), Terms::default());
        let err = Terms::parse("waste:maybe").unwrap_err();
        assert!(err.contains("waste takes yes or no"), "{err}");
        assert!(super::starts_with_folded("Available", "avail"));
        assert!(!super::starts_with_folded("in-use", "avail"));
        assert!(super::starts_with_folded("Ünïcode", "ünï"));
    }

    #[test]
    fn search_ignores_case() {
        assert!(super::contains_folded(
            "crn:svc:aws:us-east-1:ec2:volume:1:vol-0ABC",
            "vol-0abc"
        ));
        assert!(!super::contains_folded("crn:svc:aws", "gcp"));
        assert!(super::contains_folded("Ünïcode=Wert", "wert"));
        assert!(!super::contains_folded("ab", "abc"));
    }
}
