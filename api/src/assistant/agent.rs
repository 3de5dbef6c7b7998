//! The assistant with a model: two tiers on one provider. A classifier
//! picks the tier before the first call ([`tier_of`]): the router model
//! (cheap) for a question one or two reads answer, the deep model for one
//! that asks for judgement across the estate. The router tier hands the
//! turn to the deep tier mid-way when a call of its fails, when its tool
//! calls fail, or when it says it cannot answer; the deep tier sees
//! everything said and read so far.

use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::{Instrument, info_span};

use super::model::{self, Endpoint, Message, ModelError, Wire};
use super::tools::{self, Tool};
use super::turn::{Event, Turn};

/// Model calls in one answer, at most (each may call tools).
pub const MAX_ROUNDS: usize = 8;
/// Longest tool answer handed to a model, in characters.
const MAX_TOOL_CHARS: usize = 24_000;
/// The default wait for a model's answer to start and between its pieces.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What the model is told before the conversation.
pub const SYSTEM: &str = "You answer questions about a cloud estate that svc scanned: its resources (each named by a CRN), the edges between them, their cost, the waste svc found and the remediation pipeline. Use the tools to read facts; never guess a figure or a CRN. You only read: you cannot approve, reject, delete or change anything, and you must not claim to have done so. When an action is wanted, say what a person would run (for example `svc approve <crn>` after reviewing `svc plan <crn>`). Quote CRNs exactly. Answer in short Markdown. If the tools cannot answer the question, say so plainly.";

/// Which model answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    Router,
    Deep,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Router => "router",
            Tier::Deep => "deep",
        }
    }
}

/// The tier a question goes to first. A question goes deep when it asks
/// for judgement or explanation across many resources (a plan, a
/// comparison, a trade-off, a forecast, a root cause), or is long and asks
/// several things at once; the rest (look-ups, lists, counts, one
/// resource's facts) go to the router.
pub fn tier_of(question: &str) -> Tier {
    let q = question.to_lowercase();
    const DEEP: &[&str] = &[
        "strategy",
        "strategic",
        "prioriti",
        "roadmap",
        "trade-off",
        "tradeoff",
        "trade off",
        "compare",
        "comparison",
        "versus",
        " vs ",
        "pros and cons",
        "root cause",
        "explain why",
        "analy",
        "recommend",
        "should we",
        "should i",
        "what would happen",
        "what if",
        "forecast",
        "predict",
        "trend",
        "plan to",
        "plan for",
        "migrate",
        "migration",
        "architecture",
        "redesign",
        "risk assessment",
        "assess",
        "justify",
        "business case",
        "step by step",
        "step-by-step",
        "summarize the",
        "summarise the",
        "write a report",
        "executive summary",
        "quarter",
        "budget",
    ];
    if DEEP.iter().any(|w| q.contains(w)) {
        return Tier::Deep;
    }
    let asks = q.matches('?').count();
    let words = q.split_whitespace().count();
    if words > 45 || (asks >= 3) || (words > 28 && (q.contains(" and then ") || q.contains(", and "))) {
        return Tier::Deep;
    }
    Tier::Router
}

/// Whether a model's final text says it could not answer.
pub fn gave_up(text: &str) -> bool {
    let t = text.to_lowercase();
    [
        "i cannot answer",
        "i can't answer",
        "i can not answer",
        "i'm unable to answer",
        "i am unable to answer",
        "i don't have enough information",
        "i do not have enough information",
        "unable to determine",
        "i could not find a way",
        "beyond what i can",
    ]
    .iter()
    .any(|p| t.contains(p))
}

/// A provider configured in `ai.*`, with both tiers' endpoints.
#[derive(Clone, Debug)]
pub struct Setup {
    pub provider: String,
    pub router: Endpoint,
    pub deep: Endpoint,
}

