//! The answerer that needs no model: the common questions, recognised by a
//! fixed reading of the question and answered from the tools alone. Any
//! other question gets a plain statement that it needs a model, and the
//! list of what can be asked without one.

use serde_json::{Value, json};

use super::turn::Turn;

/// A question the offline answerer recognises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Intent {
    /// Where the waste is: the largest savings by type.
    TopWaste { provider: Option<String> },
    /// What depends on a resource.
    DependsOn { crn: String },
    /// What the ledger recorded since a time (`since`: a duration back).
    ChangedSince { since: String, label: String },
    /// Why a resource is (or is not) flagged.
    WhyFlagged { crn: String },
    /// Where a resource is declared, who wrote it, and its drift.
    WhoseCode { crn: String },
    /// What approving every pending remediation would save.
    PendingSavings,
    /// The estate's totals.
    Totals,
    /// A known question about a resource that names none.
    NeedsCrn { what: &'static str },
}

/// What the offline answerer can be asked, for the answer to a question it
/// does not know.
pub const KNOWN: &[&str] = &[
    "what is the top waste? (optionally: in aws, gcp, azure or kubernetes)",
    "what depends on <crn>?",
    "what changed since yesterday? (or: in the last 6 hours, the last 3 days, this week)",
    "why is <crn> flagged?",
    "whose code is <crn>? (where it is declared in Terraform, who wrote it, its drift)",
    "how much would approving everything pending save?",
    "how many resources are there, and what do they cost?",
];

/// The first CRN in `text`, without the punctuation around it.
pub fn crn_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | '<' | '>' | '[' | ']' | ','))
        .find(|w| w.starts_with("crn:"))
        .map(|w| w.trim_end_matches(['?', '.', '!', ';']).to_owned())
        .filter(|w| w.len() > 4)
}

fn has(q: &str, words: &[&str]) -> bool {
    words.iter().any(|w| q.contains(w))
}

/// The provider a question names, if one.
fn provider_in(q: &str) -> Option<String> {
    let words: Vec<&str> = q.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    [
        ("aws", "aws"),
        ("gcp", "gcp"),
        ("azure", "azure"),
        ("k8s", "k8s"),
        ("kubernetes", "k8s"),
    ]
    .iter()
    .find(|(w, _)| words.contains(w))
    .map(|(_, p)| (*p).to_owned())
}

/// The window a "what changed" question names: a duration back from now
/// (as the history endpoint takes it) and its words.
fn window_in(q: &str) -> (String, String) {
    let words: Vec<&str> = q
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        let n = match w.parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => continue,
        };
        let unit = words.get(i + 1).copied().unwrap_or_default();
        let (suffix, name) = match unit.trim_end_matches('s') {
            "minute" | "min" => ("m", "minute"),
            "hour" | "hr" | "h" => ("h", "hour"),
            "day" | "d" => ("d", "day"),
            "week" | "w" => ("w", "week"),
            _ => continue,
        };
        let plural = if n == 1 { "" } else { "s" };
        return (format!("{n}{suffix}"), format!("in the last {n} {name}{plural}"));
    }
    if q.contains("week") {
        return ("7d".into(), "in the last week".into());
    }
    if q.contains("hour") {
        return ("1h".into(), "in the last hour".into());
    }
    ("24h".into(), "since yesterday".into())
}

