//! Snapshot tests of every screen, drawn with ratatui's `TestBackend` from
//! fixed data (no daemon), at 80x24 and 160x40, with and without colour.
//! Each snapshot is the text of the screen followed by the runs of styled
//! cells, stored under `src/tui/snapshots/`; `SVC_BLESS=1 cargo test -p svc
//! --bin svc tui::` writes them again.

use std::fmt::Write as _;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use serde_json::json;

use super::app::{App, Effect, Link, Msg, RowQuery};
use super::view;
use super::wire::{
    Affected, Blast, Edge, Envelope, Item, NodeDetail, NodeEdges, Oracle, Plan, PlanStep, ProofStep, Queue, Row,
    RowPage, Workspaces,
};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tui/snapshots");
const HASH: &str = "3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a";

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn row(provider: &str, ty: &str, id: &str, state: &str, cost: f64, waste: bool, phase: &str) -> Row {
    let (service, kind) = ty.split_once(':').unwrap_or(("x", ty));
    let category = match (service, kind) {
        ("ec2", "instance") => "compute",
        ("ec2", "eip") => "network",
        ("rds", _) => "database",
        ("lambda", _) => "serverless",
        ("eks", _) => "kubernetes",
        ("iam", _) => "other",
        _ => "storage",
    };
    Row {
        category: category.into(),
        crn: format!("crn:svc:{provider}:us-east-1:{service}:{kind}:123456789012:{id}"),
        ty: ty.into(),
        provider: provider.into(),
        region: "us-east-1".into(),
        state: state.into(),
        cost_usd_mo: cost,
        is_waste: waste,
        waste_reason: if waste {
            "unattached for 30 days".into()
        } else {
            String::new()
        },
        phase: phase.into(),
        reachability: if waste {
            "unreachable".into()
        } else {
            "reachable".into()
        },
    }
}

fn rows() -> Vec<Row> {
    vec![
        row(
            "aws",
            "ec2:instance",
            "i-0a1b2c3d4e5f60718",
            "running",
            140.16,
            false,
            "",
        ),
        row(
            "aws",
            "ec2:volume",
            "vol-0fedcba987654321",
            "available",
            80.0,
            true,
            "pending",
        ),
        row(
            "aws",
            "ec2:eip",
            "eipalloc-0123abcd",
            "unassociated",
            3.65,
            true,
            "flagged",
        ),
        row("aws", "rds:db", "orders-replica", "stopped", 91.98, true, "sau_gate"),
        row("aws", "lambda:function", "thumbnailer", "active", 0.42, false, ""),
        row("aws", "s3:bucket", "logs-archive-2019", "active", 12.5, false, ""),
        row("aws", "eks:nodegroup", "batch-spot", "ACTIVE", 280.32, false, ""),
        row("aws", "iam:role", "ci-deployer", "active", 0.0, false, ""),
        row(
            "gcp",
            "compute:disk",
            "pd-old-build-cache",
            "READY",
            40.0,
            true,
            "analyzed",
        ),
    ]
}

/// What the daemon answers `q` with over [`rows`], for the filters these
/// screens use (`waste:yes`, `state:` prefixes), most costly first.
fn answer(q: &RowQuery) -> Msg {
    let holds = |r: &Row| {
        q.filter.split_whitespace().all(|t| match t.split_once(':') {
            Some(("waste", v)) => r.is_waste == (v == "yes"),
            Some(("state", v)) => r.state.starts_with(v),
            _ => r.crn.contains(t),
        })
    };
    let mut matching: Vec<Row> = rows().into_iter().filter(holds).collect();
    matching.sort_by(|a, b| b.cost_usd_mo.total_cmp(&a.cost_usd_mo));
    let mut w = Workspaces::default();
    for r in &matching {
        let n = match r.category.as_str() {
            "compute" => &mut w.compute,
            "storage" => &mut w.storage,
            "network" => &mut w.network,
            "database" => &mut w.database,
            "serverless" => &mut w.serverless,
            "kubernetes" => &mut w.kubernetes,
            _ => &mut w.other,
        };
        *n += 1;
    }
    let shown: Vec<Row> = matching
        .into_iter()
        .filter(|r| q.category.query().is_none_or(|c| c == r.category))
        .collect();
    let total = shown.len() as u64;
    let page = RowPage {
        rows: shown.into_iter().skip(q.offset).take(q.limit).collect(),
        offset: q.offset as u64,
        total,
        workspaces: w,
    };
    Msg::Rows(q.clone(), page)
}