impl Setup {
    /// The provider `ai` (the configuration's `ai` table as JSON) names;
    /// `Ok(None)` when it names none; `Err` in words when it is incomplete.
    /// The key comes from the environment variable `ai.api_key_env` names
    /// (by default `OPENAI_API_KEY` or `ANTHROPIC_API_KEY`), never from the
    /// file: a key written in `ai.api_key` is refused.
    pub fn from_config(ai: &Value, env: impl Fn(&str) -> Option<String>) -> Result<Option<Setup>, String> {
        let text = |k: &str| {
            ai[k]
                .as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let Some(provider) = text("provider") else {
            return Ok(None);
        };
        let wire = if provider == "anthropic" {
            Wire::Anthropic
        } else {
            Wire::OpenAi
        };
        let base_url = match (text("base_url"), provider.as_str()) {
            (Some(u), _) => u.trim_end_matches('/').to_owned(),
            (None, "openai") => "https://api.openai.com/v1".to_owned(),
            (None, "anthropic") => "https://api.anthropic.com".to_owned(),
            (None, other) => {
                return Err(format!(
                    "ai.provider {other:?} needs ai.base_url (an OpenAI-compatible endpoint such as http://127.0.0.1:8000/v1)"
                ));
            }
        };
        let deep = text("model").ok_or_else(|| format!("ai.provider {provider:?} needs ai.model"))?;
        let router = text("router_model").unwrap_or_else(|| deep.clone());
        let key_env = text("api_key_env").unwrap_or_else(|| {
            match wire {
                Wire::Anthropic => "ANTHROPIC_API_KEY",
                Wire::OpenAi => "OPENAI_API_KEY",
            }
            .to_owned()
        });
        let api_key = env(&key_env).filter(|k| !k.trim().is_empty());
        if api_key.is_none() && (text("api_key").is_some() || matches!(provider.as_str(), "openai" | "anthropic")) {
            return Err(format!(
                "ai.provider {provider:?} needs an API key in the environment variable {key_env} (ai.api_key_env names it; a key written in config.toml is not read)"
            ));
        }
        let timeout = match text("timeout") {
            Some(t) => humantime::parse_duration(&t).map_err(|e| format!("ai.timeout {t:?}: {e}"))?,
            None => DEFAULT_TIMEOUT,
        };
        let endpoint = |model: String| Endpoint {
            wire,
            base_url: base_url.clone(),
            api_key: api_key.clone(),
            model,
            timeout,
        };
        Ok(Some(Setup {
            provider,
            router: endpoint(router),
            deep: endpoint(deep),
        }))
    }

    fn endpoint(&self, tier: Tier) -> &Endpoint {
        match tier {
            Tier::Router => &self.router,
            Tier::Deep => &self.deep,
        }
    }
}

/// A tool's answer as the model reads it: its JSON, cut when long.
fn tool_content(outcome: &super::run::Outcome) -> String {
    let text = outcome.value.to_string();
    if text.chars().count() <= MAX_TOOL_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_TOOL_CHARS).collect();
    format!(
        "{cut}… (cut: the answer is {} characters; ask for fewer, with a filter or a limit)",
        text.len()
    )
}

/// Answers `question` after `history` with the models of `setup`;
/// returns the messages to keep for the conversation's next question.
pub async fn answer(
    setup: &Setup,
    history: Vec<Message>,
    question: &str,
    turn: &mut Turn,
    conversation_id: String,
) -> Vec<Message> {
    let mut tier = tier_of(question);
    info_span!("agent.tier_selected", tier = tier.name()).in_scope(|| {
        tracing::info!(tier = tier.name(), "tier selected");
    });
    let first = setup.endpoint(tier);
    turn.emit(Event::Start {
        conversation_id,
        tier: tier.name().into(),
        provider: setup.provider.clone(),
        model: Some(first.model.clone()),
    })
    .await;
    let client = match model::client() {
        Ok(c) => c,
        Err(e) => {
            turn.emit(Event::Error { message: e.message }).await;
            return history;
        }
    };
    let catalogue: Vec<Tool> = tools::catalogue();
    let mut messages = history;
    messages.push(Message::User(question.to_owned()));
    let kept_from = messages.len();
    for round in 1..=MAX_ROUNDS {
        let endpoint = setup.endpoint(tier).clone();
        let started = Instant::now();
        let tx = turn.sender();
        let reply = model::call(&client, &endpoint, SYSTEM, &messages, &catalogue, |piece| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(Event::Text { text: piece }).await;
            }
        })
        .instrument(info_span!("agent.model_call", agent.round = round, agent.active_tier = tier.name(), model = %endpoint.model))
        .await;
        tracing::debug!(round, ms = started.elapsed().as_millis() as u64, "model call");
        let reply = match reply {
            Ok(r) => r,
            Err(e) if tier == Tier::Router => {
                escalate(turn, &mut tier, setup, &format!("the router model failed: {e}")).await;
                continue;
            }
            Err(ModelError { message, .. }) => {
                turn.emit(Event::Error { message }).await;
                return messages[..kept_from].to_vec();
            }
        };
        if reply.calls.is_empty() {
            if tier == Tier::Router && gave_up(&reply.text) {
                messages.push(Message::Assistant {
                    text: reply.text,
                    calls: Vec::new(),
                });
                escalate(turn, &mut tier, setup, "the router model said it cannot answer").await;
                continue;
            }
            messages.push(Message::Assistant {
                text: reply.text,
                calls: Vec::new(),
            });
            return messages;
        }
        let calls = reply.calls.clone();
        messages.push(Message::Assistant {
            text: reply.text,
            calls: reply.calls,
        });
        let mut failed = 0;
        for call in calls {
            let args_bytes = match &call.args {
                Ok(v) => v.to_string().len(),
                Err(raw) => raw.len(),
            };
            let span = info_span!(
                "agent.tool_call",
                tool.name = %call.name,
                tool.args_bytes = args_bytes,
                agent.round = round,
                agent.active_tier = tier.name()
            );
            let outcome = match &call.args {
                Ok(args) => turn.call(&call.name, args.clone()).instrument(span).await,
                Err(raw) => {
                    let o = super::run::Outcome::failed(format!("the arguments are not JSON: {raw}"));
                    turn.emit(Event::ToolCall {
                        name: call.name.clone(),
                        args: Value::String(raw.clone()),
                    })
                    .await;
                    turn.emit(Event::ToolResult {
                        name: call.name.clone(),
                        ok: false,
                        error: o.value["error"].as_str().map(str::to_owned),
                    })
                    .await;
                    o
                }
            };
            if !outcome.ok {
                failed += 1;
            }
            messages.push(Message::ToolResult {
                id: call.id,
                name: call.name,
                content: tool_content(&outcome),
            });
        }
        if failed > 0 && tier == Tier::Router {
            escalate(
                turn,
                &mut tier,
                setup,
                &format!("{failed} of the router model's tool calls failed"),
            )
            .await;
        }
    }
    turn.emit(Event::Error {
        message: format!("no answer after {MAX_ROUNDS} model calls; ask something narrower"),
    })
    .await;
    messages[..kept_from].to_vec()
}

