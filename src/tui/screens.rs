//! The screens: the node table with its workspaces, the detail pane, the
//! remediation queue with the selected item's plan, and the ledger.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row as TRow, Table, TableState, Wrap};

use super::app::{App, Detail, STAGES};
use super::model::{self, Category, clip, money, short_name};
use super::theme::Theme;

/// Screens at least this wide show the full CRN and more columns.
const WIDE: u16 = 120;

fn boxed(title: String) -> Block<'static> {
    Block::default().borders(Borders::ALL).title(title)
}

/// The workspace tabs with their counts, shortened to fit `width`.
pub fn workspace_line(app: &App, t: Theme, width: u16) -> Line<'static> {
    let counts = app.table.workspaces;
    let full: usize = Category::ALL
        .iter()
        .zip(counts)
        .map(|(c, n)| c.name().len() + n.to_string().len() + 4)
        .sum();
    let short = full > usize::from(width);
    let mut spans = Vec::new();
    for (i, (c, n)) in Category::ALL.iter().zip(counts).enumerate() {
        let name = if short && *c != app.category {
            match c {
                Category::Kubernetes => "k8s".to_owned(),
                Category::Serverless => "srvl".to_owned(),
                other => other.name()[..3.min(other.name().len())].to_owned(),
            }
        } else {
            c.name().to_owned()
        };
        let style = if *c == app.category { t.selected() } else { Style::new() };
        spans.push(Span::styled(format!("{}:{name} {n}", i + 1), style));
        spans.push(Span::raw(" "));
    }
    Line::from(spans)
}

pub fn nodes(f: &mut Frame, app: &App, t: Theme, area: Rect) {
    let [tabs, table] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    f.render_widget(Paragraph::new(workspace_line(app, t, area.width)), tabs);
    let table_rows = &app.table;
    let wide = area.width >= WIDE;
    let position = if table_rows.total == 0 { 0 } else { app.selected + 1 };
    let mut title = format!(
        " {} [{}/{}] sort:{}{} ",
        app.category.name(),
        position,
        table_rows.total,
        app.sort.name(),
        if app.descending { "↓" } else { "↑" }
    );
    if !app.filter.is_empty() {
        title.push_str(&format!("/{} ", app.filter));
    }
    if !table_rows.loaded || app.selected_row().is_none() && table_rows.total > 0 {
        title.push_str("loading… ");
    }
    let header = if wide {
        TRow::new(["CRN", "TYPE", "STATE", "$/MO", "WASTE", "PHASE", "REACH", "REASON"])
    } else {
        TRow::new(["NAME", "TYPE", "STATE", "$/MO", "W", "PHASE"])
    }
    .style(t.title());
    let rows = table_rows.rows.iter().map(|r| {
        let waste = if r.is_waste {
            Span::styled("●", t.bad())
        } else {
            Span::raw("")
        };
        let name = if wide {
            r.crn.clone()
        } else {
            short_name(&r.crn).to_owned()
        };
        let mut cells = vec![
            Cell::from(name),
            Cell::from(r.ty.clone()),
            Cell::from(r.state.clone()),
            Cell::from(money(r.cost_usd_mo)),
            Cell::from(waste),
            Cell::from(r.phase.clone()),
        ];
        if wide {
            cells.push(Cell::from(r.reachability.clone()));
            cells.push(Cell::from(r.waste_reason.clone()));
        }
        TRow::new(cells)
    });
    let widths: Vec<Constraint> = if wide {
        vec![
            Constraint::Percentage(40),
            Constraint::Length(18),
            Constraint::Length(10),
            Constraint::Length(11),
            Constraint::Length(5),
            Constraint::Length(9),
            Constraint::Length(11),
            Constraint::Fill(1),
        ]
    } else {
        vec![
            Constraint::Fill(1),
            Constraint::Length(16),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(1),
            Constraint::Length(8),
        ]
    };
    let table_w = Table::new(rows, widths)
        .header(header)
        .block(boxed(title))
        .row_highlight_style(t.selected());
    let at = app
        .selected
        .checked_sub(table_rows.offset)
        .filter(|i| *i < table_rows.rows.len());
    let mut state = TableState::default().with_selected(at);
    f.render_stateful_widget(table_w, table, &mut state);
}

fn section(t: Theme, name: &str) -> Line<'static> {
    Line::from(Span::styled(format!("── {name} "), t.title()))
}

fn kv(t: Theme, k: &str, v: String) -> Line<'static> {
    Line::from(vec![Span::styled(format!("{k:>13} "), t.dim()), Span::raw(v)])
}

