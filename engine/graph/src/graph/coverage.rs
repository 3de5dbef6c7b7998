//! What a scan answers for when it retires what it did not see: the
//! providers of the sources that succeeded, less the parts of their
//! estate a source could not list ([`crate::source::Unlisted`]).

use crate::ids::Sym;

/// A part of a provider's estate a scan did not list: every field that
/// is set narrows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hole {
    pub provider: Sym,
    pub account: Option<Sym>,
    pub region: Option<Sym>,
    pub service: Option<Sym>,
}

impl Hole {
    /// Whether the node of `key` (`[provider, region, service, type, account]`) is in it.
    #[inline]
    fn holds(&self, key: &[Sym; 5]) -> bool {
        let [provider, region, service, _, account] = *key;
        self.provider == provider
            && self.region.is_none_or(|r| r == region)
            && self.service.is_none_or(|s| s == service)
            && self.account.is_none_or(|a| a == account)
    }
}

/// The resources a scan answers for: those of `providers` outside every hole.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    providers: Vec<Sym>,
    holes: Vec<Hole>,
}

impl Coverage {
    /// Everything of `providers`.
    pub fn of(providers: &[Sym]) -> Coverage {
        Coverage {
            providers: providers.to_vec(),
            holes: Vec::new(),
        }
    }

    /// Leaves `hole` out.
    pub fn except(&mut self, hole: Hole) {
        self.holes.push(hole);
    }

    pub fn holes(&self) -> &[Hole] {
        &self.holes
    }

    /// Whether the node of `key` is answered for.
    #[inline]
    pub fn covers(&self, key: &[Sym; 5]) -> bool {
        self.providers.contains(&key[0]) && !self.holes.iter().any(|h| h.holds(key))
    }

    /// Whether `provider` is one answered for (holes aside).
    #[inline]
    pub fn covers_provider(&self, provider: Sym) -> bool {
        self.providers.contains(&provider)
    }

    /// Whether the node of `key` is in a hole.
    #[inline]
    pub fn in_hole(&self, key: &[Sym; 5]) -> bool {
        self.holes.iter().any(|h| h.holds(key))
    }
}
