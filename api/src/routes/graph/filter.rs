//! The node filters of `GET /api/v1/graph/nodes` and `GET /api/v1/nodes`:
//! provider, type, state, waste, a tag, and a search over the CRN and the
//! tags. Names are resolved to symbols once per request, so a node is
//! matched by comparing integers; only the search reads strings.

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