/// Moves the turn to the deep tier, saying so.
async fn escalate(turn: &Turn, tier: &mut Tier, setup: &Setup, reason: &str) {
    info_span!("agent.escalation", from = tier.name(), to = "deep", reason = reason).in_scope(|| {
        tracing::info!(reason, "escalated to the deep tier");
    });
    *tier = Tier::Deep;
    turn.emit(Event::Escalation {
        tier: "deep".into(),
        model: setup.deep.model.clone(),
        reason: reason.to_owned(),
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The labelled questions: a tier and a question a line.
    const LABELLED: &str = include_str!("../../tests/fixtures/tier-questions.tsv");

    #[test]
    fn the_classifier_sends_most_questions_to_the_router_and_few_astray() {
        let mut total = 0usize;
        let (mut to_router, mut misrouted) = (0usize, Vec::new());
        for line in LABELLED.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
            let (label, question) = line
                .split_once('\t')
                .unwrap_or_else(|| panic!("not `tier<TAB>question`: {line}"));
            let want = match label {
                "router" => Tier::Router,
                "deep" => Tier::Deep,
                other => panic!("unknown tier {other:?} in {line}"),
            };
            let got = tier_of(question);
            total += 1;
            if got == Tier::Router {
                to_router += 1;
            }
            if got != want {
                misrouted.push(format!("{label} -> {}: {question}", got.name()));
            }
        }
        assert!(total >= 200, "{total} labelled questions");
        let share = to_router as f64 / total as f64;
        println!(
            "{total} questions: {to_router} to the router ({:.1}%), {} misrouted ({:.1}%)",
            share * 100.0,
            misrouted.len(),
            misrouted.len() as f64 * 100.0 / total as f64
        );
        for m in &misrouted {
            println!("  misrouted: {m}");
        }
        assert!((0.80..=0.90).contains(&share), "router share {share:.3}");
        assert!(
            misrouted.len() * 100 <= total * 8,
            "{} misrouted of {total}",
            misrouted.len()
        );
    }

    #[test]
    fn giving_up_is_recognised() {
        assert!(gave_up("Sorry, I cannot answer that from the tools I have."));
        assert!(gave_up("I don't have enough information to say."));
        assert!(!gave_up("There are 42 unattached volumes."));
    }

    #[test]
    fn the_setup_comes_from_the_configuration_and_the_environment() {
        let env = |k: &str| (k == "MY_KEY" || k == "OPENAI_API_KEY").then(|| "sk-test".to_owned());
        assert!(
            Setup::from_config(&json!({}), env)
                .unwrap_or_else(|e| panic!("{e}"))
                .is_none()
        );
        let s = Setup::from_config(
            &json!({"provider": "openai", "model": "big", "router_model": "small"}),
            env,
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("a setup"));
        assert_eq!((s.router.model.as_str(), s.deep.model.as_str()), ("small", "big"));
        assert_eq!(s.deep.base_url, "https://api.openai.com/v1");
        assert_eq!(s.deep.api_key.as_deref(), Some("sk-test"));
        let s = Setup::from_config(
            &json!({"provider": "vllm", "model": "m", "base_url": "http://127.0.0.1:9/v1/", "api_key_env": "MY_KEY"}),
            env,
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("a setup"));
        assert_eq!(
            (s.deep.wire, s.deep.base_url.as_str()),
            (Wire::OpenAi, "http://127.0.0.1:9/v1")
        );
        assert_eq!(s.router.model, "m");
        let e = |v: Value| Setup::from_config(&v, |_| None).err().unwrap_or_default();
        assert!(e(json!({"provider": "vllm", "model": "m"})).contains("needs ai.base_url"));
        assert!(e(json!({"provider": "anthropic"})).contains("needs ai.model"));
        assert!(e(json!({"provider": "anthropic", "model": "c"})).contains("ANTHROPIC_API_KEY"));
        assert!(
            e(json!({"provider": "vllm", "model": "m", "base_url": "http://x", "api_key": "k"})).contains("not read")
        );
        let with_key = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk".to_owned());
        let bad_timeout = Setup::from_config(
            &json!({"provider": "openai", "model": "m", "timeout": "soon"}),
            with_key,
        );
        assert!(bad_timeout.err().unwrap_or_default().contains("ai.timeout"));
    }
}