/// The detail pane's lines: node, properties, tags, edges, blast radius
/// and the reachability proof, each as far as it has arrived.
pub fn detail_lines(d: &Detail, t: Theme) -> Vec<Line<'static>> {
    let loading = || Line::from(Span::styled("  loading…", t.dim()));
    let mut out = vec![section(t, "node")];
    match &d.node {
        Some(n) => {
            out.push(kv(t, "type", n.ty.clone()));
            out.push(kv(t, "provider", format!("{} {} {}", n.provider, n.region, n.account)));
            out.push(kv(t, "state", n.state.clone()));
            out.push(kv(t, "cost", format!("{}/mo", money(n.cost_usd_mo))));
            let waste = if n.is_waste {
                format!("yes: {}", n.waste_reason)
            } else {
                "no".into()
            };
            out.push(Line::from(vec![
                Span::styled(format!("{:>13} ", "waste"), t.dim()),
                Span::styled(waste, if n.is_waste { t.bad() } else { Style::new() }),
            ]));
            out.push(kv(t, "risk", format!("{:.0} ({})", n.risk_score, n.verdict)));
            out.push(kv(
                t,
                "phase",
                if n.phase.is_empty() {
                    "-".into()
                } else {
                    n.phase.clone()
                },
            ));
            out.push(section(t, &format!("properties ({})", n.properties.len())));
            for (k, v) in &n.properties {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.push(kv(t, k, v));
            }
            out.push(section(t, &format!("tags ({})", n.tags.len())));
            for (k, v) in &n.tags {
                out.push(kv(t, k, v.clone()));
            }
        }
        None => out.push(loading()),
    }
    match &d.edges {
        Some(e) => {
            out.push(section(
                t,
                &format!("edges (out {}, in {})", e.outgoing_total, e.incoming_total),
            ));
            for x in &e.outgoing {
                out.push(Line::raw(format!("  → {:<10} {}", x.relation, x.target_crn)));
            }
            for x in &e.incoming {
                out.push(Line::raw(format!("  ← {:<10} {}", x.relation, x.source_crn)));
            }
        }
        None => {
            out.push(section(t, "edges"));
            out.push(loading());
        }
    }
    match &d.blast {
        Some(b) => {
            out.push(section(
                t,
                &format!(
                    "blast radius: {} resources, {}/mo, depth {}",
                    b.affected_count,
                    money(b.total_cost_usd_mo),
                    b.max_depth
                ),
            ));
            for a in &b.affected {
                out.push(Line::raw(format!("  {} {:<10} {}", a.depth, a.relation, a.crn)));
            }
        }
        None => {
            out.push(section(t, "blast radius"));
            out.push(loading());
        }
    }
    out.push(section(t, "reachability proof"));
    match &d.oracle {
        Some(o) if !o.enabled => out.push(Line::raw("  the oracle is disabled (oracle.enabled)")),
        Some(o) => {
            let style = if o.reachability == "reachable" {
                t.warn()
            } else {
                t.good()
            };
            out.push(Line::from(vec![
                Span::styled(format!("{:>13} ", "reachability"), t.dim()),
                Span::styled(o.reachability.clone(), style),
            ]));
            if o.entry_point {
                out.push(kv(t, "entry point", "itself".into()));
            } else if let Some(e) = &o.entry_crn {
                out.push(kv(t, "entry point", e.clone()));
            }
            for s in &o.proof {
                out.push(Line::raw(format!("  {} ─{}→ {}", s.from, s.relation, s.to)));
            }
            if o.proof.is_empty() && o.reachability != "reachable" {
                out.push(Line::raw("  no path from any entry point reaches it"));
            }
        }
        None => out.push(loading()),
    }
    out
}

pub fn detail(f: &mut Frame, d: &Detail, t: Theme, area: Rect) {
    let p = Paragraph::new(detail_lines(d, t))
        .block(boxed(format!(" {} ", d.crn)))
        .wrap(Wrap { trim: false });
    // The last page stays full: never scrolled past the end. The count is
    // of the text wrapped inside the borders, plus the borders.
    let rows = p.line_count(area.width.saturating_sub(2));
    let last = u16::try_from(rows.saturating_sub(usize::from(area.height))).unwrap_or(u16::MAX);
    d.max_scroll.set(last.max(1));
    let p = p.scroll((d.scroll.min(last), 0));
    f.render_widget(p, area);
}

