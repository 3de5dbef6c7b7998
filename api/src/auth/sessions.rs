//! Dashboard sessions: a browser signs in with a token once and then holds
//! a random session id in an HttpOnly, SameSite=Strict cookie. Sessions live
//! in memory (a restart signs everyone out) and end after
//! [`IDLE_TIMEOUT`] without a request, at sign-out, or when their token is
//! revoked. Each has a CSRF token that writes made with the cookie must
//! repeat in the `X-CSRF-Token` header.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::roles::Role;
use super::tokens::{TokenError, generate};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "svc_session";
/// Header a cookie-authenticated write must carry.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// A session unused this long is over.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(12 * 3600);

/// One signed-in browser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// The token's name.
    pub name: String,
    pub role: Role,
    pub csrf: String,
}

struct Live {
    session: Session,
    last_used: Instant,
}

#[derive(Default)]
pub struct Sessions {
    live: Mutex<HashMap<String, Live>>,
}

impl Sessions {
    /// Opens a session for the holder of token `name`: its id (the cookie
    /// value) and the session.
    pub fn open(&self, name: &str, role: Role) -> Result<(String, Session), TokenError> {
        let id = generate()?;
        let session = Session {
            name: name.to_owned(),
            role,
            csrf: generate()?,
        };
        let now = Instant::now();
        let mut live = self.live.lock();
        live.retain(|_, l| now.duration_since(l.last_used) < IDLE_TIMEOUT);
        live.insert(
            id.clone(),
            Live {
                session: session.clone(),
                last_used: now,
            },
        );
        Ok((id, session))
    }

    /// The session with cookie value `id`, if it is live; using it keeps it so.
    pub fn touch(&self, id: &str) -> Option<Session> {
        self.touch_at(id, Instant::now())
    }

    fn touch_at(&self, id: &str, now: Instant) -> Option<Session> {
        let mut live = self.live.lock();
        let l = live.get_mut(id)?;
        if now.saturating_duration_since(l.last_used) >= IDLE_TIMEOUT {
            live.remove(id);
            return None;
        }
        l.last_used = now;
        Some(l.session.clone())
    }

    /// Ends session `id`; whether it was live.
    pub fn close(&self, id: &str) -> bool {
        self.live.lock().remove(id).is_some()
    }

    /// Ends every session of token `name`; how many there were.
    pub fn close_all_of(&self, name: &str) -> usize {
        let mut live = self.live.lock();
        let before = live.len();
        live.retain(|_, l| l.session.name != name);
        before - live.len()
    }
}

/// The value of cookie `name` in a request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|c| c.split(';'))
        .find_map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            (k.trim() == name).then_some(v.trim())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_open_expire_and_close() {
        let s = Sessions::default();
        let (id, session) = s.open("alice", Role::Operator).unwrap();
        assert_eq!(s.touch(&id), Some(session.clone()));
        assert_ne!(session.csrf, id);
        assert_eq!(s.touch("other"), None);
        // Idle for the timeout: over.
        let later = Instant::now() + IDLE_TIMEOUT;
        assert_eq!(s.touch_at(&id, later), None);
        assert_eq!(s.touch(&id), None, "an expired session is gone");
        let (a, _) = s.open("bob", Role::Viewer).unwrap();
        let (b, _) = s.open("bob", Role::Viewer).unwrap();
        let (c, _) = s.open("carol", Role::Viewer).unwrap();
        assert_eq!(s.close_all_of("bob"), 2);
        assert_eq!((s.touch(&a), s.touch(&b)), (None, None));
        assert!(s.touch(&c).is_some());
        assert!(s.close(&c));
        assert!(!s.close(&c));
    }

    #[test]
    fn reads_one_cookie_among_many() {
        let mut h = axum::http::HeaderMap::new();
        h.append("cookie", "a=1; svc_session=abc ; b=2".parse().unwrap());
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("abc"));
        assert_eq!(cookie(&h, "svc_sessionx"), None);
        h.insert("cookie", "x_svc_session=1".parse().unwrap());
        assert_eq!(cookie(&h, SESSION_COOKIE), None);
    }
}
