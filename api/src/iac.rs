//! Infrastructure as code as the API serves it: the Terraform states named
//! by `iac.terraform_states` (paths, or `s3://bucket/key` URLs), the git
//! repository named by `iac.repository`, and what they say about the live
//! graph (`svc_iac`).
//!
//! The configuration is read at each request, so a change applies without
//! a restart. A state is fetched again only when it changed: a file's size
//! and modification time, an object's ETag (asked at most every
//! [`RECHECK`]). A state that cannot be fetched or read is reported by name
//! and the others are used. What the states say about the graph (the
//! [`Index`]) and the blame of each declaration are kept with the graph's
//! write count, like the other whole-graph answers (`crate::derived`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use object_store::ObjectStoreExt;
use serde_json::Value;
use svc_engine::Engine;
use svc_engine::crn::Crn;
use svc_engine::graph::Graph;
use svc_iac::code::Repo;
use svc_iac::drift::{Index, Live, LiveNode, Seen};
use svc_iac::state::State;

use crate::wire::{props_json, tags_json};

/// An object's ETag is asked again after this long.
const RECHECK: Duration = Duration::from_secs(5);
/// A state larger than this is refused (Terraform states of very large
/// estates stay well under it).
pub const MAX_STATE_BYTES: u64 = 512 * 1024 * 1024;

/// The `[iac]` settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub states: Vec<String>,
    pub repository: Option<String>,
}

impl Settings {
    /// From the configuration's JSON (`iac.terraform_states`, `iac.repository`).
    pub fn of(config: &Value) -> Settings {
        let iac = &config["iac"];
        Settings {
            states: iac["terraform_states"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            repository: iac["repository"]
                .as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        }
    }
}

/// One configured state as last fetched.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// As configured: a path or an `s3://` URL.
    pub source: String,
    /// The state, or why it could not be had.
    pub state: Result<Arc<State>, String>,
}

/// What a request reads: every configured state and the repository.
pub struct Current {
    /// Changes whenever a state's content or the settings change.
    pub generation: u64,
    pub states: Vec<Loaded>,
    /// The repository, or why it cannot be read; `None` when none is set.
    pub repo: Option<Result<Arc<Repo>, String>>,
    pub settings: Settings,
}

impl Current {
    pub fn configured(&self) -> bool {
        !self.settings.states.is_empty()
    }

    /// The states that could be read, in configured order, with their
    /// positions among all configured states.
    pub fn readable(&self) -> (Vec<&State>, Vec<usize>) {
        self.states
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.state.as_ref().ok().map(|s| (s.as_ref(), i)))
            .unzip()
    }
}

/// How a state's content is recognised as unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Mark {
    File { modified: Option<SystemTime>, len: u64 },
    Object { e_tag: Option<String>, size: u64 },
}

struct Slot {
    loaded: Loaded,
    mark: Option<Mark>,
    checked: Instant,
}

#[derive(Default)]
struct Fetched {
    settings: Settings,
    slots: Vec<Slot>,
    generation: u64,
    repo: Option<(String, Result<Arc<Repo>, String>)>,
    current: Option<Arc<Current>>,
}

/// The API's view of the configured states and repository.
#[derive(Default)]
pub struct Iac {
    fetched: tokio::sync::Mutex<Fetched>,
}

