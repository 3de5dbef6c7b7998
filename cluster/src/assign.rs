//! Assignment of sources to live workers: pure and deterministic.
//!
//! Rendezvous (highest-random-weight) hashing: each source goes to the
//! member, among those able to run it, whose hash with the source is
//! highest. When a member leaves only its own sources move, each to the
//! member that ranked next for it; when one joins it takes about its share,
//! from every other member alike. Every node computing the assignment from
//! the same live set gets the same answer, with no coordination.

use std::collections::BTreeMap;

use crate::membership::Member;

/// A unit of scanning work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The provider that scans it (`aws`, `mock`).
    pub provider: String,
    /// Its key, unique among sources: provider, account, region, cluster
    /// (`aws/123456789012/eu-west-1`).
    pub key: String,
}

/// Which member runs which source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assignment {
    /// Source key to member id.
    pub owner: BTreeMap<String, String>,
    /// Source keys no live member can run.
    pub unassigned: Vec<String>,
}

impl Assignment {
    /// The source keys assigned to `member`, in key order.
    pub fn sources_of(&self, member: &str) -> Vec<&str> {
        self.owner
            .iter()
            .filter(|(_, m)| m.as_str() == member)
            .map(|(s, _)| s.as_str())
            .collect()
    }
}

fn can_run(member: &Member, source: &Source) -> bool {
    member
        .sources
        .iter()
        .any(|c| c == "*" || *c == source.provider || *c == source.key)
}

/// FNV-1a over the source key, a separator and the member id, then a
/// 64-bit finaliser so that close inputs spread. Fixed here (not std's
/// hasher, which may change between releases) so every version of the
/// daemon assigns alike.
fn weight(source: &str, member: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in source.bytes().chain([0xff]).chain(member.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Assigns every source to one member able to run it.
pub fn assign(sources: &[Source], members: &[Member]) -> Assignment {
    let mut out = Assignment::default();
    for source in sources {
        let best = members
            .iter()
            .filter(|m| can_run(m, source))
            // Ties (vanishingly rare) go to the smaller id.
            .max_by(|a, b| {
                weight(&source.key, &a.id)
                    .cmp(&weight(&source.key, &b.id))
                    .then(b.id.cmp(&a.id))
            });
        match best {
            Some(m) => {
                out.owner.insert(source.key.clone(), m.id.clone());
            }
            None => out.unassigned.push(source.key.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, sources: &[&str]) -> Member {
        Member {
            id: id.into(),
            addr: format!("https://{id}:7443"),
            sources: sources.iter().map(|s| (*s).into()).collect(),
        }
    }

    fn sources(n: usize) -> Vec<Source> {
        (0..n)
            .map(|i| {
                let provider = if i % 3 == 0 { "mock" } else { "aws" };
                Source {
                    provider: provider.into(),
                    key: format!("{provider}/{:012}/region-{}", i / 7, i % 7),
                }
            })
            .collect()
    }

    fn moved(a: &Assignment, b: &Assignment) -> usize {
        a.owner.iter().filter(|(s, m)| b.owner.get(*s) != Some(m)).count()
    }

    #[test]
    fn every_source_goes_to_a_member_able_to_run_it() {
        let members = [member("w1", &["aws"]), member("w2", &["mock"]), member("w3", &["*"])];
        let srcs = sources(300);
        let a = assign(&srcs, &members);
        assert_eq!(a.owner.len(), 300);
        assert!(a.unassigned.is_empty());
        for s in &srcs {
            let owner = &a.owner[&s.key];
            let m = members.iter().find(|m| &m.id == owner).unwrap();
            assert!(can_run(m, s), "{} given to {owner}, which cannot run it", s.key);
        }
        assert!(!a.sources_of("w1").is_empty() && !a.sources_of("w2").is_empty() && !a.sources_of("w3").is_empty());
    }

    #[test]
    fn a_source_nobody_can_run_is_unassigned() {
        let srcs = vec![Source {
            provider: "gcp".into(),
            key: "gcp/p1".into(),
        }];
        let a = assign(&srcs, &[member("w1", &["aws"])]);
        assert!(a.owner.is_empty());
        assert_eq!(a.unassigned, ["gcp/p1"]);
        assert_eq!(assign(&srcs, &[]).unassigned, ["gcp/p1"]);
        let a = assign(&srcs, &[member("w1", &["gcp/p1"])]);
        assert_eq!(a.owner["gcp/p1"], "w1");
    }

    #[test]
    fn the_assignment_is_deterministic_and_independent_of_member_order() {
        let mut members: Vec<Member> = (0..5).map(|i| member(&format!("w{i}"), &["*"])).collect();
        let srcs = sources(500);
        let a = assign(&srcs, &members);
        members.reverse();
        assert_eq!(assign(&srcs, &members), a);
        // Fixed figures: every build, on every machine, assigns alike.
        assert_eq!(weight("aws/1/eu-west-1", "w1"), 0xb304_5c80_f7ff_e8e0);
        assert_eq!(weight("aws/1/eu-west-1", "w2"), 0xa88d_f37a_1725_02bd);
    }

    #[test]
    fn shares_are_even() {
        let members: Vec<Member> = (0..4).map(|i| member(&format!("w{i}"), &["*"])).collect();
        let a = assign(&sources(4000), &members);
        for m in &members {
            let n = a.sources_of(&m.id).len();
            assert!((800..=1200).contains(&n), "{} runs {n} of 4000 sources", m.id);
        }
    }

    #[test]
    fn when_a_member_leaves_only_its_sources_move() {
        let members: Vec<Member> = (0..5).map(|i| member(&format!("w{i}"), &["*"])).collect();
        let srcs = sources(2000);
        let before = assign(&srcs, &members);
        let after = assign(&srcs, &members[1..]);
        let lost = before.sources_of("w0").len();
        assert!(lost > 0);
        assert_eq!(moved(&before, &after), lost);
        for (s, m) in &before.owner {
            if m != "w0" {
                assert_eq!(&after.owner[s], m, "{s} moved though its member stayed");
            }
        }
        assert!(after.sources_of("w0").is_empty());
    }

    #[test]
    fn a_joining_member_takes_about_its_share_and_nothing_else_moves() {
        let members: Vec<Member> = (0..4).map(|i| member(&format!("w{i}"), &["*"])).collect();
        let srcs = sources(2000);
        let before = assign(&srcs, &members);
        let mut more = members.clone();
        more.push(member("w4", &["*"]));
        let after = assign(&srcs, &more);
        let taken = after.sources_of("w4").len();
        assert_eq!(moved(&before, &after), taken, "only sources the new member took move");
        assert!((300..=500).contains(&taken), "new member took {taken} of 2000");
    }
}