pub fn queue(f: &mut Frame, app: &App, t: Theme, area: Rect) {
    let [counts, rest] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    let mut spans = Vec::new();
    if let Some(q) = &app.queue {
        for s in STAGES {
            let n = q.counts.get(s).copied().unwrap_or(0);
            spans.push(Span::styled(
                format!("{s} {n}"),
                if n > 0 { t.title() } else { t.dim() },
            ));
            spans.push(Span::raw("  "));
        }
    } else {
        spans.push(Span::styled("loading the queue…", t.dim()));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), counts);
    let (list, plan) = if area.width >= WIDE {
        let [a, b] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(rest);
        (a, b)
    } else {
        let [a, b] = Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(rest);
        (a, b)
    };
    let items = app.queue_items();
    let rows = items.iter().map(|i| {
        let mark = if app.marked.contains(&i.crn) { "*" } else { " " };
        TRow::new([
            Cell::from(Span::styled(mark, t.warn())),
            Cell::from(i.stage.clone()),
            Cell::from(short_name(&i.crn).to_owned()),
            Cell::from(i.action.clone()),
            Cell::from(money(i.savings_usd_mo)),
            Cell::from(format!("{:.0}", i.risk_score)),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(1),
            Constraint::Length(9),
            Constraint::Fill(1),
            Constraint::Length(16),
            Constraint::Length(10),
            Constraint::Length(4),
        ],
    )
    .header(TRow::new(["", "STAGE", "NAME", "ACTION", "SAVES/MO", "RISK"]).style(t.title()))
    .block(boxed(if app.marked.is_empty() {
        format!(" remediation queue [{}] ", items.len())
    } else {
        format!(" remediation queue [{}] marked {} ", items.len(), app.marked.len())
    }))
    .row_highlight_style(t.selected());
    let mut state = TableState::default().with_selected(if items.is_empty() {
        None
    } else {
        Some(app.queue_selected)
    });
    f.render_stateful_widget(table, list, &mut state);
    let lines = match (app.selected_item(), &app.plan) {
        (None, _) => vec![Line::styled("nothing in the queue", t.dim())],
        (Some(i), None) if i.plan_hash.is_empty() => vec![
            Line::raw(i.crn.clone()),
            Line::styled(format!("no plan yet (stage {})", i.stage), t.dim()),
            Line::raw(i.reason.clone()),
        ],
        (Some(_), None) => vec![Line::styled("loading the plan…", t.dim())],
        (Some(i), Some(p)) => plan_lines(i, p, t),
    };
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(boxed(" plan ".into())),
        plan,
    );
}

fn plan_lines(i: &super::wire::Item, p: &super::wire::Plan, t: Theme) -> Vec<Line<'static>> {
    let mut out = vec![
        Line::raw(p.crn.clone()),
        Line::from(vec![
            Span::styled("sha256 ", t.dim()),
            Span::styled(p.plan_hash.clone(), t.warn()),
        ]),
        Line::raw(format!(
            "{} · saves {}/mo · blast radius {} · stage {}",
            p.intent,
            money(p.savings_usd_mo),
            p.blast_radius,
            p.stage
        )),
    ];
    for b in &i.blockers {
        out.push(Line::styled(format!("held: {b}"), t.bad()));
    }
    for s in &p.steps {
        out.push(Line::raw(format!("{}. {}  ↶ {}", s.index + 1, s.action, s.inverse)));
    }
    for l in p.terraform.lines() {
        let style = match l.trim_start().chars().next() {
            Some('-') => t.bad(),
            Some('+') => t.good(),
            Some('~') => t.warn(),
            _ => Style::new(),
        };
        out.push(Line::styled(l.to_owned(), style));
    }
    out
}

pub fn ledger(f: &mut Frame, app: &App, t: Theme, area: Rect) {
    let wide = area.width >= WIDE;
    let rows = app.ledger.iter().map(|e| {
        let ty_style = match e.event_type.as_str() {
            "EXECUTION_ROLLBACK" | "REJECTION" | "LOCK_TIMEOUT" => t.bad(),
            "EXECUTION_COMMIT" | "APPROVAL" => t.good(),
            "QUARANTINE" | "ISOLATION" => t.warn(),
            _ => Style::new(),
        };
        let who = if e.crn.is_empty() {
            e.message.clone()
        } else {
            e.crn.clone()
        };
        let mut cells = vec![
            Cell::from(e.seq.to_string()),
            Cell::from(model::clock(e.timestamp)),
            Cell::from(Span::styled(e.event_type.clone(), ty_style)),
            Cell::from(if wide { who } else { clip(short_name(&who), 40) }),
        ];
        if wide {
            cells.push(Cell::from(e.actor.clone()));
            cells.push(Cell::from(if e.revert_hash().is_some() { "undo" } else { "" }));
        }
        TRow::new(cells)
    });
    let widths: Vec<Constraint> = if wide {
        vec![
            Constraint::Length(7),
            Constraint::Length(8),
            Constraint::Length(20),
            Constraint::Fill(1),
            Constraint::Length(14),
            Constraint::Length(4),
        ]
    } else {
        vec![
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(20),
            Constraint::Fill(1),
        ]
    };
    let header = if wide {
        TRow::new(["SEQ", "TIME", "EVENT", "RESOURCE", "ACTOR", ""])
    } else {
        TRow::new(["SEQ", "TIME", "EVENT", "RESOURCE"])
    };
    let table = Table::new(rows, widths)
        .header(header.style(t.title()))
        .block(boxed(format!(" ledger, live [{}] ", app.ledger.len())))
        .row_highlight_style(t.selected());
    let sel = if app.ledger.is_empty() {
        None
    } else {
        Some(app.ledger_selected)
    };
    let mut state = TableState::default().with_selected(sel);
    f.render_stateful_widget(table, area, &mut state);
}