/// Answers every row question of `fx` and of the answers.
fn serve(app: &mut App, mut fx: Vec<Effect>) {
    while !fx.is_empty() {
        let mut next = Vec::new();
        for e in fx {
            if let Effect::LoadRows(q) = e {
                next.extend(app.apply(answer(&q)));
            }
        }
        fx = next;
    }
}

/// A key pressed with the daemon answering what it asks.
fn press(app: &mut App, c: char) {
    let fx = app.on_key(key(c));
    serve(app, fx);
}

fn operator(color: bool) -> App {
    let mut app = App::new("http://127.0.0.1:8080".into(), color);
    let fx = app.apply(Msg::Link(Link::Connected));
    serve(&mut app, fx);
    app.apply(Msg::Role("operator".into()));
    app
}

fn vol_crn() -> String {
    rows()[1].crn.clone()
}

fn with_detail(color: bool) -> App {
    let mut app = operator(color);
    let crn = vol_crn();
    let at = app.table.rows.iter().position(|r| r.crn == crn).unwrap();
    for _ in 0..at {
        press(&mut app, 'j');
    }
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(app.detail.as_ref().unwrap().crn, crn);
    let inst = rows()[0].crn.clone();
    app.apply(Msg::Node(
        crn.clone(),
        Box::new(NodeDetail {
            crn: crn.clone(),
            ty: "ec2:volume".into(),
            provider: "aws".into(),
            region: "us-east-1".into(),
            account: "123456789012".into(),
            state: "available".into(),
            cost_usd_mo: 80.0,
            is_waste: true,
            waste_reason: "unattached for 30 days".into(),
            risk_score: 12.0,
            verdict: "waste".into(),
            phase: "pending".into(),
            tags: [("team".to_owned(), "data".to_owned())].into(),
            properties: [
                ("size_gib".to_owned(), json!(800)),
                ("volume_type".to_owned(), json!("gp3")),
            ]
            .into(),
            ..NodeDetail::default()
        }),
    ));
    app.apply(Msg::Edges(
        crn.clone(),
        NodeEdges {
            incoming: vec![Edge {
                source_crn: "crn:svc:aws:us-east-1:ec2:snapshot:123456789012:snap-1".into(),
                target_crn: crn.clone(),
                relation: "Uses".into(),
                inferred: false,
            }],
            incoming_total: 1,
            ..NodeEdges::default()
        },
    ));
    app.apply(Msg::Blast(
        crn.clone(),
        Blast {
            affected: vec![Affected {
                crn: "crn:svc:aws:us-east-1:ec2:snapshot:123456789012:snap-1".into(),
                depth: 1,
                relation: "Uses".into(),
                cost_usd_mo: 4.0,
            }],
            affected_count: 1,
            total_cost_usd_mo: 4.0,
            max_depth: 1,
        },
    ));
    app.apply(Msg::Oracle(
        crn,
        Oracle {
            enabled: true,
            reachability: "unreachable".into(),
            proof: vec![ProofStep {
                from: "crn:svc:aws:us-east-1:elb:load-balancer:123456789012:web".into(),
                to: inst,
                relation: "FlowsTo".into(),
            }],
            ..Oracle::default()
        },
    ));
    app
}

