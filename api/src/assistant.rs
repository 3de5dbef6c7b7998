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
pub mod conversations;
pub mod mcp;
pub mod model;
pub mod offline;
pub mod run;
pub mod tools;
pub mod turn;

pub use conversations::Conversations;
pub use turn::{Event, Turn};

/// Longest question taken, in characters.
pub const MAX_QUESTION_CHARS: usize = 4000;

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
