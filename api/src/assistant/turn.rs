//! One answer being made: the events it streams ([`Event`]) and the tools
//! it may call ([`Turn`]).

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{run, tools};

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