fn with_queue(color: bool) -> App {
    let mut app = operator(color);
    let item = |crn: String, stage: &str, action: &str, saves: f64, hash: &str| Item {
        crn,
        stage: stage.into(),
        ty: "ec2:volume".into(),
        action: action.into(),
        plan_hash: hash.into(),
        savings_usd_mo: saves,
        risk_score: 12.0,
        reason: "unattached for 30 days".into(),
        blockers: Vec::new(),
    };
    let r = rows();
    app.apply(Msg::Queue(Queue {
        counts: [("pending", 1u64), ("sau_gate", 1), ("analyzed", 1), ("flagged", 1)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        stages: [
            (
                "pending".to_owned(),
                vec![item(r[1].crn.clone(), "pending", "delete", 80.0, HASH)],
            ),
            (
                "sau_gate".to_owned(),
                vec![item(r[3].crn.clone(), "sau_gate", "stop", 91.98, "ab12")],
            ),
            (
                "analyzed".to_owned(),
                vec![item(r[8].crn.clone(), "analyzed", "delete", 40.0, "")],
            ),
            (
                "flagged".to_owned(),
                vec![item(r[2].crn.clone(), "flagged", "release", 3.65, "")],
            ),
        ]
        .into(),
    }));
    app.on_key(key('Q'));
    app.apply(Msg::Plan(
        vol_crn(),
        Box::new(Plan {
            crn: vol_crn(),
            plan_hash: HASH.into(),
            intent: "delete".into(),
            stage: "pending".into(),
            savings_usd_mo: 80.0,
            blast_radius: 1,
            steps: vec![
                PlanStep {
                    index: 0,
                    action: "snapshot".into(),
                    inverse: "none".into(),
                },
                PlanStep {
                    index: 1,
                    action: "delete".into(),
                    inverse: "restore from snapshot".into(),
                },
            ],
            terraform: "  # aws_ebs_volume.vol will be destroyed\n  - resource \"aws_ebs_volume\" \"vol\" {\n      - size = 800\n    }".into(),
        }),
    ));
    app
}

fn ledger(color: bool) -> App {
    let mut app = operator(color);
    let ev = |seq: u64, ty: &str, crn: String, payload: serde_json::Value| Envelope {
        seq,
        event_type: ty.into(),
        timestamp: 1_790_000_000 + seq as i64,
        crn,
        actor: "svc tui".into(),
        message: String::new(),
        payload,
    };
    app.apply(Msg::Event(Box::new(ev(41, "SCAN_COMPLETED", String::new(), json!({})))));
    app.apply(Msg::Event(Box::new(ev(42, "APPROVAL", vol_crn(), json!({})))));
    app.apply(Msg::Event(Box::new(ev(
        43,
        "EXECUTION_COMMIT",
        vol_crn(),
        json!({ "compensating_payload_hash": HASH, "status": "SUCCESS" }),
    ))));
    app.on_key(key('l'));
    app
}

/// The screen as text, then each run of styled cells of each line.
fn render(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| view::draw(f, app)).unwrap();
    dump(term.backend().buffer())
}

fn style_name(fg: Color, bg: Color, m: Modifier) -> String {
    let mut s = String::new();
    if fg != Color::Reset {
        write!(s, " fg={fg:?}").unwrap();
    }
    if bg != Color::Reset {
        write!(s, " bg={bg:?}").unwrap();
    }
    if !m.is_empty() {
        write!(s, " {m:?}").unwrap();
    }
    s
}

fn dump(buf: &Buffer) -> String {
    let area = buf.area;
    let mut text = String::new();
    let mut styles = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        let mut run: Option<(u16, String)> = None;
        for x in 0..area.width {
            let c = &buf[(x, y)];
            line.push_str(c.symbol());
            let s = style_name(c.fg, c.bg, c.modifier);
            match &run {
                Some((_, cur)) if *cur == s => {}
                _ => {
                    if let Some((from, cur)) = run.take()
                        && !cur.is_empty()
                    {
                        writeln!(styles, "{y:>3} {from:>3}..{x:<3}{cur}").unwrap();
                    }
                    run = Some((x, s));
                }
            }
        }
        if let Some((from, cur)) = run
            && !cur.is_empty()
        {
            writeln!(styles, "{y:>3} {from:>3}..{:<3}{cur}", area.width).unwrap();
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    format!("{text}--- styles (line from..to style)\n{styles}")
}

/// Compares `have` with the stored snapshot `name`, or stores it.
fn check(name: &str, have: &str) {
    let path = format!("{DIR}/{name}.txt");
    if std::env::var_os("SVC_BLESS").is_some() {
        std::fs::create_dir_all(DIR).unwrap();
        std::fs::write(&path, have).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("no snapshot {path} ({e}); write it with SVC_BLESS=1 cargo test -p svc --bin svc tui::")
    });
    if want != have {
        let at = want.lines().zip(have.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{name} differs from {path} at line {}:\n want: {:?}\n have: {:?}\n\nwhole screen now:\n{have}\nIf the change is meant, run SVC_BLESS=1 cargo test -p svc --bin svc tui::",
            at + 1,
            want.lines().nth(at).unwrap_or(""),
            have.lines().nth(at).unwrap_or("")
        );
    }
}

/// Draws `make`'s state at both sizes, with and without colour.
fn screens(name: &str, make: impl Fn(bool) -> App) {
    for (w, h) in [(80, 24), (160, 40)] {
        for color in [true, false] {
            let snap = render(&make(color), w, h);
            let tag = if color { "color" } else { "plain" };
            check(&format!("{name}_{w}x{h}_{tag}"), &snap);
            if !color {
                assert!(
                    !snap.contains("fg=") && !snap.contains("bg="),
                    "{name}: colour without colour:\n{snap}"
                );
            }
        }
    }
}