impl Iac {
    /// The states and repository as they are now: fetched again where
    /// they changed.
    pub async fn current(&self, config: &Value, data_dir: &Path) -> Arc<Current> {
        let settings = Settings::of(config);
        let mut f = self.fetched.lock().await;
        if f.settings != settings {
            f.slots.clear();
            f.repo = None;
            f.current = None;
            f.settings = settings.clone();
            f.generation += 1;
        }
        let mut changed = f.current.is_none();
        for (i, source) in settings.states.iter().enumerate() {
            // A file's size and time cost a stat; an object's ETag a request.
            let remote = source.starts_with("s3://");
            if remote
                && f.slots
                    .get(i)
                    .is_some_and(|s| s.checked.elapsed() < RECHECK && s.loaded.state.is_ok())
            {
                continue;
            }
            let known = f.slots.get(i).and_then(|s| s.mark.clone());
            let (mark, fetched) = fetch(source, data_dir, known.as_ref()).await;
            let slot = Slot {
                loaded: Loaded {
                    source: source.clone(),
                    state: match (fetched, f.slots.get(i)) {
                        (Some(state), _) => state,
                        (None, Some(old)) => old.loaded.state.clone(),
                        (None, None) => Err("not fetched".to_owned()),
                    },
                },
                mark,
                checked: Instant::now(),
            };
            // Unchanged: the same content, or the same failure.
            let same = f
                .slots
                .get(i)
                .is_some_and(|old| match (&old.loaded.state, &slot.loaded.state) {
                    (Ok(_), Ok(_)) => old.mark.is_some() && old.mark == slot.mark,
                    (Err(a), Err(b)) => a == b,
                    _ => false,
                });
            if !same {
                changed = true;
            }
            if i < f.slots.len() {
                f.slots[i] = slot;
            } else {
                f.slots.push(slot);
            }
        }
        if let Some(path) = &settings.repository
            && f.repo.as_ref().is_none_or(|(p, r)| p != path || r.is_err())
        {
            let dir = resolve(path, data_dir);
            let opened = tokio::task::spawn_blocking(move || Repo::open(&dir).map(Arc::new).map_err(|e| e.to_string()))
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
            let same = f.repo.as_ref().is_some_and(|(p, r)| match (r, &opened) {
                (Err(a), Err(b)) => p == path && a == b,
                _ => false,
            });
            changed |= !same;
            f.repo = Some((path.clone(), opened));
        }
        if changed {
            f.generation += 1;
            f.current = None;
        }
        if let Some(c) = &f.current {
            return c.clone();
        }
        let current = Arc::new(Current {
            generation: f.generation,
            states: f.slots.iter().map(|s| s.loaded.clone()).collect(),
            repo: f.repo.as_ref().map(|(_, r)| r.clone()),
            settings,
        });
        f.current = Some(current.clone());
        current
    }
}

/// A relative path is read from the data directory, where the
/// configuration file is.
fn resolve(path: &str, data_dir: &Path) -> PathBuf {
    let p = PathBuf::from(path);
    if p.is_absolute() { p } else { data_dir.join(p) }
}

/// The state's mark now, and its content when the mark differs from
/// `known` (or it could not be had: the error).
async fn fetch(
    source: &str,
    data_dir: &Path,
    known: Option<&Mark>,
) -> (Option<Mark>, Option<Result<Arc<State>, String>>) {
    match source.strip_prefix("s3://") {
        Some(rest) => fetch_object(source, rest, known).await,
        None => {
            let path = resolve(source, data_dir);
            let known = known.cloned();
            tokio::task::spawn_blocking(move || fetch_file(&path, known))
                .await
                .unwrap_or_else(|e| (None, Some(Err(e.to_string()))))
        }
    }
}

fn fetch_file(path: &Path, known: Option<Mark>) -> (Option<Mark>, Option<Result<Arc<State>, String>>) {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return (None, Some(Err(format!("cannot read {}: {e}", path.display())))),
    };
    let mark = Mark::File {
        modified: meta.modified().ok(),
        len: meta.len(),
    };
    if known == Some(mark.clone()) {
        return (Some(mark), None);
    }
    if meta.len() > MAX_STATE_BYTES {
        return (
            None,
            Some(Err(format!(
                "{} is {} bytes, more than the {MAX_STATE_BYTES} a state may have",
                path.display(),
                meta.len()
            ))),
        );
    }
    let parsed = std::fs::read(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|bytes| svc_iac::state::parse(&bytes).map_err(|e| format!("{}: {e}", path.display())));
    let mark = parsed.is_ok().then_some(mark);
    (mark, Some(parsed.map(Arc::new)))
}

