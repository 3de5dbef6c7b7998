//! `GET /api/v1/nodes`: the terminal UI's node table, served a window at a
//! time. The UI never holds the estate: it asks for the rows of one
//! workspace (a [`Category`]), under its filter, in its sort order, from
//! the position the cursor is at, and for how many rows each workspace
//! holds.
//!
//! Without `sort` the rows come in id order and page by `cursor` as
//! `graph/nodes` does. With `sort`, one pass collects the matching rows
//! and a selection picks the window (`offset`, `limit`): no full sort, so a
//! window deep in a million rows costs what the first one does.

use std::cmp::Ordering;

use axum::extract::State;
use axum::response::Response;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use svc_engine::graph::NodeRef;
use svc_engine::intern::InternerReader;
use svc_engine::{Graph, NodeId, Sym};
use utoipa::ToSchema;

use super::filter::{NodeFilter, Terms};
use super::{blocking, check_cursor};
use crate::error::{ApiError, ApiResult};
use crate::routes::ApiQuery;
use crate::routes::query::{Flag, Limit, NodeCursor};
use crate::state::AppState;
use crate::wire::{self, Category, NodeView, TuiRow};

/// The furthest window a request may ask for.
const MAX_OFFSET: u64 = 100_000_000;

/// The column the rows are ordered by.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RowSort {
    Cost,
    /// The provider's id of the resource (the CRN's last part).
    Name,
    Type,
    State,
    Provider,
    Region,
}

/// Ascending or descending.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    #[default]
    Asc,
    Desc,
}

/// `GET /api/v1/nodes`: a window of the terminal UI's rows.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RowsQuery {
    /// Page size.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<1000, 10_000>,
    /// Only rows of this workspace.
    #[param(inline)]
    category: Option<Category>,
    /// The terminal UI's filter: terms separated by spaces, all of which must hold. `key:value`
    /// matches the start of a column (`state`, `type`, `provider`, `region`, `phase`, `reach`),
    /// `waste:yes` or `waste:no` the verdict; any other word is a case-insensitive substring of
    /// the CRN, type, state, region or waste reason.
    filter: Option<String>,
    /// Order the rows by this column (ties by node id); without it rows come in id order.
    #[param(inline)]
    sort: Option<RowSort>,
    /// The order of `sort`.
    #[serde(default)]
    #[param(inline)]
    order: SortOrder,
    /// Skip this many matching rows: the position of the page's first row. With `sort`, pages
    /// are chosen this way (and `next_cursor` is empty).
    #[serde(default)]
    #[param(maximum = 100_000_000)]
    offset: u64,
    /// Only nodes of this provider (a provider the graph never saw matches nothing).
    provider: Option<String>,
    /// Only nodes of this type (`service:kind`, for example `ec2:volume`).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    ty: Option<String>,
    /// Only nodes in this provider-reported state (for example `stopped`).
    state: Option<String>,
    /// Only waste (`true`) or only what is not waste (`false`).
    #[param(value_type = Option<bool>)]
    waste: Option<Flag>,
    /// Only nodes with this tag: `key` (set to anything) or `key=value`.
    tag: Option<String>,
    /// Search: a case-insensitive substring of the CRN or of a tag's `key=value`.
    q: Option<String>,
    /// Opaque cursor, `next_cursor` of a previous response (id order only).
    #[param(inline)]
    cursor: Option<NodeCursor>,
    /// Also list logically deleted nodes still held in memory (retired rows are dropped at a start
    /// and once they are an eighth of the rows; `/api/v1/graph/at` has them all). Accepts
    /// `true`/`1`/`yes`, `false`/`0`/`no`; the bare flag means true.
    #[serde(default)]
    #[param(inline)]
    include_deleted: Flag,
}

/// Rows per workspace.
#[derive(Clone, Copy, Debug, Default, Serialize, ToSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceCounts {
    pub compute: u64,
    pub database: u64,
    pub kubernetes: u64,
    pub network: u64,
    pub other: u64,
    pub serverless: u64,
    pub storage: u64,
}

impl WorkspaceCounts {
    fn from_counts(c: [u64; 7]) -> WorkspaceCounts {
        let at = |cat: Category| c[cat.index()];
        WorkspaceCounts {
            compute: at(Category::Compute),
            database: at(Category::Database),
            kubernetes: at(Category::Kubernetes),
            network: at(Category::Network),
            other: at(Category::Other),
            serverless: at(Category::Serverless),
            storage: at(Category::Storage),
        }
    }
}

