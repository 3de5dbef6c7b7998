//! What keys and answers do to the state.
use super::*;

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn code(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn row(name: &str, ty: &str, cost: f64) -> Row {
    let category = if ty.ends_with("volume") { "storage" } else { "compute" };
    Row {
        category: category.into(),
        crn: format!("crn:svc:aws:us-east-1:{}:1:{name}", ty),
        provider: "aws".into(),
        ty: ty.into(),
        cost_usd_mo: cost,
        ..Row::default()
    }
}

fn item(crn: &str, stage: &str, hash: &str) -> Item {
    Item {
        crn: crn.into(),
        stage: stage.into(),
        plan_hash: hash.into(),
        ..Item::default()
    }
}

/// The daemon's answer to `q` over `rows` (already in the order asked
/// for): the rows of its workspace whose CRN holds the filter, cut to its
/// window.
fn answer(q: &RowQuery, rows: &[Row]) -> Msg {
    let matching: Vec<&Row> = rows.iter().filter(|r| r.crn.contains(q.filter.as_str())).collect();
    let mut w = crate::tui::wire::Workspaces::default();
    for r in &matching {
        match r.category.as_str() {
            "storage" => w.storage += 1,
            _ => w.compute += 1,
        }
    }
    let shown: Vec<Row> = matching
        .into_iter()
        .filter(|r| q.category.query().is_none_or(|c| c == r.category))
        .cloned()
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

/// The row questions among `fx`.
fn row_queries(fx: &[Effect]) -> Vec<RowQuery> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::LoadRows(q) => Some(q.clone()),
            _ => None,
        })
        .collect()
}

/// Answers every row question of `fx`, and those the answers raise.
fn serve(app: &mut App, fx: Vec<Effect>, rows: &[Row]) -> Vec<Effect> {
    let mut rest = Vec::new();
    let mut pending = fx;
    while !pending.is_empty() {
        let mut next = Vec::new();
        for e in pending {
            match e {
                Effect::LoadRows(q) => next.extend(app.apply(answer(&q, rows))),
                other => rest.push(other),
            }
        }
        pending = next;
    }
    rest
}

fn app_with_rows() -> App {
    let mut app = App::new("http://x".into(), true);
    let fx = app.apply(Msg::Link(Link::Connected));
    serve(
        &mut app,
        fx,
        &[row("b", "ec2:volume", 30.0), row("a", "ec2:instance", 10.0)],
    );
    app
}

#[test]
fn reconnecting_reloads_everything() {
    let mut app = App::new("http://x".into(), true);
    let fx = app.apply(Msg::Link(Link::Connected));
    let q = RowQuery {
        generation: 0,
        category: Category::All,
        filter: String::new(),
        sort: SortKey::Cost,
        descending: true,
        offset: 0,
        limit: WINDOW,
    };
    assert_eq!(
        fx,
        vec![Effect::LoadSession, Effect::LoadRows(q.clone()), Effect::LoadQueue]
    );
    assert!(app.apply(Msg::Link(Link::Connected)).is_empty());
    app.apply(Msg::Link(Link::Disconnected {
        reason: "refused".into(),
        attempt: 1,
    }));
    assert_eq!(
        app.apply(Msg::Link(Link::Connected)),
        vec![Effect::LoadSession, Effect::LoadQueue],
        "the rows are asked for once the question still out is answered"
    );
    assert_eq!(app.apply(answer(&q, &[])), vec![Effect::LoadRows(q)]);
}

#[test]
fn enter_opens_the_detail_and_q_closes_it() {
    let mut app = app_with_rows();
    let fx = app.on_key(code(KeyCode::Enter));
    let crn = "crn:svc:aws:us-east-1:ec2:volume:1:b".to_owned();
    assert_eq!(fx, vec![Effect::LoadDetail(crn.clone())]);
    assert_eq!(app.detail.as_ref().map(|d| d.crn.clone()), Some(crn));
    assert!(app.on_key(key('q')).is_empty());
    assert!(app.detail.is_none());
    assert_eq!(app.on_key(key('q')), vec![Effect::Quit]);
}