#[test]
fn workspace_list() {
    screens("workspace_list", operator);
    let snap = render(&operator(false), 80, 24);
    assert!(snap.contains("vol-0fedcba987654321"), "{snap}");
    assert!(snap.contains("1:all 9"), "{snap}");
}

#[test]
fn workspace_storage() {
    screens("workspace_storage", |c| {
        let mut app = operator(c);
        press(&mut app, '3');
        app
    });
}

#[test]
fn filter_active() {
    let make = |c| {
        let mut app = operator(c);
        press(&mut app, '/');
        for ch in "waste:yes state:avail".chars() {
            press(&mut app, ch);
        }
        app
    };
    screens("filter_active", make);
    let snap = render(&make(false), 80, 24);
    assert!(
        snap.contains("[1/1]") && snap.contains("1:all 1 ") && snap.contains("/waste:yes state:avail█"),
        "{snap}"
    );
}

#[test]
fn detail_pane() {
    screens("detail_pane", with_detail);
    let snap = render(&with_detail(false), 160, 40);
    for want in [
        "blast radius: 1 resources",
        "reachability proof",
        "unreachable",
        "size_gib",
        "← Uses",
    ] {
        assert!(snap.contains(want), "{want} missing:\n{snap}");
    }
}

#[test]
fn queue_with_plan() {
    screens("queue_with_plan", with_queue);
    let snap = render(&with_queue(false), 160, 40);
    assert!(
        snap.contains(HASH) && snap.contains("2. delete  ↶ restore from snapshot"),
        "{snap}"
    );
}

#[test]
fn confirmation_dialog() {
    let make = |c| {
        let mut app = with_queue(c);
        app.on_key(key('a'));
        app
    };
    screens("confirmation_dialog", make);
    let snap = render(&make(false), 80, 24);
    assert!(snap.contains("Approve remediation?") && snap.contains(HASH), "{snap}");
}

#[test]
fn viewer_queue_has_no_decisions() {
    let make = |c| {
        let mut app = with_queue(c);
        app.apply(Msg::Role("viewer".into()));
        app
    };
    screens("queue_viewer", make);
    let snap = render(&make(false), 80, 24);
    assert!(!snap.contains("a approve") && snap.contains("viewer"), "{snap}");
}

#[test]
fn ledger_live() {
    screens("ledger", ledger);
    let snap = render(&ledger(false), 80, 24);
    assert!(snap.contains("EXECUTION_COMMIT"), "{snap}");
}

#[test]
fn help_overlay() {
    let make = |c| {
        let mut app = operator(c);
        app.on_key(key('?'));
        app
    };
    screens("help", make);
    assert!(render(&make(false), 80, 24).contains("approve, reject"));
}

#[test]
fn disconnected_banner() {
    let make = |c| {
        let mut app = operator(c);
        app.apply(Msg::Link(Link::Disconnected {
            reason: "connection refused".into(),
            attempt: 3,
        }));
        app
    };
    screens("disconnected", make);
    let snap = render(&make(false), 80, 24);
    assert!(
        snap.contains("DISCONNECTED, reconnecting (try 3): connection refused"),
        "{snap}"
    );
}

#[test]
fn tiny_terminal_does_not_panic() {
    for (w, h) in [(1, 1), (10, 3), (20, 5), (0, 0)] {
        for app in [with_detail(true), with_queue(false), ledger(true)] {
            let mut app = app;
            render(&app, w, h);
            app.on_key(key('?'));
            render(&app, w, h);
        }
    }
}

#[test]
fn ignore_prompt_and_bulk_confirmation() {
    let prompt = |c| {
        let mut app = operator(c);
        press(&mut app, 'i');
        for ch in "7d".chars() {
            press(&mut app, ch);
        }
        app
    };
    screens("ignore_prompt", prompt);
    let snap = render(&prompt(false), 80, 24);
    assert!(
        snap.contains("ignore for (7d, 12h, 30m; empty: permanently): 7d█"),
        "{snap}"
    );
    let mut app = prompt(false);
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(render(&app, 80, 24).contains("adds it to the ignore list for 7days"));

    let bulk = |c| {
        let mut app = with_queue(c);
        press(&mut app, ' ');
        press(&mut app, ' ');
        press(&mut app, 'A');
        app
    };
    screens("bulk_confirmation", bulk);
    let snap = render(&bulk(false), 80, 24);
    assert!(
        snap.contains("Approve the marked remediations?") && snap.contains("2 items") && snap.contains("marked 2"),
        "{snap}"
    );
}