/// What `question` asks, when it is one of the common questions.
pub fn classify(question: &str) -> Option<Intent> {
    let q = question.to_lowercase();
    let crn = crn_in(question);
    if has(
        &q,
        &[
            "depend",
            "blast radius",
            "what breaks",
            "affected if",
            "would break",
            "relies on",
            "rely on",
        ],
    ) {
        return Some(crn.map_or(
            Intent::NeedsCrn {
                what: "what depends on a resource",
            },
            |crn| Intent::DependsOn { crn },
        ));
    }
    if q.contains("why") && (has(&q, &["flag", "waste", "marked", "unused", "idle"]) || crn.is_some()) {
        return Some(crn.map_or(
            Intent::NeedsCrn {
                what: "why a resource is flagged",
            },
            |crn| Intent::WhyFlagged { crn },
        ));
    }
    if has(
        &q,
        &[
            "whose code",
            "who wrote",
            "who declared",
            "who created",
            "who made",
            "declared",
            "terraform",
            "drift",
            "provenance",
            "which commit",
        ],
    ) {
        return Some(crn.map_or(
            Intent::NeedsCrn {
                what: "where a resource is declared and who wrote it",
            },
            |crn| Intent::WhoseCode { crn },
        ));
    }
    if has(
        &q,
        &[
            "changed",
            "what happened",
            "what's new",
            "what is new",
            "since yesterday",
            "recent events",
        ],
    ) {
        let (since, label) = window_in(&q);
        return Some(Intent::ChangedSince { since, label });
    }
    if (q.contains("approv") && has(&q, &["pending", "everything", "all"]))
        || (q.contains("pending") && q.contains("sav"))
    {
        return Some(Intent::PendingSavings);
    }
    if has(
        &q,
        &[
            "waste", "saving", "save", "delete", "clean up", "cleanup", "unused", "idle", "remove",
        ],
    ) {
        return Some(Intent::TopWaste {
            provider: provider_in(&q),
        });
    }
    if has(
        &q,
        &[
            "how many",
            "how much do we spend",
            "total cost",
            "spend",
            "estate size",
            "how big",
        ],
    ) {
        return Some(Intent::Totals);
    }
    None
}

