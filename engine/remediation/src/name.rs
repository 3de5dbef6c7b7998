//! [`Name`]: a short text from a small vocabulary (a node type, a state, a
//! rule, an action, a reachability verdict), held once per process and
//! shared by every item that has it. A large estate's pipeline holds
//! millions of items and a few hundred distinct names; as `String`s each
//! item paid a heap block per field.

use std::cell::RefCell;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use rustc_hash::FxHashSet;

/// Names longer than this are not pooled (a vocabulary's names are short;
/// a long one is held by the item alone, so the pool cannot be grown
/// without bound by odd input).
const POOLED_LEN: usize = 128;
/// Distinct names the pool holds at most; past it, new names are held by
/// their items alone.
const POOLED_MAX: usize = 65_536;

static POOL: LazyLock<Mutex<FxHashSet<Arc<str>>>> = LazyLock::new(Mutex::default);

thread_local! {
    /// Each thread's copy of the names it has seen, so the pass's threads
    /// do not queue on the pool's lock for every field of every item.
    static SEEN: RefCell<FxHashSet<Arc<str>>> = RefCell::default();
}

/// A shared, immutable short text; reads as a `str`.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Arc<str>);

impl Name {
    /// The pool's copy of `s`.
    pub fn new(s: &str) -> Name {
        if s.is_empty() {
            return Name::default();
        }
        if s.len() > POOLED_LEN {
            return Name(Arc::from(s));
        }
        SEEN.with(|seen| {
            if let Some(n) = seen.borrow().get(s) {
                return Name(Arc::clone(n));
            }
            let shared = {
                let mut pool = POOL.lock();
                match pool.get(s) {
                    Some(n) => Arc::clone(n),
                    None if pool.len() < POOLED_MAX => {
                        let n: Arc<str> = Arc::from(s);
                        pool.insert(Arc::clone(&n));
                        n
                    }
                    None => return Name(Arc::from(s)),
                }
            };
            seen.borrow_mut().insert(Arc::clone(&shared));
            Name(shared)
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Sets `self` to `value`; whether it changed.
    pub fn set(&mut self, value: &str) -> bool {
        if self.as_str() == value {
            return false;
        }
        *self = Name::new(value);
        true
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name::new(s)
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name::new(&s)
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_names_share_one_text() {
        let a = Name::new("aws_ebs_volume");
        let b = std::thread::spawn(|| Name::new("aws_ebs_volume")).join().unwrap();
        assert_eq!(a, b);
        assert!(Arc::ptr_eq(&a.0, &b.0), "two threads' names are the pool's one text");
        assert_eq!(a.as_str(), "aws_ebs_volume");
        assert_eq!(Name::new(""), Name::default());
    }

    #[test]
    fn a_long_text_is_held_alone_and_set_says_what_changed() {
        let long = "x".repeat(POOLED_LEN + 1);
        let a = Name::new(&long);
        let b = Name::new(&long);
        assert_eq!(a, b);
        assert!(!Arc::ptr_eq(&a.0, &b.0), "not pooled");
        let mut n = Name::new("available");
        assert!(!n.set("available"));
        assert!(n.set("in-use"));
        assert_eq!(n.to_string(), "in-use");
    }
}