#[test]
fn filter_typing_asks_one_question_at_a_time_and_keeps_the_newest() {
    let rows = [row("b", "ec2:volume", 30.0), row("a", "ec2:instance", 10.0)];
    let mut app = app_with_rows();
    app.on_key(key('/'));
    let first = row_queries(&app.on_key(key('v')));
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].filter, "v");
    assert!(app.on_key(key('o')).is_empty(), "one question at a time");
    assert!(app.on_key(key('l')).is_empty());
    // The answer to "v" is out of date: dropped, and the newest is asked.
    let next = row_queries(&app.apply(answer(&first[0], &rows)));
    assert_eq!((next.len(), next[0].filter.as_str()), (1, "vol"));
    assert_eq!(app.table.total, 2, "an out-of-date answer is not shown");
    app.apply(answer(&next[0], &rows));
    assert_eq!((app.table.total, app.table.rows.len()), (1, 1));
    assert_eq!(app.table.workspaces[2], 1);
    app.on_key(code(KeyCode::Enter));
    assert_eq!(app.filter, "vol");
    let fx = app.on_key(code(KeyCode::Esc));
    assert_eq!(app.filter, "");
    serve(&mut app, fx, &rows);
    assert_eq!(app.table.total, 2);
}

#[test]
fn the_window_follows_the_selection_through_a_large_table() {
    let rows: Vec<Row> = (0..10_000)
        .map(|i| row(&format!("v{i:05}"), "ec2:volume", 10_000.0 - f64::from(i)))
        .collect();
    let mut app = App::new("http://x".into(), true);
    let fx = app.apply(Msg::Link(Link::Connected));
    serve(&mut app, fx, &rows);
    assert_eq!(
        (app.table.offset, app.table.rows.len(), app.table.total),
        (0, WINDOW, 10_000)
    );
    // Within the window: no question.
    for _ in 0..10 {
        assert!(row_queries(&app.on_key(key('j'))).is_empty());
    }
    // The end: the window around it is asked for, and holds it.
    let q = row_queries(&app.on_key(key('G')));
    assert_eq!((q.len(), q[0].offset), (1, 9_999 - WINDOW / 2));
    assert_eq!(app.selected_row(), None, "not loaded yet");
    app.apply(answer(&q[0], &rows));
    assert_eq!(app.selected_row().map(|r| r.crn.ends_with("v09999")), Some(true));
    // Nearing the window's start moves it back.
    let fx = app.on_key(code(KeyCode::PageUp));
    assert!(row_queries(&fx).is_empty(), "still well inside");
    let mut asked = Vec::new();
    for _ in 0..20 {
        asked.extend(row_queries(&app.on_key(code(KeyCode::PageUp))));
    }
    assert_eq!(asked.len(), 1, "one question while it is out: {asked:?}");
    let fx = app.apply(answer(&asked[0], &rows));
    let fx = serve(&mut app, fx, &rows);
    assert!(fx.is_empty());
    let at = app.selected;
    assert_eq!(app.selected_row().map(|r| r.crn.clone()), Some(rows[at].crn.clone()));
    // A workspace with nothing in it.
    let fx = app.on_key(key('2'));
    serve(&mut app, fx, &rows);
    assert_eq!((app.table.total, app.selected, app.selected_row()), (0, 0, None));
}

#[test]
fn workspaces_by_tab_number_and_command() {
    let mut app = app_with_rows();
    let fx = app.on_key(code(KeyCode::Tab));
    assert_eq!(app.category, Category::Compute);
    assert_eq!(row_queries(&fx)[0].category, Category::Compute);
    app.table = Rows::default();
    app.on_key(key('3'));
    assert_eq!(app.category, Category::Storage);
    app.table = Rows::default();
    let fx = app.command("k8s");
    assert_eq!(row_queries(&fx)[0].category, Category::Kubernetes);
    assert_eq!(app.category, Category::Kubernetes);
    assert_eq!(app.command("quit"), vec![Effect::Quit]);
    app.table = Rows::default();
    let fx = app.command("sort name");
    assert_eq!((app.sort, app.descending), (SortKey::Name, false));
    assert_eq!(
        (row_queries(&fx)[0].sort, row_queries(&fx)[0].descending),
        (SortKey::Name, false)
    );
    app.command("bogus");
    assert!(app.status.as_deref().is_some_and(|s| s.contains(":bogus")));
}