/// Money as the notices write it (`$1,234.50`); nothing reads as `$0.00`.
fn usd(v: &Value) -> String {
    crate::notify::triggers::usd(v.as_f64().unwrap_or(0.0))
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// Answers `intent` through `turn`'s tools.
pub async fn answer(intent: &Intent, turn: &mut Turn) {
    match intent {
        Intent::TopWaste { provider } => top_waste(turn, provider.as_deref()).await,
        Intent::DependsOn { crn } => depends_on(turn, crn).await,
        Intent::ChangedSince { since, label } => changed_since(turn, since, label).await,
        Intent::WhyFlagged { crn } => why_flagged(turn, crn).await,
        Intent::WhoseCode { crn } => whose_code(turn, crn).await,
        Intent::PendingSavings => pending_savings(turn).await,
        Intent::Totals => totals(turn).await,
        Intent::NeedsCrn { what } => {
            turn.say(&format!(
                "To tell {what}, name the resource by its CRN, for example `crn:svc:aws:us-east-1:123456789012:ec2:volume:vol-0abc`. \
                 `search_nodes` (or `svc ls`) finds CRNs by type, tag or name; finding a resource from a description alone needs a model."
            ))
            .await;
        }
    }
}

/// The answer to a question the offline answerer does not know.
pub async fn unknown(turn: &mut Turn, why: &str) {
    let mut s = format!("{why} Without a model I can answer:\n");
    for k in KNOWN {
        s.push_str(&format!("- {k}\n"));
    }
    turn.say(&s).await;
}

async fn top_waste(turn: &mut Turn, provider: Option<&str>) {
    let mut args = json!({"top": 3});
    if let Some(p) = provider {
        args["provider"] = json!(p);
    }
    let Some(v) = turn.tool("waste_summary", args).await else {
        return;
    };
    let totals = &v["totals"];
    let scope = provider.map_or_else(String::new, |p| format!(" in {p}"));
    if count(&totals["flagged"]) == 0 {
        let scanned = count(&v["scan_seq"]) > 0;
        turn.say(&if scanned {
            format!(
                "The last scan (scan {}) flagged nothing{scope}: no waste found.",
                count(&v["scan_seq"])
            )
        } else {
            "No scan has run yet, so nothing is flagged. Start one with `svc scan`.".to_owned()
        })
        .await;
        return;
    }
    let mut s = format!(
        "The last scan (scan {}) flags {} resources{scope}; acting on them would save {} a month, {} of it outright waste.\n\nLargest savings by type:\n",
        count(&v["scan_seq"]),
        count(&totals["flagged"]),
        usd(&totals["projected_savings_usd_mo"]),
        usd(&totals["waste_usd_mo"]),
    );
    for t in v["types"].as_array().into_iter().flatten().take(5) {
        s.push_str(&format!(
            "- {} ({}): {} flagged of {}, {} a month\n",
            text(&t["type"]),
            text(&t["provider"]),
            count(&t["waste_count"]) + count(&t["optimize_count"]),
            count(&t["count"]),
            usd(&t["projected_savings_usd_mo"]),
        ));
        for r in t["top"].as_array().into_iter().flatten() {
            let crn = text(&r["crn"]).to_owned();
            s.push_str(&format!(
                "  - `{crn}`: {} a month — {}\n",
                usd(&r["projected_savings_usd_mo"]),
                text(&r["reason"])
            ));
            turn.cite(&crn);
        }
    }
    s.push_str("\nEach goes through the remediation pipeline (`svc queue`); a person approves every action.");
    turn.say(&s).await;
}

async fn depends_on(turn: &mut Turn, crn: &str) {
    turn.cite(crn);
    let Some(v) = turn.tool("blast_radius", json!({"crn": crn, "limit": 20})).await else {
        return;
    };
    let n = count(&v["affected_count"]);
    if n == 0 {
        turn.say(&format!(
            "Nothing in the graph depends on `{crn}`: removing it affects no other resource."
        ))
        .await;
        return;
    }
    let mut s = format!(
        "{n} resource{} depend{} on `{crn}` (up to {} hop{} away, {} a month between them):\n",
        if n == 1 { "" } else { "s" },
        if n == 1 { "s" } else { "" },
        count(&v["max_depth"]),
        if count(&v["max_depth"]) == 1 { "" } else { "s" },
        usd(&v["total_cost_usd_mo"]),
    );
    for a in v["affected"].as_array().into_iter().flatten() {
        let dep = text(&a["crn"]).to_owned();
        s.push_str(&format!(
            "- `{dep}` ({}), {} hop{} away, by {} from `{}`\n",
            text(&a["type"]),
            count(&a["depth"]),
            if count(&a["depth"]) == 1 { "" } else { "s" },
            text(&a["relation"]),
            text(&a["via_crn"]),
        ));
        turn.cite(&dep);
    }
    if v["truncated"] == true {
        s.push_str(&format!(
            "… and {} more.\n",
            n.saturating_sub(v["affected"].as_array().map_or(0, |a| a.len() as u64))
        ));
    }
    turn.say(&s).await;
}

async fn changed_since(turn: &mut Turn, since: &str, label: &str) {
    let Some(v) = turn.tool("history", json!({"since": since, "limit": 100})).await else {
        return;
    };
    let events = v["events"].as_array().cloned().unwrap_or_default();
    let total = count(&v["total"]).max(events.len() as u64);
    if events.is_empty() {
        turn.say(&format!("Nothing was recorded {label}: no scan, finding or action."))
            .await;
        return;
    }
    let mut by_type: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for e in &events {
        *by_type.entry(text(&e["type"])).or_default() += 1;
    }
    let mut s = format!("{total} event{} {label}", if total == 1 { "" } else { "s" });
    if total > events.len() as u64 {
        s.push_str(&format!(" (the newest {} counted here)", events.len()));
    }
    s.push_str(":\n");
    for (t, n) in &by_type {
        s.push_str(&format!("- {t}: {n}\n"));
    }
    if let Some(scan) = events.iter().find(|e| e["type"] == "SCAN_COMPLETED") {
        s.push_str(&format!("\nThe last scan: {}\n", text(&scan["message"])));
    }
    let actions: Vec<&Value> = events
        .iter()
        .filter(|e| !matches!(text(&e["type"]), "SCAN_COMPLETED" | "SCAN_STARTED" | "SCAN_RECOVERED"))
        .take(10)
        .collect();
    if !actions.is_empty() {
        s.push_str("\nThe newest of the rest:\n");
        for e in actions {
            let crn = text(&e["crn"]);
            if !crn.is_empty() {
                turn.cite(crn);
            }
            s.push_str(&format!(
                "- {} {}: {}\n",
                text(&e["ts"]),
                text(&e["type"]),
                text(&e["message"])
            ));
        }
    }
    turn.say(&s).await;
}

async fn why_flagged(turn: &mut Turn, crn: &str) {
    turn.cite(crn);
    let Some(v) = turn.tool("get_node", json!({"crn": crn})).await else {
        return;
    };
    let findings = v["findings"].as_array().cloned().unwrap_or_default();
    if v["is_waste"] != true && findings.is_empty() {
        turn.say(&format!(
            "`{crn}` ({}, {}) is not flagged: no built-in rule, plugin or policy found waste in it at the last scan.",
            text(&v["type"]),
            text(&v["state"]),
        ))
        .await;
        return;
    }
    let mut s = format!(
        "`{crn}` ({}, state {}, {} a month) is {}",
        text(&v["type"]),
        text(&v["state"]),
        usd(&v["cost_usd_mo"]),
        if v["is_waste"] == true {
            "flagged as waste"
        } else {
            "flagged for optimisation"
        },
    );
    if !text(&v["waste_reason"]).is_empty() {
        s.push_str(&format!(": {}", text(&v["waste_reason"])));
    }
    s.push_str(".\n");
    for f in &findings {
        s.push_str(&format!(
            "- {} ({}, risk {}): {} — suggested: {}, saving {} a month\n",
            text(&f["rule"]),
            text(&f["source"]),
            count(&f["risk_score"]),
            text(&f["reason"]),
            text(&f["suggested_action"]),
            usd(&f["projected_savings_usd_mo"]),
        ));
    }
    s.push_str(&format!("Its remediation stage: {}.", text(&v["phase"])));
    turn.say(&s).await;
}

async fn whose_code(turn: &mut Turn, crn: &str) {
    turn.cite(crn);
    let Some(r) = turn.tool("resource_drift", json!({"crn": crn})).await else {
        return;
    };
    if r["configured"] != true {
        turn.say(&format!(
            "No Terraform state is configured, so I cannot say which code declares `{crn}`: set `iac.terraform_states` \
             (and `iac.repository`, for who wrote it) in the configuration."
        ))
        .await;
        return;
    }
    let p = &r["provenance"];
    if p["managed"] != true {
        turn.say(&format!(
            "No configured Terraform state declares `{crn}`: it was made outside Terraform, or by code svc is not pointed at."
        ))
        .await;
        return;
    }
    let mut s = format!(
        "`{crn}` is `{}` in the Terraform state {}",
        text(&p["address"]),
        text(&p["state"])
    );
    if text(&p["file"]).is_empty() {
        s.push_str(".\n");
    } else {
        s.push_str(&format!(", declared at {}:{}", text(&p["file"]), count(&p["line"])));
        if !text(&p["author"]).is_empty() {
            s.push_str(&format!(
                ", written by {} <{}> in commit {} (\"{}\")",
                text(&p["author"]),
                text(&p["email"]),
                text(&p["commit"]).get(..12).unwrap_or(text(&p["commit"])),
                text(&p["summary"])
            ));
        }
        s.push_str(".\n");
    }
    if let Some(why) = p["missing"].as_str() {
        s.push_str(&format!("Its declaration was not found: {why}.\n"));
    }
    if let Some(c) = r["changed"].as_array().and_then(|c| c.first()) {
        s.push_str("It has drifted from the state:\n");
        for a in c["attributes"].as_array().into_iter().flatten() {
            s.push_str(&format!(
                "- {}: declared {}, live {}\n",
                text(&a["attribute"]),
                a["declared"],
                a["live"]
            ));
        }
    } else if let Some(g) = r["gone"].as_array().and_then(|g| g.first()) {
        s.push_str(&format!(
            "It is gone from the estate{}. {}",
            if g["removed_by_svc"] == true {
                " (removed by svc)"
            } else {
                ""
            },
            text(&g["code_change"]["summary"])
        ));
    } else {
        s.push_str("Its live attributes match the state.");
    }
    turn.say(&s).await;
}

async fn pending_savings(turn: &mut Turn) {
    let Some(v) = turn.tool("remediation_queue", json!({"limit": 5})).await else {
        return;
    };
    let (counts, savings) = (&v["counts"], &v["savings_usd_mo"]);
    let pending = count(&counts["pending"]);
    let mut s = if pending == 0 {
        "Nothing is pending approval now.".to_owned()
    } else {
        format!(
            "Approving the {pending} resource{} pending now would save {} a month.",
            if pending == 1 { "" } else { "s" },
            usd(&savings["pending"])
        )
    };
    let gate = count(&counts["sau_gate"]);
    if gate > 0 {
        s.push_str(&format!(
            " {gate} more ({} a month) are held at the safety gate: a policy blocks them or their proof says they are not safe to remove.",
            usd(&savings["sau_gate"])
        ));
    }
    let earlier = count(&counts["flagged"]) + count(&counts["analyzed"]) + count(&counts["codegen"]);
    if earlier > 0 {
        s.push_str(&format!(" {earlier} are still being analysed."));
    }
    s.push_str(" Approval is for a person: `svc approve` or the dashboard's remediation board.");
    turn.say(&s).await;
}

async fn totals(turn: &mut Turn) {
    let Some(v) = turn.tool("graph_stats", json!({})).await else {
        return;
    };
    let mut s = format!(
        "The estate holds {} resources and {} edges, costing {} a month; {} are flagged as waste, {} a month in projected savings.",
        count(&v["active_nodes"]),
        count(&v["total_edges"]),
        usd(&v["total_cost_usd_mo"]),
        count(&v["waste_nodes"]),
        usd(&v["projected_savings_usd_mo"]),
    );
    if let Some(p) = v["providers"].as_object().filter(|p| !p.is_empty()) {
        let list: Vec<String> = p.iter().map(|(k, n)| format!("{k} {}", count(n))).collect();
        s.push_str(&format!(" By provider: {}.", list.join(", ")));
    }
    turn.say(&s).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOL: &str = "crn:svc:aws:us-east-1:123456789012:ec2:volume:vol-1";

    #[test]
    fn the_common_questions_are_recognised() {
        let c = |q: &str| classify(q);
        assert_eq!(c("What is our top waste?"), Some(Intent::TopWaste { provider: None }));
        assert_eq!(
            c("where can we save money in AWS"),
            Some(Intent::TopWaste {
                provider: Some("aws".into())
            })
        );
        assert_eq!(
            c(&format!("what depends on {VOL}?")),
            Some(Intent::DependsOn { crn: VOL.into() })
        );
        assert_eq!(
            c("what depends on the billing database?"),
            Some(Intent::NeedsCrn {
                what: "what depends on a resource"
            })
        );
        assert_eq!(
            c(&format!("Why is `{VOL}` flagged?")),
            Some(Intent::WhyFlagged { crn: VOL.into() })
        );
        assert_eq!(
            c("what changed since yesterday?"),
            Some(Intent::ChangedSince {
                since: "24h".into(),
                label: "since yesterday".into()
            })
        );
        assert_eq!(
            c("what changed in the last 3 days"),
            Some(Intent::ChangedSince {
                since: "3d".into(),
                label: "in the last 3 days".into()
            })
        );
        assert_eq!(
            c("How much would approving everything pending save?"),
            Some(Intent::PendingSavings)
        );
        assert_eq!(c("how many resources do we have"), Some(Intent::Totals));
        assert_eq!(
            c(&format!("whose code is {VOL}?")),
            Some(Intent::WhoseCode { crn: VOL.into() })
        );
        assert_eq!(
            c(&format!("Is {VOL} drifted from Terraform?")),
            Some(Intent::WhoseCode { crn: VOL.into() })
        );
        assert_eq!(
            c("who wrote the billing database?"),
            Some(Intent::NeedsCrn {
                what: "where a resource is declared and who wrote it"
            })
        );
        assert_eq!(c("write me a poem about clouds"), None);
    }

    #[test]
    fn money_is_written_with_cents_and_thousands() {
        assert_eq!(usd(&json!(1234567.891)), "$1,234,567.89");
        assert_eq!(usd(&json!(0.5)), "$0.50");
        assert_eq!(usd(&json!(999)), "$999.00");
        assert_eq!(usd(&Value::Null), "$0.00");
    }

    #[test]
    fn a_crn_is_found_among_punctuation() {
        assert_eq!(crn_in(&format!("is ({VOL}), safe?")).as_deref(), Some(VOL));
        assert_eq!(crn_in("no resource here"), None);
    }
}
