//! The terminal UI's state and what each key does to it. Nothing here does
//! I/O: a key or a daemon answer changes the state and may ask for
//! [`Effect`]s, which the event loop (`super::run`) carries out.

use std::collections::{BTreeSet, VecDeque};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::model::{self, Category, SortKey};
use super::wire::{Blast, Envelope, Item, NodeDetail, NodeEdges, Oracle, Plan, Queue, Row, RowPage};

/// Ledger events kept for the ledger screen.
pub const LEDGER_KEEP: usize = 500;

/// Rows the node table asks for around the selection.
pub const WINDOW: usize = 300;
/// The window is moved once the selection comes this close to its edge.
const MARGIN: usize = 40;

/// Stages an item may be moved to (`POST /api/v1/remediation/move`).
pub const MOVE_STAGES: [&str; 6] = ["flagged", "analyzed", "codegen", "sau_gate", "pending", "applied"];

/// Stages of the queue screen, in the order they are listed.
pub const STAGES: [&str; 7] = [
    "pending", "sau_gate", "codegen", "analyzed", "flagged", "applied", "rejected",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Nodes,
    Queue,
    Ledger,
}

impl Screen {
    pub fn name(self) -> &'static str {
        match self {
            Screen::Nodes => "nodes",
            Screen::Queue => "queue",
            Screen::Ledger => "ledger",
        }
    }
}

/// The link to the daemon, as the `/events` stream sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    Connecting,
    Connected,
    /// Lost (or never made); `attempt` counts the tries since.
    Disconnected {
        reason: String,
        attempt: u32,
    },
}

/// A decision the operator is asked to confirm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve {
        crn: String,
        plan_hash: String,
    },
    Reject {
        crn: String,
        plan_hash: String,
    },
    Quarantine {
        crn: String,
    },
    /// For `ttl_seconds`, or permanently when 0.
    Ignore {
        crn: String,
        ttl_seconds: u64,
    },
    Revert {
        hash: String,
        what: String,
    },
    /// Approve or reject several items, each on its plan hash.
    Bulk {
        approve: bool,
        items: Vec<(String, String)>,
    },
    Move {
        crn: String,
        plan_hash: String,
        to: String,
    },
}

impl Decision {
    pub fn title(&self) -> &'static str {
        match self {
            Decision::Approve { .. } => "Approve remediation",
            Decision::Reject { .. } => "Reject remediation",
            Decision::Quarantine { .. } => "Quarantine resource",
            Decision::Ignore { .. } => "Ignore resource",
            Decision::Revert { .. } => "Revert",
            Decision::Bulk { approve: true, .. } => "Approve the marked remediations",
            Decision::Bulk { approve: false, .. } => "Reject the marked remediations",
            Decision::Move { .. } => "Move remediation",
        }
    }
}

/// What the event loop does for the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Quit,
    LoadSession,
    LoadRows(RowQuery),
    LoadDetail(String),
    LoadQueue,
    LoadPlan(String),
    Decide(Decision),
}

/// An answer of the daemon, or news of the link.
#[derive(Debug, Clone)]
pub enum Msg {
    Link(Link),
    Role(String),
    /// The daemon's answer to a [`RowQuery`].
    Rows(RowQuery, RowPage),
    /// A [`RowQuery`] failed; the text says why.
    RowsFailed(String),
    Node(String, Box<NodeDetail>),
    Edges(String, NodeEdges),
    Blast(String, Blast),
    Oracle(String, Oracle),
    Queue(Queue),
    Plan(String, Box<Plan>),
    Event(Box<Envelope>),
    /// A decision went through; the text says what it did.
    Done(String),
    /// A request failed; the text says why.
    Failed(String),
    /// The daemon refused a decision (a plan that changed is a 409); the
    /// queue is loaded again so the plan now in force is shown.
    Refused(String),
}

/// What the detail pane holds for one resource; each part arrives on its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detail {
    pub crn: String,
    pub node: Option<NodeDetail>,
    pub edges: Option<NodeEdges>,
    pub blast: Option<Blast>,
    pub oracle: Option<Oracle>,
    pub scroll: u16,
    /// The furthest scroll that still fills the pane, as last drawn.
    pub max_scroll: std::cell::Cell<u16>,
}