async fn fetch_object(
    url: &str,
    rest: &str,
    known: Option<&Mark>,
) -> (Option<Mark>, Option<Result<Arc<State>, String>>) {
    let Some((bucket, key)) = rest.split_once('/').filter(|(b, k)| !b.is_empty() && !k.is_empty()) else {
        return (
            None,
            Some(Err(format!(
                "{url}: name a bucket and a key, e.g. s3://tf-state/prod/terraform.tfstate"
            ))),
        );
    };
    let store = match crate::export::s3_bucket(bucket) {
        Ok(s) => s,
        Err(e) => return (None, Some(Err(format!("{url}: {e}")))),
    };
    let path = object_store::path::Path::from(key);
    let head = match store.head(&path).await {
        Ok(h) => h,
        Err(e) => return (None, Some(Err(format!("{url}: {e}")))),
    };
    let mark = Mark::Object {
        e_tag: head.e_tag.clone(),
        size: head.size,
    };
    if known == Some(&mark) {
        return (Some(mark), None);
    }
    if head.size > MAX_STATE_BYTES {
        return (
            None,
            Some(Err(format!(
                "{url} is {} bytes, more than the {MAX_STATE_BYTES} a state may have",
                head.size
            ))),
        );
    }
    let bytes = match store.get(&path).await {
        Ok(got) => match got.bytes().await {
            Ok(b) => b,
            Err(e) => return (None, Some(Err(format!("{url}: {e}")))),
        },
        Err(e) => return (None, Some(Err(format!("{url}: {e}")))),
    };
    let parsed = svc_iac::state::parse(&bytes).map_err(|e| format!("{url}: {e}"));
    let mark = parsed.is_ok().then_some(mark);
    (mark, Some(parsed.map(Arc::new)))
}

/// The live graph as drift reads it, under a read guard the caller holds.
pub struct GraphLive<'a> {
    pub graph: &'a Graph,
    pub now_us: u64,
}

impl GraphLive<'_> {
    fn find(&self, crn: &str) -> Option<svc_engine::graph::NodeRef<'_>> {
        let c = Crn::parse(crn).ok()?;
        let id = self.graph.find(&c)?;
        self.graph.node(id)
    }
}

impl Live for GraphLive<'_> {
    fn contains(&self, crn: &str) -> bool {
        self.find(crn).is_some()
    }

    fn live(&self, crn: &str) -> Option<LiveNode> {
        let n = self.find(crn).filter(|n| n.is_visible(self.now_us))?;
        let r = self.graph.interner().reader();
        Some(LiveNode {
            props: props_json(n.props(), &r).0,
            tags: tags_json(n.tags(), &r).0,
            cost_usd_mo: f64::from(n.cost_usd_mo()),
        })
    }

    fn each(&self, f: &mut dyn FnMut(&Seen<'_>)) {
        let r = self.graph.interner().reader();
        for n in self.graph.nodes() {
            f(&Seen {
                provider: r.resolve(n.provider()),
                region: r.resolve(n.region()),
                service: r.resolve(n.service()),
                kind: r.resolve(n.kind()),
                account: r.resolve(n.account()),
                id: n.physical_id(),
                live: n.is_visible(self.now_us),
                cost_usd_mo: f64::from(n.cost_usd_mo()),
            });
        }
    }
}

/// Where a managed resource is declared and who wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    pub address: String,
    /// The state that declares it.
    pub state: String,
    pub commit: String,
    pub author: String,
    pub email: String,
    pub time: i64,
    pub summary: String,
    pub file: String,
    pub line: u32,
    pub end_line: u32,
    /// Why the declaration or its blame is missing, when it is.
    pub missing: Option<String>,
}

/// The index of the states against the graph: kept until the graph or
/// the states change.
pub fn index(derived: &crate::derived::Derived, engine: &Engine, current: &Current) -> Arc<Index> {
    index_stamped(derived, engine, current).0
}

/// [`index`], and the state of the graph it was built from.
fn index_stamped(
    derived: &crate::derived::Derived,
    engine: &Engine,
    current: &Current,
) -> (Arc<Index>, crate::derived::State) {
    let findings = engine.findings();
    let now_us = engine.now_us();
    let g = engine.graph();
    let at = crate::derived::State::of(engine, &findings);
    let index = derived.get_or_make(&format!("iac/index/{}", current.generation), &at, || {
        let (states, _) = current.readable();
        Index::build(&states, &GraphLive { graph: &g, now_us })
    });
    (index, at)
}

