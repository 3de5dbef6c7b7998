//! What the providers' storage rules share: how long storage may go
//! unread, a stale bucket's or account's finding, and the words for a
//! volume or disk.

use std::fmt;

use super::rule::{Hit, Why};
use super::units::{days, usd};
use super::view::Node;
use svc_graph::ids::Sym;

/// Days without access before storage counts as abandoned.
pub const STALE_DAYS: u64 = 90;

/// Storage with no requests in 30 days and no access in [`STALE_DAYS`].
pub(super) fn stale_storage(n: &Node<'_>, why: &mut Why<'_>, requests: Option<Sym>) -> Option<Hit> {
    let k = n.keys();
    if n.num(requests)? > 0.0 {
        return None;
    }
    let d = n.days_since_prop(k.last_accessed_at).unwrap_or_else(|| n.age_days());
    if d < STALE_DAYS {
        return None;
    }
    let size = n.num(k.size_gib).unwrap_or(0.0);
    Some(why.hit(
        n.cost(),
        format_args!(
            "no requests in 30 days, last accessed {} ago, {size:.0} GiB, {}",
            days(d),
            usd(n.cost())
        ),
    ))
}

/// "500 GiB gp2, $50.00/mo": a volume's or disk's size, its class (the
/// first of the `class` properties it has, else `fallback`) and its cost,
/// read only when the reason is rendered.
pub fn storage_facts<'a>(n: &'a Node<'_>, class: [Option<Sym>; 2], fallback: &'static str) -> impl fmt::Display + 'a {
    fmt::from_fn(move |f| {
        let size = n.num(n.keys().size_gib).unwrap_or(0.0);
        let class = class.into_iter().find_map(|k| n.str(k)).unwrap_or(fallback);
        write!(f, "{size:.0} GiB {class}, {}", usd(n.cost()))
    })
}