/// Where typed text goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Filter,
    Command,
    /// How long to ignore a resource for.
    IgnoreFor {
        crn: String,
    },
    /// The stage to move a queue item to.
    MoveTo {
        crn: String,
        plan_hash: String,
    },
}

impl Input {
    /// What the footer shows before the typed text.
    pub fn prompt(&self) -> &'static str {
        match self {
            Input::Filter => "/",
            Input::Command => ":",
            Input::IgnoreFor { .. } => "ignore for (7d, 12h, 30m; empty: permanently): ",
            Input::MoveTo { .. } => "move to (flagged analyzed codegen sau_gate pending applied): ",
        }
    }
}

/// What the node table asks the daemon for: a window of one workspace's
/// rows under a filter, in an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowQuery {
    /// Answers to the questions of an older workspace, filter or order are
    /// dropped.
    pub generation: u64,
    pub category: Category,
    pub filter: String,
    pub sort: SortKey,
    pub descending: bool,
    pub offset: usize,
    pub limit: usize,
}

/// The node table as far as the daemon sent it: a window of the rows, where
/// it starts, and the counts. One question is asked at a time; while it is
/// out, only the newest of the next ones is kept.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    pub rows: Vec<Row>,
    /// The position of `rows[0]` among all the rows.
    pub offset: usize,
    pub total: u64,
    /// Rows per workspace, in [`Category::ALL`] order.
    pub workspaces: [u64; 8],
    pub loaded: bool,
    pub generation: u64,
    /// The generation the rows shown were asked in.
    shown: Option<u64>,
    in_flight: bool,
    queued: Option<RowQuery>,
}

impl Rows {
    /// The row at position `at`, when the window holds it.
    pub fn at(&self, at: usize) -> Option<&Row> {
        at.checked_sub(self.offset).and_then(|i| self.rows.get(i))
    }
}

#[derive(Debug, Clone)]
pub struct App {
    pub url: String,
    pub color: bool,
    pub screen: Screen,
    pub link: Link,
    /// The token's role, once the daemon said it.
    pub role: Option<String>,
    pub table: Rows,
    pub category: Category,
    pub filter: String,
    pub sort: SortKey,
    pub descending: bool,
    /// The selected row's position among all the rows.
    pub selected: usize,
    pub detail: Option<Detail>,
    pub queue: Option<Queue>,
    pub queue_selected: usize,
    /// Queue items marked for a bulk decision, by CRN.
    pub marked: BTreeSet<String>,
    pub plan: Option<Plan>,
    pub ledger: VecDeque<Envelope>,
    pub ledger_selected: usize,
    pub help: bool,
    pub confirm: Option<Decision>,
    pub input: Option<(Input, String)>,
    /// The last outcome or error, shown in the footer.
    pub status: Option<String>,
}

impl App {
    pub fn new(url: String, color: bool) -> App {
        App {
            url,
            color,
            screen: Screen::Nodes,
            link: Link::Connecting,
            role: None,
            table: Rows::default(),
            category: Category::All,
            filter: String::new(),
            sort: SortKey::Cost,
            descending: true,
            selected: 0,
            detail: None,
            queue: None,
            queue_selected: 0,
            marked: BTreeSet::new(),
            plan: None,
            ledger: VecDeque::new(),
            ledger_selected: 0,
            help: false,
            confirm: None,
            input: None,
            status: None,
        }
    }

    /// Whether the token may decide (operator or admin). Unknown counts as
    /// no: the keys appear once the daemon said the role.
    pub fn can_decide(&self) -> bool {
        matches!(self.role.as_deref(), Some("operator" | "admin"))
    }

    /// The question for the window starting at `offset`.
    fn row_query(&self, offset: usize) -> RowQuery {
        RowQuery {
            generation: self.table.generation,
            category: self.category,
            filter: self.filter.clone(),
            sort: self.sort,
            descending: self.descending,
            offset,
            limit: WINDOW,
        }
    }

    /// Asks for the window starting at `offset`, unless a question is out:
    /// then it is asked when the answer comes.
    fn load_rows(&mut self, offset: usize) -> Vec<Effect> {
        let q = self.row_query(offset);
        if self.table.in_flight {
            self.table.queued = Some(q);
            return Vec::new();
        }
        self.table.in_flight = true;
        vec![Effect::LoadRows(q)]
    }

    /// The workspace, filter or order changed: the table starts again at
    /// its top.
    fn requery(&mut self) -> Vec<Effect> {
        self.table.generation += 1;
        self.selected = 0;
        self.load_rows(0)
    }

