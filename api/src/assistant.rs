//! Questions about the estate in plain language: `POST
//! /api/v1/cortex/assimilate` streams the answer as JSON lines, and `GET
//! /api/v1/ai/providers` says who answers. The answerer only reads: every
//! fact comes from a tool ([`tools`]), each one request to the daemon's own
//! read endpoints made with the asker's credentials ([`run`]); nothing it
//! does approves, rejects, moves or changes anything.
//!
//! Without a configured model the [`offline`] answerer takes the common
//! questions from the tools alone and says plainly when a question needs a
//! model.

pub mod agent;
pub mod model;
pub mod offline;
pub mod run;
pub mod tools;

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

/// Longest question taken, in characters.
pub const MAX_QUESTION_CHARS: usize = 4000;
/// Events of an answer buffered ahead of the client.
const EVENTS_AHEAD: usize = 32;

/// One line of an answer's stream.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// First: the conversation the answer belongs to and who answers it.
    Start {
        conversation_id: String,
        /// `offline`, `router` or `deep`.
        tier: String,
        provider: String,
        model: Option<String>,
    },
    /// A tool the answerer called, with its arguments.
    ToolCall { name: String, args: Value },
    /// Whether the call answered; why not when it did not.
    ToolResult {
        name: String,
        ok: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The router tier handed the answer to the deep tier, and why.
    Escalation {
        tier: String,
        model: String,
        reason: String,
    },
    /// A piece of the answer's text (Markdown).
    Text { text: String },
    /// Last but one: the resources and the requests the answer rests on.
    Sources { crns: Vec<String>, queries: Vec<String> },
    /// The answer is complete.
    Done,
    /// The answer stopped early; the text so far stands.
    Error { message: String },
}

/// One answer being made: the tools it may call and where its events go.
pub struct Turn {
    exec: run::Executor,
    tx: mpsc::Sender<Event>,
    crns: BTreeSet<String>,
    queries: Vec<String>,
}

impl Turn {
    pub fn new(exec: run::Executor) -> (Turn, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel(EVENTS_AHEAD);
        (
            Turn {
                exec,
                tx,
                crns: BTreeSet::new(),
                queries: Vec::new(),
            },
            rx,
        )
    }

    /// Sends `event`; `false` once the asker is gone.
    pub async fn emit(&self, event: Event) -> bool {
        self.tx.send(event).await.is_ok()
    }

    /// Where the answer's events go, for a producer of its own.
    pub fn sender(&self) -> mpsc::Sender<Event> {
        self.tx.clone()
    }

    /// Calls a tool, telling the asker; its outcome. A call that answered
    /// counts among the sources, with the CRN it asked about.
    pub async fn call(&mut self, name: &str, args: Value) -> run::Outcome {
        self.emit(Event::ToolCall {
            name: name.to_owned(),
            args: args.clone(),
        })
        .await;
        let outcome = self.exec.call(name, &args).await;
        let error = (!outcome.ok).then(|| outcome.value["error"].as_str().unwrap_or("the tool failed").to_owned());
        self.emit(Event::ToolResult {
            name: name.to_owned(),
            ok: outcome.ok,
            error,
        })
        .await;
        if outcome.ok
            && let Ok(r) = tools::request(name, &args)
        {
            let method = match r.method {
                tools::Method::Get => "GET",
                tools::Method::Post => "POST",
            };
            self.queries.push(format!("{method} {}", r.path));
            if let Some(crn) = args.get("crn").and_then(Value::as_str) {
                self.cite(crn);
            }
        }
        outcome
    }

    /// Calls a tool for the offline answerer: its answer when it gave one;
    /// a failed call is told to the asker in words and yields `None`.
    pub async fn tool(&mut self, name: &str, args: Value) -> Option<Value> {
        let outcome = self.call(name, args).await;
        if outcome.ok {
            return Some(outcome.value);
        }
        let e = outcome.value["error"].as_str().unwrap_or("the tool failed").to_owned();
        self.say(&format!("I could not get that from the daemon ({name}): {e}"))
            .await;
        None
    }

    /// Adds text to the answer.
    pub async fn say(&self, text: &str) -> bool {
        self.emit(Event::Text { text: text.to_owned() }).await
    }

    /// Names a resource the answer rests on.
    pub fn cite(&mut self, crn: &str) {
        if !crn.is_empty() {
            self.crns.insert(crn.to_owned());
        }
    }

    /// Ends the answer: its sources, then `done`.
    pub async fn finish(self) {
        let crns = self.crns.iter().cloned().collect();
        self.emit(Event::Sources {
            crns,
            queries: self.queries.clone(),
        })
        .await;
        self.emit(Event::Done).await;
    }
}

/// Answers `question` in `turn` with the configured models, after the
/// conversation's earlier messages; keeps the conversation's messages.
pub async fn answer_with_model(
    setup: &agent::Setup,
    conversations: &Conversations,
    question: &str,
    mut turn: Turn,
    conversation_id: String,
) {
    let history = conversations.get(&conversation_id);
    let kept = agent::answer(setup, history, question, &mut turn, conversation_id.clone()).await;
    conversations.put(&conversation_id, kept);
    turn.finish().await;
}

/// The conversations of the models' answers: each one's messages (the
/// questions, the answers, the tools' answers), the most recently used kept.
#[derive(Default)]
pub struct Conversations(parking_lot::Mutex<Vec<(String, Vec<model::Message>, std::time::Instant)>>);

/// Conversations kept, and messages kept of each.
const CONVERSATIONS_KEPT: usize = 256;
const MESSAGES_KEPT: usize = 48;

impl Conversations {
    /// The messages of conversation `id` (none when unknown).
    pub fn get(&self, id: &str) -> Vec<model::Message> {
        self.0
            .lock()
            .iter()
            .find(|(k, ..)| k == id)
            .map(|(_, m, _)| m.clone())
            .unwrap_or_default()
    }

    /// Keeps `messages` as conversation `id`'s: the newest, from a question on.
    pub fn put(&self, id: &str, mut messages: Vec<model::Message>) {
        if messages.len() > MESSAGES_KEPT {
            let mut start = messages.len() - MESSAGES_KEPT;
            while start < messages.len() && !matches!(messages[start], model::Message::User(_)) {
                start += 1;
            }
            messages.drain(..start);
        }
        let mut all = self.0.lock();
        all.retain(|(k, ..)| k != id);
        if all.len() >= CONVERSATIONS_KEPT
            && let Some(oldest) = all.iter().enumerate().min_by_key(|(_, c)| c.2).map(|(i, _)| i)
        {
            all.swap_remove(oldest);
        }
        all.push((id.to_owned(), messages, std::time::Instant::now()));
    }
}

/// Answers `question` in `turn`: the offline answerer, as no model is
/// configured (or none answers).
pub async fn answer(question: &str, mut turn: Turn, conversation_id: String, why_offline: &str) {
    let started = turn
        .emit(Event::Start {
            conversation_id,
            tier: "offline".into(),
            provider: "offline".into(),
            model: None,
        })
        .await;
    if !started {
        return;
    }
    match offline::classify(question) {
        Some(intent) => offline::answer(&intent, &mut turn).await,
        None => {
            offline::unknown(
                &mut turn,
                &format!("This question needs a language model, and {why_offline}."),
            )
            .await
        }
    }
    turn.finish().await;
}
