//! The conversations of the models' answers, kept between questions.

use super::model::Message;

/// The conversations of the models' answers: each one's messages (the
/// questions, the answers, the tools' answers), the most recently used kept.
#[derive(Default)]
pub struct Conversations(parking_lot::Mutex<Vec<(String, Vec<Message>, std::time::Instant)>>);

/// Conversations kept, and messages kept of each.
const CONVERSATIONS_KEPT: usize = 256;
const MESSAGES_KEPT: usize = 48;

impl Conversations {
    /// The messages of conversation `id` (none when unknown).
    pub fn get(&self, id: &str) -> Vec<Message> {
        self.0
            .lock()
            .iter()
            .find(|(k, ..)| k == id)
            .map(|(_, m, _)| m.clone())
            .unwrap_or_default()
    }

    /// Keeps `messages` as conversation `id`'s: the newest, from a question on.
    pub fn put(&self, id: &str, mut messages: Vec<Message>) {
        if messages.len() > MESSAGES_KEPT {
            let mut start = messages.len() - MESSAGES_KEPT;
            while start < messages.len() && !matches!(messages[start], Message::User(_)) {
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