/// A window of the terminal UI's rows.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TuiRowPage {
    /// Cursor of the next page in id order; empty on the last page and with `sort`.
    pub next_cursor: String,
    /// The position of the first row among all matching rows, in this order.
    pub offset: u64,
    pub rows: Vec<TuiRow>,
    /// Rows matching every filter and `category`, over all pages.
    pub total: u64,
    /// Rows matching every filter but `category`, per workspace.
    pub workspaces: WorkspaceCounts,
}

/// What a request asks for, with its text parsed.
struct RowsSpec {
    limit: usize,
    offset: usize,
    category: Option<Category>,
    filter: NodeFilter,
    terms: Terms,
    sort: Option<(RowSort, SortOrder)>,
    after: Option<NodeId>,
    include_deleted: bool,
}

impl RowsSpec {
    fn new(q: RowsQuery) -> ApiResult<RowsSpec> {
        if q.cursor.is_some() && (q.sort.is_some() || q.offset > 0) {
            return Err(ApiError::bad_request(
                "cursor pages rows in id order: with sort or offset, choose the page by offset alone",
            ));
        }
        if q.offset > MAX_OFFSET {
            return Err(ApiError::bad_request(format!(
                "offset {} is over {MAX_OFFSET}",
                q.offset
            )));
        }
        let terms = Terms::parse(q.filter.as_deref().unwrap_or_default()).map_err(ApiError::bad_request)?;
        Ok(RowsSpec {
            limit: q.limit.0,
            offset: usize::try_from(q.offset).unwrap_or(usize::MAX),
            category: q.category,
            filter: NodeFilter::new(q.provider, q.ty, q.state, q.waste.map(|w| w.0), q.tag, q.q),
            terms,
            sort: q.sort.map(|s| (s, q.order)),
            after: q.cursor.map(|c| c.0),
            include_deleted: q.include_deleted.0,
        })
    }

    /// The key the per-workspace counts are kept under: every filter but
    /// the category, the order and the window.
    fn counts_key(&self) -> String {
        format!(
            "nodes workspaces {:?} {:?} {}",
            self.filter, self.terms, self.include_deleted
        )
    }
}

/// A node's workspace, remembered per provider and type.
struct Categorize<'r> {
    r: &'r InternerReader<'r>,
    seen: FxHashMap<(Sym, Sym), Category>,
}

impl Categorize<'_> {
    fn of(&mut self, n: &NodeRef<'_>) -> Category {
        let r = self.r;
        *self
            .seen
            .entry((n.provider(), n.ty()))
            .or_insert_with(|| Category::of(r.resolve(n.provider()), r.resolve(n.ty())))
    }
}