    /// The rows may have changed on the daemon: the window around the
    /// selection is asked for again.
    fn reload_rows(&mut self) -> Vec<Effect> {
        self.load_rows(self.selected.saturating_sub(WINDOW / 2))
    }

    /// Moves the window when the selection left it or nears its edge.
    fn follow(&mut self) -> Vec<Effect> {
        let (start, len, total) = (
            self.table.offset,
            self.table.rows.len(),
            usize::try_from(self.table.total).unwrap_or(usize::MAX),
        );
        let end = start + len;
        let inside = self.selected >= start && self.selected < end;
        let low = start == 0 || self.selected >= start + MARGIN;
        let high = end >= total || self.selected + MARGIN < end;
        if !self.table.loaded || (inside && low && high) || total == 0 {
            return Vec::new();
        }
        self.load_rows(self.selected.saturating_sub(WINDOW / 2))
    }

    /// The queue's items in listing order.
    pub fn queue_items(&self) -> Vec<&Item> {
        let Some(q) = &self.queue else { return Vec::new() };
        STAGES
            .iter()
            .filter_map(|s| q.stages.get(*s))
            .flat_map(|items| items.iter())
            .collect()
    }

    pub fn selected_row(&self) -> Option<&Row> {
        self.table.at(self.selected)
    }

    pub fn selected_item(&self) -> Option<&Item> {
        self.queue_items().get(self.queue_selected).copied()
    }

    pub fn selected_event(&self) -> Option<&Envelope> {
        self.ledger.get(self.ledger_selected)
    }

    /// Applies an answer of the daemon.
    pub fn apply(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Link(link) => {
                let was_up = self.link == Link::Connected;
                let up = link == Link::Connected;
                self.link = link;
                if up && !was_up {
                    // Whatever changed while away is loaded again.
                    let mut out = vec![Effect::LoadSession];
                    out.extend(self.reload_rows());
                    out.push(Effect::LoadQueue);
                    if let Some(d) = &self.detail {
                        out.push(Effect::LoadDetail(d.crn.clone()));
                    }
                    return out;
                }
            }
            Msg::Role(role) => self.role = Some(role),
            Msg::Rows(query, page) => {
                self.table.in_flight = false;
                let current = query.generation == self.table.generation;
                if current {
                    // Rows of the same question that moved (a scan, a
                    // decision) keep the selection on its resource.
                    let kept = (self.table.shown == Some(query.generation))
                        .then(|| self.selected_row().map(|r| r.crn.clone()))
                        .flatten();
                    self.table.rows = page.rows;
                    self.table.offset = usize::try_from(page.offset).unwrap_or(0);
                    self.table.total = page.total;
                    self.table.workspaces = page.workspaces.by_category();
                    self.table.loaded = true;
                    self.table.shown = Some(query.generation);
                    if let Some(i) = kept.and_then(|crn| self.table.rows.iter().position(|r| r.crn == crn)) {
                        self.selected = self.table.offset + i;
                    }
                    self.clamp();
                }
                if let Some(next) = self.table.queued.take() {
                    self.table.in_flight = true;
                    return vec![Effect::LoadRows(next)];
                }
                if current {
                    return self.follow();
                }
            }
            Msg::RowsFailed(text) => {
                self.table.in_flight = false;
                self.table.loaded = true;
                self.status = Some(text);
                if let Some(next) = self.table.queued.take() {
                    self.table.in_flight = true;
                    return vec![Effect::LoadRows(next)];
                }
            }
            Msg::Node(crn, n) => self.with_detail(&crn, |d| d.node = Some(*n)),
            Msg::Edges(crn, e) => self.with_detail(&crn, |d| d.edges = Some(e)),
            Msg::Blast(crn, b) => self.with_detail(&crn, |d| d.blast = Some(b)),
            Msg::Oracle(crn, o) => self.with_detail(&crn, |d| d.oracle = Some(o)),
            Msg::Queue(q) => {
                let before = self.selected_item().map(|i| i.crn.clone());
                self.queue = Some(q);
                // A marked item that left the queue is no longer marked.
                let listed: BTreeSet<String> = self.queue_items().iter().map(|i| i.crn.clone()).collect();
                self.marked.retain(|c| listed.contains(c));
                self.clamp();
                let after = self.selected_item().map(|i| i.crn.clone());
                let stale = match (self.selected_item(), &self.plan) {
                    (Some(i), Some(p)) => p.crn != i.crn || (!i.plan_hash.is_empty() && p.plan_hash != i.plan_hash),
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                if after != before || stale {
                    self.plan = None;
                    return after.map(Effect::LoadPlan).into_iter().collect();
                }
            }
            Msg::Plan(crn, plan) => {
                if self.selected_item().is_some_and(|i| i.crn == crn) {
                    self.plan = Some(*plan);
                }
            }
            Msg::Event(ev) => return self.on_event(*ev),
            Msg::Done(text) => {
                self.status = Some(text);
                let mut out = vec![Effect::LoadQueue];
                out.extend(self.reload_rows());
                return out;
            }
            Msg::Failed(text) => self.status = Some(text),
            Msg::Refused(text) => {
                self.status = Some(text);
                return vec![Effect::LoadQueue];
            }
        }
        Vec::new()
    }