#[test]
fn approve_names_the_plan_on_screen_after_confirmation() {
    let mut app = App::new("http://x".into(), true);
    app.apply(Msg::Role("operator".into()));
    let fx = app.apply(Msg::Queue(Queue {
        stages: [("pending".to_owned(), vec![item("crn:a", "pending", "h-item")])].into(),
        ..Queue::default()
    }));
    assert_eq!(fx, vec![Effect::LoadPlan("crn:a".into())]);
    app.on_key(key('Q'));
    app.apply(Msg::Plan(
        "crn:a".into(),
        Box::new(Plan {
            crn: "crn:a".into(),
            plan_hash: "h-plan".into(),
            ..Plan::default()
        }),
    ));
    assert!(app.on_key(key('a')).is_empty());
    let want = Decision::Approve {
        crn: "crn:a".into(),
        plan_hash: "h-plan".into(),
    };
    assert_eq!(app.confirm, Some(want.clone()));
    assert!(app.on_key(key('z')).is_empty(), "other keys do not confirm");
    assert_eq!(app.on_key(key('y')), vec![Effect::Decide(want)]);
    assert!(app.confirm.is_none());
}

#[test]
fn a_changed_plan_is_loaded_again() {
    let mut app = App::new("http://x".into(), true);
    let queue = |hash: &str| {
        Msg::Queue(Queue {
            stages: [("pending".to_owned(), vec![item("crn:a", "pending", hash)])].into(),
            ..Queue::default()
        })
    };
    assert_eq!(app.apply(queue("h1")), vec![Effect::LoadPlan("crn:a".into())]);
    let plan = Plan {
        crn: "crn:a".into(),
        plan_hash: "h1".into(),
        ..Plan::default()
    };
    app.apply(Msg::Plan("crn:a".into(), Box::new(plan)));
    assert!(app.apply(queue("h1")).is_empty(), "the same plan is kept");
    assert_eq!(app.apply(queue("h2")), vec![Effect::LoadPlan("crn:a".into())]);
    assert!(app.plan.is_none());
    assert_eq!(
        app.apply(Msg::Refused("plan changed (409)".into())),
        vec![Effect::LoadQueue]
    );
    assert!(
        app.apply(Msg::Failed("cannot connect".into())).is_empty(),
        "a failed load does not retry by itself"
    );
}

#[test]
fn a_viewer_is_not_asked_to_decide() {
    let mut app = App::new("http://x".into(), true);
    app.apply(Msg::Role("viewer".into()));
    app.apply(Msg::Queue(Queue {
        stages: [("pending".to_owned(), vec![item("crn:a", "pending", "h")])].into(),
        ..Queue::default()
    }));
    app.on_key(key('Q'));
    app.on_key(key('a'));
    assert!(app.confirm.is_none());
    assert!(app.status.as_deref().is_some_and(|s| s.contains("viewer")));
}

#[test]
fn ledger_is_newest_first_without_duplicates_and_reverts_by_hash() {
    let mut app = App::new("http://x".into(), true);
    app.apply(Msg::Role("admin".into()));
    let hash = "ab".repeat(32);
    let ev = |seq, ty: &str| Envelope {
        seq,
        event_type: ty.into(),
        crn: "crn:a".into(),
        payload: serde_json::json!({ "compensating_payload_hash": hash }),
        ..Envelope::default()
    };
    let fx = app.apply(Msg::Event(Box::new(ev(1, "SCAN_COMPLETED"))));
    assert_eq!(row_queries(&fx).len(), 1, "a scan reloads the rows");
    app.apply(Msg::Event(Box::new(ev(2, "EXECUTION_COMMIT"))));
    app.apply(Msg::Event(Box::new(ev(2, "EXECUTION_COMMIT"))));
    assert_eq!(app.ledger.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 1]);
    app.on_key(key('l'));
    app.on_key(key('u'));
    assert!(matches!(&app.confirm, Some(Decision::Revert { hash: h, .. }) if *h == hash));
}

#[test]
fn ignore_asks_for_how_long() {
    let mut app = app_with_rows();
    app.apply(Msg::Role("operator".into()));
    let crn = app.selected_row().unwrap().crn.clone();
    app.on_key(key('i'));
    assert!(matches!(&app.input, Some((Input::IgnoreFor { crn: c }, _)) if *c == crn));
    for c in "soon".chars() {
        app.on_key(key(c));
    }
    app.on_key(code(KeyCode::Enter));
    assert!(app.confirm.is_none());
    assert!(
        app.status.as_deref().is_some_and(|s| s.contains("invalid duration")),
        "{:?}",
        app.status
    );
    app.on_key(key('i'));
    for c in "7d".chars() {
        app.on_key(key(c));
    }
    app.on_key(code(KeyCode::Enter));
    assert_eq!(
        app.confirm,
        Some(Decision::Ignore {
            crn: crn.clone(),
            ttl_seconds: 7 * 86_400
        })
    );
    app.on_key(key('n'));
    app.on_key(key('i'));
    app.on_key(code(KeyCode::Enter));
    assert_eq!(app.confirm, Some(Decision::Ignore { crn, ttl_seconds: 0 }));
}