/// `GET /api/v1/nodes`: `{rows, offset, total, workspaces, next_cursor}`.
#[utoipa::path(
    get,
    path = "/nodes",
    operation_id = "listTuiRows",
    tag = "graph",
    summary = "Nodes as rows of the terminal UI's node table.",
    description = "A window of the rows of one workspace (`category`), under the terminal UI's `filter` and the filters of `/api/v1/graph/nodes`, in `sort` order from `offset`, with the row count of every workspace. Without `sort`, rows come in id order and page by `cursor` as `/api/v1/graph/nodes` does; with `sort`, by `offset` (a window is chosen without sorting every row).",
    params(RowsQuery),
    responses(
        (status = 200, description = "A window of rows.", body = TuiRowPage, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn tui_rows(State(state): State<AppState>, ApiQuery(q): ApiQuery<RowsQuery>) -> ApiResult<Response> {
    let spec = RowsSpec::new(q)?;
    let engine = state.engine()?.clone();
    blocking(move || {
        let now = engine.now_us();
        let g = engine.graph();
        check_cursor(&g, spec.after)?;
        let at = crate::derived::State::of(&engine, &engine.findings());
        // A sorted window reads every matching row anyway: when the counts
        // are not kept, the same pass counts them.
        let mut collected = None;
        let counts = *state.inner.derived.get_or_make(&spec.counts_key(), &at, || {
            if spec.sort.is_none() {
                return count(&g, &spec, now);
            }
            let (counts, rows) = collect(&g, &spec, now);
            collected = Some(rows);
            counts
        });
        let total = match spec.category {
            Some(c) => counts[c.index()],
            None => counts.iter().sum(),
        };
        let (page, next) = match spec.sort {
            Some((by, order)) => {
                let rows = collected.unwrap_or_else(|| collect(&g, &spec, now).1);
                (sorted_window(&g, rows, spec.offset, spec.limit, by, order), None)
            }
            None => id_window(&g, &spec, now),
        };
        let r = g.interner().reader();
        Ok(TuiRowPage {
            next_cursor: next.map(NodeCursor::encode).unwrap_or_default(),
            offset: spec.offset as u64,
            rows: page.iter().map(|n| wire::tui_row(&NodeView::of(n), &r)).collect(),
            total,
            workspaces: WorkspaceCounts::from_counts(counts),
        })
    })
    .await
}

/// Runs `each` on every node from `after` on (in id order) that passes the
/// request's filters but the category, with its category, until `each`
/// answers false.
fn for_matching<'g>(
    g: &'g Graph,
    spec: &RowsSpec,
    after: Option<NodeId>,
    now: u64,
    mut each: impl FnMut(NodeRef<'g>, Category) -> bool,
) {
    let Some(filter) = spec.filter.resolve(g) else { return };
    let r = g.interner().reader();
    let mut terms = spec.terms.matcher();
    let mut categorize = Categorize {
        r: &r,
        seen: FxHashMap::default(),
    };
    let mut buf = String::new();
    for n in g.nodes_after(after) {
        if (spec.include_deleted || n.is_visible(now))
            && filter.matches(&n, &r, &mut buf)
            && terms.matches(&n, &r)
            && !each(n, categorize.of(&n))
        {
            return;
        }
    }
}

/// Matching rows per workspace, over the whole graph.
fn count(g: &Graph, spec: &RowsSpec, now: u64) -> [u64; 7] {
    let mut counts = [0u64; 7];
    for_matching(g, spec, None, now, |_, c| {
        counts[c.index()] += 1;
        true
    });
    counts
}

/// The window in id order after the cursor (and `offset` rows), and the
/// last row's id when more follow. The pass stops once the window is full.
fn id_window<'g>(g: &'g Graph, spec: &RowsSpec, now: u64) -> (Vec<NodeRef<'g>>, Option<NodeId>) {
    let mut page = Vec::new();
    let mut skip = spec.offset;
    for_matching(g, spec, spec.after, now, |n, c| {
        if spec.category.is_some_and(|want| want != c) {
            return true;
        }
        if skip > 0 {
            skip -= 1;
            return true;
        }
        page.push(n);
        page.len() <= spec.limit
    });
    let next = if page.len() > spec.limit {
        page.truncate(spec.limit);
        page.last().map(NodeRef::id)
    } else {
        None
    };
    (page, next)
}

/// The matching rows of the request's workspace, and every workspace's
/// count, in one pass.
fn collect<'g>(g: &'g Graph, spec: &RowsSpec, now: u64) -> ([u64; 7], Vec<NodeRef<'g>>) {
    let mut counts = [0u64; 7];
    let mut rows = Vec::new();
    for_matching(g, spec, None, now, |n, c| {
        counts[c.index()] += 1;
        if spec.category.is_none_or(|want| want == c) {
            rows.push(n);
        }
        true
    });
    (counts, rows)
}

/// The window `[offset, offset + limit)` of the matching rows in `by`
/// order: the rows before it are only partitioned off, never sorted.
fn sorted_window<'g>(
    g: &'g Graph,
    mut rows: Vec<NodeRef<'g>>,
    offset: usize,
    limit: usize,
    by: RowSort,
    order: SortOrder,
) -> Vec<NodeRef<'g>> {
    if offset >= rows.len() {
        return Vec::new();
    }
    let r = g.interner().reader();
    let cmp = |a: &NodeRef<'_>, b: &NodeRef<'_>| {
        let o = compare(a, b, by, &r);
        let o = if order == SortOrder::Desc { o.reverse() } else { o };
        o.then_with(|| a.id().to_raw().cmp(&b.id().to_raw()))
    };
    let end = offset.saturating_add(limit).min(rows.len());
    if end < rows.len() {
        rows.select_nth_unstable_by(end, cmp);
        rows.truncate(end);
    }
    if offset > 0 {
        rows.select_nth_unstable_by(offset, cmp);
    }
    let mut window = rows.split_off(offset);
    window.sort_unstable_by(cmp);
    window
}

fn compare(a: &NodeRef<'_>, b: &NodeRef<'_>, by: RowSort, r: &InternerReader<'_>) -> Ordering {
    let sym = |x: Sym, y: Sym| {
        if x == y {
            Ordering::Equal
        } else {
            r.resolve(x).cmp(r.resolve(y))
        }
    };
    match by {
        RowSort::Cost => a.cost_usd_mo().total_cmp(&b.cost_usd_mo()),
        RowSort::Name => a.physical_id().cmp(b.physical_id()),
        RowSort::Type => sym(a.ty(), b.ty()),
        RowSort::State => sym(a.state(), b.state()),
        RowSort::Provider => sym(a.provider(), b.provider()),
        RowSort::Region => sym(a.region(), b.region()),
    }
}