    fn with_detail(&mut self, crn: &str, f: impl FnOnce(&mut Detail)) {
        if let Some(d) = self.detail.as_mut().filter(|d| d.crn == crn) {
            f(d);
        }
    }

    fn on_event(&mut self, ev: Envelope) -> Vec<Effect> {
        if self.ledger.front().is_some_and(|f| ev.seq <= f.seq) && self.ledger.iter().any(|e| e.seq == ev.seq) {
            return Vec::new();
        }
        let reload = match ev.event_type.as_str() {
            "SCAN_COMPLETED" | "SCAN_RECOVERED" => {
                let mut out = self.reload_rows();
                out.push(Effect::LoadQueue);
                out
            }
            "APPROVAL"
            | "REJECTION"
            | "EXECUTION_COMMIT"
            | "EXECUTION_ROLLBACK"
            | "QUARANTINE"
            | "QUARANTINE_REVERTED"
            | "ISOLATION" => vec![Effect::LoadQueue],
            _ => Vec::new(),
        };
        // Newest first; the selection stays on the event it was on.
        self.ledger.push_front(ev);
        if self.ledger_selected > 0 {
            self.ledger_selected += 1;
        }
        self.ledger.truncate(LEDGER_KEEP);
        self.clamp();
        reload
    }

    /// Keeps every selection inside its list.
    fn clamp(&mut self) {
        let n = usize::try_from(self.table.total).unwrap_or(usize::MAX);
        self.selected = self.selected.min(n.saturating_sub(1));
        let q = self.queue_items().len();
        self.queue_selected = self.queue_selected.min(q.saturating_sub(1));
        self.ledger_selected = self.ledger_selected.min(self.ledger.len().saturating_sub(1));
    }

