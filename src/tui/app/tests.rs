//! What keys and answers do to the state.
use super::*;

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn code(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn row(name: &str, ty: &str, cost: f64) -> Row {
    Row {
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

fn app_with_rows() -> App {
    let mut app = App::new("http://x".into(), true);
    app.apply(Msg::Rows {
        rows: vec![row("a", "ec2:instance", 10.0), row("b", "ec2:volume", 30.0)],
        total: 2,
    });
    app
}

#[test]
fn reconnecting_reloads_everything() {
    let mut app = App::new("http://x".into(), true);
    let fx = app.apply(Msg::Link(Link::Connected));
    assert_eq!(fx, vec![Effect::LoadSession, Effect::LoadRows, Effect::LoadQueue]);
    assert!(app.apply(Msg::Link(Link::Connected)).is_empty());
    app.apply(Msg::Link(Link::Disconnected {
        reason: "refused".into(),
        attempt: 1,
    }));
    assert_eq!(app.apply(Msg::Link(Link::Connected)).len(), 3);
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
fn filter_typing_narrows_and_esc_clears() {
    let mut app = app_with_rows();
    app.on_key(key('/'));
    for c in "vol".chars() {
        app.on_key(key(c));
    }
    assert_eq!(app.visible().len(), 1);
    app.on_key(code(KeyCode::Enter));
    assert_eq!(app.filter, "vol");
    app.on_key(code(KeyCode::Esc));
    assert_eq!(app.filter, "");
    assert_eq!(app.visible().len(), 2);
}

#[test]
fn workspaces_by_tab_number_and_command() {
    let mut app = app_with_rows();
    app.on_key(code(KeyCode::Tab));
    assert_eq!(app.category, Category::Compute);
    app.on_key(key('3'));
    assert_eq!(app.category, Category::Storage);
    assert!(app.command("k8s").is_empty());
    assert_eq!(app.category, Category::Kubernetes);
    assert_eq!(app.command("quit"), vec![Effect::Quit]);
    app.command("sort name");
    assert_eq!((app.sort, app.descending), (SortKey::Name, false));
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
    assert!(
        app.apply(Msg::Event(Box::new(ev(1, "SCAN_COMPLETED"))))
            .contains(&Effect::LoadRows)
    );
    app.apply(Msg::Event(Box::new(ev(2, "EXECUTION_COMMIT"))));
    app.apply(Msg::Event(Box::new(ev(2, "EXECUTION_COMMIT"))));
    assert_eq!(app.ledger.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 1]);
    app.on_key(key('l'));
    app.on_key(key('u'));
    assert!(matches!(&app.confirm, Some(Decision::Revert { hash: h, .. }) if *h == hash));
}
