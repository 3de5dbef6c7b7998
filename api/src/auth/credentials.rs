//! What the server authenticates against: the token store and the live
//! dashboard sessions, held in the server's state.

use super::sessions::Sessions;
use super::tokens::TokenStore;

/// The token store and the live sessions.
pub struct Auth {
    pub tokens: TokenStore,
    pub sessions: Sessions,
}