/// The state position (among the readable ones) to the configured source.
pub fn source_of(current: &Current, readable_pos: usize) -> String {
    current
        .states
        .iter()
        .filter(|l| l.state.is_ok())
        .nth(readable_pos)
        .map(|l| l.source.clone())
        .unwrap_or_default()
}

/// The repository and the block that declares entry `e` in it; why not,
/// when either cannot be had.
pub fn block_of<'c>(
    current: &'c Current,
    e: &svc_iac::drift::Entry,
) -> Result<(&'c Repo, svc_iac::code::Block), String> {
    let repo = match &current.repo {
        None => return Err("no repository is configured (iac.repository)".to_owned()),
        Some(Err(why)) => return Err(format!("the repository cannot be read: {why}")),
        Some(Ok(r)) => r,
    };
    let d = &e.declared;
    let modules: Vec<&str> = d.modules.iter().map(|m| m.name.as_str()).collect();
    match repo.locate(&modules, &d.mode, &d.ty, &d.name) {
        Ok(Some(b)) => Ok((repo, b)),
        Ok(None) => Err(format!(
            "no `{} \"{}\" \"{}\"` block in the repository's {}",
            if d.mode == "data" { "data" } else { "resource" },
            d.ty,
            d.name,
            if d.module.is_empty() { "root module" } else { &d.module }
        )),
        Err(err) => Err(err.to_string()),
    }
}

/// Where entry `e` is declared and who wrote it.
pub fn provenance_of(current: &Current, e: &svc_iac::drift::Entry) -> Provenance {
    let mut p = Provenance {
        address: e.declared.address.clone(),
        state: source_of(current, e.state),
        ..Provenance::default()
    };
    let (repo, block) = match block_of(current, e) {
        Ok(found) => found,
        Err(why) => {
            p.missing = Some(why);
            return p;
        }
    };
    p.file = block.file.clone();
    p.line = block.line;
    p.end_line = block.end_line;
    match repo.blame(&block.file, block.line) {
        Ok(Some(b)) => {
            p.commit = b.commit;
            p.author = b.author;
            p.email = b.email;
            p.time = b.time;
            p.summary = b.summary;
        }
        Ok(None) => p.missing = Some(format!("{}:{} is not in HEAD", block.file, block.line)),
        Err(err) => p.missing = Some(err.to_string()),
    }
    p
}

/// Every managed resource's provenance by CRN, as topology writes it:
/// `{"commit":..,"author":..,"file":..,"line":..}` keyed by the CRN as it
/// reads inside a JSON string.
pub type ProvenanceJson = HashMap<String, Vec<u8>>;

/// [`ProvenanceJson`] for the graph as it is; kept like the index.
pub fn provenance_json(derived: &crate::derived::Derived, engine: &Engine, current: &Current) -> Arc<ProvenanceJson> {
    // Blame is worked out without the graph's lock: the answer is kept
    // with the graph state the index was built from.
    let (index, at) = index_stamped(derived, engine, current);
    let head = match &current.repo {
        Some(Ok(r)) => r.head().unwrap_or_default(),
        _ => String::new(),
    };
    derived.get_or_make(&format!("iac/provenance/{}/{head}", current.generation), &at, || {
        let mut out = ProvenanceJson::new();
        for e in &index.entries {
            let Some(crn) = &e.crn else { continue };
            let p = provenance_of(current, e);
            let body = serde_json::json!({
                "commit": p.commit, "author": p.author, "file": p.file, "line": p.line,
            });
            let key = serde_json::to_string(crn).unwrap_or_default();
            let key = key.get(1..key.len().saturating_sub(1)).unwrap_or_default().to_owned();
            out.entry(key).or_insert_with(|| body.to_string().into_bytes());
        }
        out
    })
}