#[test]
fn marked_items_are_decided_together_and_one_moves() {
    let mut app = App::new("http://x".into(), true);
    app.apply(Msg::Role("operator".into()));
    app.apply(Msg::Queue(Queue {
        stages: [(
            "pending".to_owned(),
            vec![
                item("crn:a", "pending", "ha"),
                item("crn:b", "pending", ""),
                item("crn:c", "pending", "hc"),
            ],
        )]
        .into(),
        ..Queue::default()
    }));
    app.on_key(key('Q'));
    app.on_key(key(' '));
    app.on_key(key(' '));
    app.on_key(key(' '));
    assert_eq!(app.marked.len(), 3);
    app.on_key(key('A'));
    let want = Decision::Bulk {
        approve: true,
        items: vec![("crn:a".into(), "ha".into()), ("crn:c".into(), "hc".into())],
    };
    assert_eq!(app.confirm, Some(want.clone()));
    assert!(app.status.as_deref().is_some_and(|s| s.starts_with("1 marked item")));
    assert_eq!(app.on_key(key('y')), vec![Effect::Decide(want)]);
    assert!(app.marked.is_empty());

    // Without marks, R rejects the selected item.
    app.on_key(key('g'));
    app.on_key(key('R'));
    assert_eq!(
        app.confirm,
        Some(Decision::Bulk {
            approve: false,
            items: vec![("crn:a".into(), "ha".into())]
        })
    );
    app.on_key(code(KeyCode::Esc));

    app.on_key(key('m'));
    for c in "nowhere".chars() {
        app.on_key(key(c));
    }
    app.on_key(code(KeyCode::Enter));
    assert!(app.status.as_deref().is_some_and(|s| s.contains("no stage")));
    app.on_key(key('m'));
    for c in "analyzed".chars() {
        app.on_key(key(c));
    }
    app.on_key(code(KeyCode::Enter));
    assert_eq!(
        app.confirm,
        Some(Decision::Move {
            crn: "crn:a".into(),
            plan_hash: "ha".into(),
            to: "analyzed".into()
        })
    );
    // A marked item that left the queue is unmarked.
    app.on_key(code(KeyCode::Esc));
    app.on_key(key(' '));
    app.apply(Msg::Queue(Queue::default()));
    assert!(app.marked.is_empty());
}

#[test]
fn the_selection_stays_on_its_resource_when_the_rows_move() {
    let mut rows = vec![
        row("c", "ec2:volume", 50.0),
        row("b", "ec2:volume", 30.0),
        row("a", "ec2:instance", 10.0),
    ];
    let mut app = App::new("http://x".into(), true);
    let fx = app.apply(Msg::Link(Link::Connected));
    serve(&mut app, fx, &rows);
    app.on_key(key('j'));
    let b = app.selected_row().unwrap().crn.clone();
    // A scan makes a new resource the costliest: `b` is now third.
    rows.insert(0, row("d", "ec2:volume", 90.0));
    let fx = app.apply(Msg::Event(Box::new(Envelope {
        seq: 9,
        event_type: "SCAN_COMPLETED".into(),
        ..Envelope::default()
    })));
    serve(&mut app, fx, &rows);
    assert_eq!((app.selected, app.selected_row().map(|r| r.crn.clone())), (2, Some(b)));
    // A new filter starts at the top.
    let fx = app.command("filter a");
    serve(&mut app, fx, &rows);
    assert_eq!(app.selected, 0);
}

#[test]
fn a_failed_window_is_said_and_the_next_question_still_goes() {
    let rows = [row("b", "ec2:volume", 30.0)];
    let mut app = App::new("http://x".into(), true);
    let first = row_queries(&app.apply(Msg::Link(Link::Connected)));
    assert_eq!(first.len(), 1);
    // Asked while the first is out: kept, then sent once it failed.
    assert!(row_queries(&app.on_key(key('2'))).is_empty());
    let next = row_queries(&app.apply(Msg::RowsFailed("the daemon did not answer in time".into())));
    assert_eq!((next.len(), next[0].category), (1, Category::Compute));
    assert_eq!(app.status.as_deref(), Some("the daemon did not answer in time"));
    assert!(app.table.loaded, "the table stops saying loading");
    app.apply(answer(&next[0], &rows));
    assert_eq!(app.table.total, 0);
    // Nothing queued: a failure asks nothing more.
    assert!(app.apply(Msg::RowsFailed("refused".into())).is_empty());
}