    /// Handles one key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return vec![Effect::Quit];
        }
        if self.confirm.is_some() {
            return self.on_confirm_key(key);
        }
        if self.input.is_some() {
            return self.on_input_key(key);
        }
        if self.help {
            if matches!(key.code, KeyCode::Esc | KeyCode::Char('q' | '?')) {
                self.help = false;
            }
            return Vec::new();
        }
        self.status = None;
        match key.code {
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char(':') => self.input = Some((Input::Command, String::new())),
            KeyCode::Char('/') if self.screen == Screen::Nodes && self.detail.is_none() => {
                self.input = Some((Input::Filter, self.filter.clone()));
            }
            KeyCode::Esc | KeyCode::Char('q') => return self.back(key.code == KeyCode::Char('q')),
            KeyCode::Down | KeyCode::Char('j') => return self.step(1),
            KeyCode::Up | KeyCode::Char('k') => return self.step(-1),
            KeyCode::PageDown => return self.step(10),
            KeyCode::PageUp => return self.step(-10),
            KeyCode::Home | KeyCode::Char('g') => return self.step(i64::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => return self.step(i64::MAX / 2),
            KeyCode::Enter => return self.enter(),
            KeyCode::Tab if self.screen == Screen::Nodes => return self.set_category(self.category.next()),
            KeyCode::BackTab if self.screen == Screen::Nodes => return self.set_category(self.category.prev()),
            KeyCode::Char(c @ '1'..='8') if self.screen == Screen::Nodes => {
                let i = usize::from(c as u8 - b'1');
                return self.set_category(Category::ALL[i]);
            }
            KeyCode::Char('s') if self.screen == Screen::Nodes => {
                self.sort = self.sort.next();
                self.descending = self.sort == SortKey::Cost;
                return self.requery();
            }
            KeyCode::Char('S') if self.screen == Screen::Nodes => {
                self.descending = !self.descending;
                return self.requery();
            }
            KeyCode::Char(' ') if self.screen == Screen::Queue => self.toggle_mark(),
            KeyCode::Char('n') => {
                self.detail = None;
                self.screen = Screen::Nodes;
            }
            KeyCode::Char('Q') => return self.switch(Screen::Queue),
            KeyCode::Char('l') => return self.switch(Screen::Ledger),
            KeyCode::Char('r') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                let mut out = self.reload_rows();
                out.push(Effect::LoadQueue);
                return out;
            }
            KeyCode::Char(c @ ('a' | 'r' | 'x' | 'i' | 'u' | 'A' | 'R' | 'm')) => self.ask(c),
            _ => {}
        }
        Vec::new()
    }

    fn set_category(&mut self, c: Category) -> Vec<Effect> {
        if c == self.category {
            return Vec::new();
        }
        self.category = c;
        self.requery()
    }

    /// Space on the queue: marks the item for a bulk decision (or unmarks
    /// it) and moves to the next.
    fn toggle_mark(&mut self) {
        let Some(crn) = self.selected_item().map(|i| i.crn.clone()) else {
            return;
        };
        if !self.marked.remove(&crn) {
            self.marked.insert(crn);
        }
        self.queue_selected = (self.queue_selected + 1).min(self.queue_items().len().saturating_sub(1));
    }

    fn switch(&mut self, screen: Screen) -> Vec<Effect> {
        self.screen = screen;
        if screen == Screen::Queue {
            return vec![Effect::LoadQueue];
        }
        Vec::new()
    }

    /// `q`/Esc: closes the detail pane, clears a filter, or goes back to
    /// the node table; `q` on the node table quits.
    fn back(&mut self, is_q: bool) -> Vec<Effect> {
        if self.detail.is_some() {
            self.detail = None;
        } else if self.screen != Screen::Nodes {
            self.screen = Screen::Nodes;
        } else if !self.filter.is_empty() && !is_q {
            self.filter.clear();
            return self.requery();
        } else if is_q {
            return vec![Effect::Quit];
        }
        Vec::new()
    }

    fn step(&mut self, by: i64) -> Vec<Effect> {
        fn moved(at: usize, by: i64, len: usize) -> usize {
            if len == 0 {
                return 0;
            }
            (at as i64).saturating_add(by).clamp(0, len as i64 - 1) as usize
        }
        match self.screen {
            Screen::Nodes => {
                if let Some(d) = &mut self.detail {
                    // The pane says how far it can scroll once drawn.
                    let max = match d.max_scroll.get() {
                        0 => i64::from(u16::MAX),
                        m => i64::from(m),
                    };
                    d.scroll = u16::try_from(i64::from(d.scroll).saturating_add(by).clamp(0, max)).unwrap_or(0);
                } else {
                    let total = usize::try_from(self.table.total).unwrap_or(usize::MAX);
                    self.selected = moved(self.selected, by, total);
                    return self.follow();
                }
            }
            Screen::Queue => {
                let before = self.queue_selected;
                self.queue_selected = moved(before, by, self.queue_items().len());
                if self.queue_selected != before {
                    self.plan = None;
                    return self
                        .selected_item()
                        .map(|i| Effect::LoadPlan(i.crn.clone()))
                        .into_iter()
                        .collect();
                }
            }
            Screen::Ledger => self.ledger_selected = moved(self.ledger_selected, by, self.ledger.len()),
        }
        Vec::new()
    }

    fn enter(&mut self) -> Vec<Effect> {
        let crn = match self.screen {
            Screen::Nodes if self.detail.is_none() => self.selected_row().map(|r| r.crn.clone()),
            Screen::Queue => self.selected_item().map(|i| i.crn.clone()),
            Screen::Ledger => self.selected_event().map(|e| e.crn.clone()).filter(|c| !c.is_empty()),
            Screen::Nodes => None,
        };
        let Some(crn) = crn else { return Vec::new() };
        self.screen = Screen::Nodes;
        self.detail = Some(Detail {
            crn: crn.clone(),
            ..Detail::default()
        });
        vec![Effect::LoadDetail(crn)]
    }

    /// The resource the current screen points at.
    fn target_crn(&self) -> Option<String> {
        match self.screen {
            Screen::Nodes => match &self.detail {
                Some(d) => Some(d.crn.clone()),
                None => self.selected_row().map(|r| r.crn.clone()),
            },
            Screen::Queue => self.selected_item().map(|i| i.crn.clone()),
            Screen::Ledger => self.selected_event().map(|e| e.crn.clone()).filter(|c| !c.is_empty()),
        }
    }

    /// The plan hash a decision on `item` names: the plan on screen's,
    /// else the item's own.
    fn plan_hash_of(&self, item: &Item) -> String {
        self.plan
            .as_ref()
            .filter(|p| p.crn == item.crn && !p.plan_hash.is_empty())
            .map_or_else(|| item.plan_hash.clone(), |p| p.plan_hash.clone())
    }

    /// `A`/`R`: the marked items (or the selected one) with a plan, and
    /// how many were left out for having none yet.
    fn bulk_items(&self) -> (Vec<(String, String)>, usize) {
        let items = self.queue_items();
        let chosen: Vec<&Item> = if self.marked.is_empty() {
            self.selected_item().into_iter().collect()
        } else {
            items.into_iter().filter(|i| self.marked.contains(&i.crn)).collect()
        };
        let mut out = Vec::new();
        let mut without = 0;
        for i in chosen {
            let hash = self.plan_hash_of(i);
            if hash.is_empty() {
                without += 1;
            } else {
                out.push((i.crn.clone(), hash));
            }
        }
        (out, without)
    }

    /// Opens the confirmation of a decision key: `a` approve, `r` reject,
    /// `A`/`R` the marked items, `m` move (queue), `x` quarantine, `i`
    /// ignore (after asking for how long), `u` revert (ledger).
    fn ask(&mut self, key: char) {
        if !self.can_decide() {
            self.status = Some(format!(
                "the token's role ({}) may not change anything: an operator token is needed",
                self.role.as_deref().unwrap_or("unknown")
            ));
            return;
        }
        let decision = match key {
            'a' | 'r' => {
                let Some(item) = self.selected_item().filter(|_| self.screen == Screen::Queue) else {
                    self.status = Some("approve and reject act on the queue: press Q".into());
                    return;
                };
                let plan_hash = self.plan_hash_of(item);
                if plan_hash.is_empty() {
                    self.status = Some(format!("{} has no plan yet (stage {})", item.crn, item.stage));
                    return;
                }
                let crn = item.crn.clone();
                if key == 'a' {
                    Decision::Approve { crn, plan_hash }
                } else {
                    Decision::Reject { crn, plan_hash }
                }
            }
            'A' | 'R' => {
                if self.screen != Screen::Queue {
                    self.status = Some("bulk decisions act on the queue: press Q, mark items with space".into());
                    return;
                }
                let (items, without) = self.bulk_items();
                if items.is_empty() {
                    self.status = Some("nothing to decide: mark items that have a plan with space".into());
                    return;
                }
                if without > 0 {
                    self.status = Some(format!("{without} marked item(s) have no plan yet and are left out"));
                }
                Decision::Bulk {
                    approve: key == 'A',
                    items,
                }
            }
            'm' => {
                let Some(item) = self.selected_item().filter(|_| self.screen == Screen::Queue) else {
                    self.status = Some("move acts on a queue item: press Q".into());
                    return;
                };
                let (crn, plan_hash) = (item.crn.clone(), self.plan_hash_of(item));
                self.input = Some((Input::MoveTo { crn, plan_hash }, String::new()));
                return;
            }
            'u' => {
                let Some(ev) = self.selected_event().filter(|_| self.screen == Screen::Ledger) else {
                    self.status = Some("revert acts on a ledger event that names an undo hash: press l".into());
                    return;
                };
                let Some(hash) = ev.revert_hash() else {
                    self.status = Some(format!("event {} ({}) has nothing to revert", ev.seq, ev.event_type));
                    return;
                };
                Decision::Revert {
                    hash: hash.to_owned(),
                    what: format!("{} {}", ev.event_type, model::short_name(&ev.crn)),
                }
            }
            _ => {
                let Some(crn) = self.target_crn() else { return };
                if key != 'x' {
                    self.input = Some((Input::IgnoreFor { crn }, String::new()));
                    return;
                }
                Decision::Quarantine { crn }
            }
        };
        self.confirm = Some(decision);
    }

    fn on_confirm_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Char('y' | 'Y') => match self.confirm.take() {
                Some(d) => {
                    self.status = Some(format!("{}: sent", d.title()));
                    if matches!(d, Decision::Bulk { .. }) {
                        self.marked.clear();
                    }
                    vec![Effect::Decide(d)]
                }
                None => Vec::new(),
            },
            KeyCode::Char('n' | 'N' | 'q') | KeyCode::Esc => {
                self.confirm = None;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn on_input_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some((kind, mut text)) = self.input.take() else {
            return Vec::new();
        };
        match key.code {
            KeyCode::Esc => {
                if kind == Input::Filter && !self.filter.is_empty() {
                    self.filter.clear();
                    return self.requery();
                }
                return Vec::new();
            }
            KeyCode::Enter => {
                return match kind {
                    Input::Filter => self.set_filter(text.trim()),
                    Input::Command => self.command(&text),
                    Input::IgnoreFor { crn } => {
                        self.confirm_ignore(crn, &text);
                        Vec::new()
                    }
                    Input::MoveTo { crn, plan_hash } => {
                        self.confirm_move(crn, plan_hash, &text);
                        Vec::new()
                    }
                };
            }
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c) => text.push(c),
            _ => {}
        }
        let is_filter = kind == Input::Filter;
        self.input = Some((kind, text.clone()));
        if is_filter {
            // The table follows the filter as it is typed.
            return self.set_filter(text.trim());
        }
        Vec::new()
    }

    fn set_filter(&mut self, text: &str) -> Vec<Effect> {
        if self.filter == text {
            return Vec::new();
        }
        self.filter = text.to_owned();
        self.requery()
    }

    /// The ignore prompt's answer: a duration, or nothing for permanently.
    fn confirm_ignore(&mut self, crn: String, text: &str) {
        let ttl_seconds = if text.trim().is_empty() {
            0
        } else {
            match crate::cli::time::parse_duration(text) {
                Ok(d) if d.as_secs() > 0 => d.as_secs(),
                Ok(_) => {
                    self.status = Some("a duration of 0 ignores nothing: leave it empty for permanently".into());
                    return;
                }
                Err(e) => {
                    self.status = Some(e);
                    return;
                }
            }
        };
        self.confirm = Some(Decision::Ignore { crn, ttl_seconds });
    }

    /// The move prompt's answer: one of [`MOVE_STAGES`].
    fn confirm_move(&mut self, crn: String, plan_hash: String, text: &str) {
        let to = text.trim().to_ascii_lowercase();
        if !MOVE_STAGES.contains(&to.as_str()) {
            self.status = Some(format!("no stage {to:?}: one of {}", MOVE_STAGES.join(", ")));
            return;
        }
        self.confirm = Some(Decision::Move { crn, plan_hash, to });
    }

    /// Runs a `:` command.
    pub fn command(&mut self, line: &str) -> Vec<Effect> {
        let mut words = line.split_whitespace();
        let Some(verb) = words.next() else { return Vec::new() };
        let arg = words.next();
        match verb {
            "q" | "q!" | "quit" | "exit" => return vec![Effect::Quit],
            "nodes" | "node" | "no" => {
                self.detail = None;
                return self.switch(Screen::Nodes);
            }
            "queue" | "remediation" | "rem" => return self.switch(Screen::Queue),
            "ledger" | "events" | "led" => return self.switch(Screen::Ledger),
            "help" => self.help = true,
            "sort" => match arg.and_then(SortKey::parse) {
                Some(k) => {
                    self.sort = k;
                    self.descending = k == SortKey::Cost;
                    return self.requery();
                }
                None => self.status = Some("sort by: cost, name, type, state, provider or region".into()),
            },
            "filter" => {
                let text = line.trim_start().trim_start_matches("filter").trim().to_owned();
                return self.set_filter(&text);
            }
            "refresh" => {
                let mut out = self.reload_rows();
                out.push(Effect::LoadQueue);
                return out;
            }
            other => match Category::parse(other) {
                Some(c) => {
                    self.detail = None;
                    self.screen = Screen::Nodes;
                    return self.set_category(c);
                }
                None => self.status = Some(format!("unknown command :{other} (? lists them)")),
            },
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests;
