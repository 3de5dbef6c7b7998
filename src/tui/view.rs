//! Drawing the state: the header, the disconnected banner, the current
//! screen, the footer, and the help and confirmation overlays. Colour is
//! only ever added to what the text already says, so a terminal without
//! colour (or `NO_COLOR`) shows the same words, with bold and reverse
//! video in its place.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::app::{App, Decision, Link, Screen};
use super::screens;
use super::theme::Theme;

/// Draws the whole screen.
pub fn draw(f: &mut Frame, app: &App) {
    let t = Theme { color: app.color };
    let area = f.area();
    let banner = matches!(app.link, Link::Disconnected { .. });
    let [head, ban, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(u16::from(banner)),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    header(f, app, t, head);
    if let Link::Disconnected { reason, attempt } = &app.link {
        let text = format!(" DISCONNECTED, reconnecting (try {attempt}): {reason} · {}", app.url);
        f.render_widget(Paragraph::new(text).style(t.banner()), ban);
    }
    match app.screen {
        Screen::Nodes => match &app.detail {
            Some(d) if area.width >= 140 => {
                let [list, pane] =
                    Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(body);
                screens::nodes(f, app, t, list);
                screens::detail(f, d, t, pane);
            }
            Some(d) => screens::detail(f, d, t, body),
            None => screens::nodes(f, app, t, body),
        },
        Screen::Queue => screens::queue(f, app, t, body),
        Screen::Ledger => screens::ledger(f, app, t, body),
    }
    footer(f, app, t, foot);
    if app.help {
        help(f, app, t, area);
    }
    if let Some(d) = &app.confirm {
        confirm(f, d, t, area);
    }
}

fn header(f: &mut Frame, app: &App, t: Theme, area: Rect) {
    let mut spans = vec![Span::styled(" svc ", t.title())];
    for s in [Screen::Nodes, Screen::Queue, Screen::Ledger] {
        let style = if s == app.screen { t.selected() } else { Style::new() };
        spans.push(Span::raw(" "));
        spans.push(Span::styled(format!(" {} ", s.name()), style));
    }
    let link = match &app.link {
        Link::Connected => Span::styled("● connected", t.good()),
        Link::Connecting => Span::styled("○ connecting", t.warn()),
        Link::Disconnected { .. } => Span::styled("✕ disconnected", t.bad()),
    };
    let role = format!("  {}", app.role.as_deref().unwrap_or("?"));
    let used: usize = spans.iter().map(|s| s.width()).sum::<usize>() + link.width() + role.len();
    let mut right = Vec::new();
    let gap = usize::from(area.width).saturating_sub(used + 1);
    if gap > app.url.len() + 4 {
        right.push(Span::styled(format!("{}  ", app.url), t.dim()));
    }
    let used_right: usize = right.iter().map(|s| s.width()).sum();
    spans.push(Span::raw(" ".repeat(gap.saturating_sub(used_right))));
    spans.extend(right);
    spans.push(link);
    spans.push(Span::styled(role, t.dim()));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn footer(f: &mut Frame, app: &App, t: Theme, area: Rect) {
    let line = match &app.input {
        Some((input, text)) => Line::from(vec![
            Span::styled(input.prompt(), t.title()),
            Span::raw(text.clone()),
            Span::raw("█"),
        ]),
        None => match &app.status {
            Some(s) => Line::from(Span::styled(format!(" {s}"), t.warn())),
            None => Line::from(Span::styled(hints(app), t.dim())),
        },
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The key hints of the footer, for what the current screen offers.
pub fn hints(app: &App) -> String {
    let decide = app.can_decide();
    let s = match app.screen {
        Screen::Nodes if app.detail.is_some() => {
            if decide {
                " j/k scroll  x quarantine  i ignore  q back  ? help"
            } else {
                " j/k scroll  q back  ? help"
            }
        }
        Screen::Nodes => {
            if decide {
                " ⏎ detail  / filter  tab workspace  s sort  Q queue  l ledger  x quar  i ignore  ? help"
            } else {
                " ⏎ detail  / filter  tab workspace  s sort  Q queue  l ledger  ? help  q quit"
            }
        }
        Screen::Queue => {
            if decide {
                " j/k item  a approve  r reject  spc mark  A/R marked  m move  x quar  ⏎ detail  ? help"
            } else {
                " j/k item  ⏎ detail  q back  ? help  (viewer: read only)"
            }
        }
        Screen::Ledger => {
            if decide {
                " j/k event  u revert  ⏎ detail  q back  ? help"
            } else {
                " j/k event  ⏎ detail  q back  ? help"
            }
        }
    };
    s.to_owned()
}

/// A rectangle of `w` by `h` cells centred in `area`, clipped to it.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(area.x + (area.width - w) / 2, area.y + (area.height - h) / 2, w, h)
}

/// Every key, as the help overlay lists them.
pub fn help_lines(can_decide: bool) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![
        ("j k ↓ ↑", "move; PgUp PgDn g G jump"),
        ("⏎", "open the selected resource"),
        ("q Esc", "back; q on the node table quits"),
        ("/", "filter: words, state: type: provider:"),
        ("", "region: phase: reach: waste:yes|no"),
        ("tab 1-8", "workspace: all compute storage network"),
        ("", "database serverless kubernetes other"),
        ("s S", "sort key (cost name type state provider"),
        ("", "region), reverse the order"),
        ("n Q l", "nodes, remediation queue, ledger"),
        (":", "nodes queue ledger <workspace> sort <key>"),
        ("", "filter <text> refresh help quit"),
        ("ctrl-r", "reload; ctrl-c quits from anywhere"),
    ];
    if can_decide {
        v.extend([
            ("a r", "approve, reject the queue item's plan"),
            ("spc A R", "mark items; approve, reject the marked"),
            ("m", "move the queue item to another stage"),
            ("x i", "quarantine, ignore (for a time) the resource"),
            ("u", "revert the ledger event's change"),
        ]);
    }
    v
}

fn help(f: &mut Frame, app: &App, t: Theme, area: Rect) {
    let lines = help_lines(app.can_decide());
    let mut text: Vec<Line> = lines
        .iter()
        .map(|(k, v)| Line::from(vec![Span::styled(format!("{k:>8}  "), t.title()), Span::raw(*v)]))
        .collect();
    if !app.can_decide() {
        text.push(Line::from(Span::styled(
            "  this token may only read (role viewer)",
            t.dim(),
        )));
    }
    let h = u16::try_from(text.len()).unwrap_or(u16::MAX).saturating_add(2);
    let r = centered(area, 62, h);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(text).block(Block::default().borders(Borders::ALL).title(" help: ? or Esc closes ")),
        r,
    );
}

fn confirm(f: &mut Frame, d: &Decision, t: Theme, area: Rect) {
    let mut text = vec![Line::from(Span::styled(d.title().to_owned() + "?", t.title()))];
    match d {
        Decision::Approve { crn, plan_hash } | Decision::Reject { crn, plan_hash } => {
            text.push(Line::raw(crn.clone()));
            text.push(Line::raw("plan sha256:"));
            text.push(Line::styled(plan_hash.clone(), t.warn()));
        }
        Decision::Quarantine { crn } => {
            text.push(Line::raw(crn.clone()));
            text.push(Line::raw("strips its network access and IAM (ISOLATE)"));
        }
        Decision::Ignore { crn, ttl_seconds } => {
            text.push(Line::raw(crn.clone()));
            text.push(Line::raw(match ttl_seconds {
                0 => "adds it to the ignore list, permanently".to_owned(),
                s => format!(
                    "adds it to the ignore list for {}",
                    humantime::format_duration(std::time::Duration::from_secs(*s))
                ),
            }));
        }
        Decision::Bulk { items, .. } => {
            text.push(Line::raw(format!("{} items, each on the plan shown:", items.len())));
            for (crn, hash) in items.iter().take(6) {
                let short: String = hash.chars().take(12).collect();
                text.push(Line::raw(format!("{short} {}", super::model::short_name(crn))));
            }
            if items.len() > 6 {
                text.push(Line::raw(format!("… and {} more", items.len() - 6)));
            }
        }
        Decision::Move { crn, plan_hash, to } => {
            text.push(Line::raw(crn.clone()));
            text.push(Line::raw(format!("to stage {to}, on plan sha256:")));
            text.push(Line::styled(plan_hash.clone(), t.warn()));
        }
        Decision::Revert { hash, what } => {
            text.push(Line::raw(what.clone()));
            text.push(Line::raw("undo by payload sha256:"));
            text.push(Line::styled(hash.clone(), t.warn()));
        }
    }
    text.push(Line::raw(""));
    text.push(Line::from(vec![
        Span::styled("[y]", t.bad()),
        Span::raw(" yes   "),
        Span::styled("[n/Esc]", t.title()),
        Span::raw(" no"),
    ]));
    let r = centered(area, 70, u16::try_from(text.len()).unwrap_or(8).saturating_add(2));
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(Text::from(text))
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" confirm ")),
        r,
    );
}
