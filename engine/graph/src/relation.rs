//! Edge relationships (SPEC 2.3) and the mapping of plugin relation strings.

use std::fmt;

/// The relationship an edge expresses, from source A to target B.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum Relation {
    /// A is physically attached to B (volume to instance).
    AttachedTo = 0,
    /// A's network access is controlled by B (instance to security group).
    SecuredBy = 1,
    /// A is the logical parent of B (network to subnet).
    Contains = 2,
    /// A executes on B (pod to node).
    Runs = 3,
    /// Traffic flows from A to B.
    FlowsTo = 4,
    /// A grants permissions to B (role to resource).
    Grants = 5,
    /// A depends on B at API level (function to database).
    Uses = 6,
}

impl Relation {
    pub const ALL: [Relation; 7] = [
        Relation::AttachedTo,
        Relation::SecuredBy,
        Relation::Contains,
        Relation::Runs,
        Relation::FlowsTo,
        Relation::Grants,
        Relation::Uses,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Relation::AttachedTo => "AttachedTo",
            Relation::SecuredBy => "SecuredBy",
            Relation::Contains => "Contains",
            Relation::Runs => "Runs",
            Relation::FlowsTo => "FlowsTo",
            Relation::Grants => "Grants",
            Relation::Uses => "Uses",
        }
    }

    pub fn from_u8(v: u8) -> Option<Relation> {
        Relation::ALL.get(usize::from(v)).copied()
    }

    /// Parses the canonical name exactly (`AttachedTo`).
    pub fn from_name(name: &str) -> Option<Relation> {
        Relation::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Whether removing the edge's target affects its source (`true`), or
    /// removing the source affects the target (`false`). Blast radius follows
    /// this: a volume attached to an instance is felt by the instance, a pod
    /// running on a node dies with the node, a subnet goes with its network.
    pub fn source_depends_on_target(self) -> bool {
        match self {
            // The instance depends on its attached volume or address.
            Relation::AttachedTo => false,
            // The instance depends on its security group.
            Relation::SecuredBy => true,
            // The child depends on its parent.
            Relation::Contains => false,
            // The pod depends on the node it runs on.
            Relation::Runs => true,
            // The sender depends on its destination.
            Relation::FlowsTo => true,
            // The grantee depends on the grant.
            Relation::Grants => false,
            // The user depends on what it uses.
            Relation::Uses => true,
        }
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A plugin relation string mapped onto the enumeration.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct MappedRelation {
    pub relation: Relation,
    /// The edge runs the other way: `MEMBER_OF` from A to B is `Contains` from B to A.
    pub reversed: bool,
    /// `false` when the string was not recognised and fell back to `Uses`.
    pub known: bool,
}

/// Maps a plugin relation string, case-insensitively and ignoring `-`, `_`
/// and spaces. Unknown strings map to `Uses` with `known` false; the caller
/// counts and logs them and keeps the original as edge property `relation`.
pub fn map_relation(raw: &str) -> MappedRelation {
    let mut norm = [0u8; 32];
    let mut len = 0;
    for b in raw.bytes() {
        if matches!(b, b'-' | b'_' | b' ') {
            continue;
        }
        if len == norm.len() {
            return unknown();
        }
        norm[len] = b.to_ascii_uppercase();
        len += 1;
    }
    let key = &norm[..len];
    let (relation, reversed) = match key {
        b"ATTACHEDTO" => (Relation::AttachedTo, false),
        b"SECUREDBY" => (Relation::SecuredBy, false),
        b"CONTAINS" | b"PARENTOF" => (Relation::Contains, false),
        b"MEMBEROF" | b"CHILDOF" | b"IN" => (Relation::Contains, true),
        b"RUNS" | b"RUNSON" => (Relation::Runs, false),
        b"HOSTS" => (Relation::Runs, true),
        b"FLOWSTO" | b"ROUTESTO" => (Relation::FlowsTo, false),
        b"GRANTS" => (Relation::Grants, false),
        b"USES" | b"DEPENDSON" | b"INVOKES" | b"READS" | b"WRITES" => (Relation::Uses, false),
        _ => return unknown(),
    };
    MappedRelation {
        relation,
        reversed,
        known: true,
    }
}

fn unknown() -> MappedRelation {
    MappedRelation {
        relation: Relation::Uses,
        reversed: false,
        known: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_every_documented_string() {
        let cases: &[(&str, Relation, bool)] = &[
            ("ATTACHED_TO", Relation::AttachedTo, false),
            ("attached-to", Relation::AttachedTo, false),
            ("AttachedTo", Relation::AttachedTo, false),
            ("SECURED_BY", Relation::SecuredBy, false),
            ("CONTAINS", Relation::Contains, false),
            ("PARENT_OF", Relation::Contains, false),
            ("MEMBER_OF", Relation::Contains, true),
            ("CHILD_OF", Relation::Contains, true),
            ("in", Relation::Contains, true),
            ("RUNS", Relation::Runs, false),
            ("runs on", Relation::Runs, false),
            ("HOSTS", Relation::Runs, true),
            ("FLOWS_TO", Relation::FlowsTo, false),
            ("ROUTES_TO", Relation::FlowsTo, false),
            ("GRANTS", Relation::Grants, false),
            ("USES", Relation::Uses, false),
            ("DEPENDS_ON", Relation::Uses, false),
            ("INVOKES", Relation::Uses, false),
            ("READS", Relation::Uses, false),
            ("WRITES", Relation::Uses, false),
        ];
        for (raw, rel, rev) in cases {
            let m = map_relation(raw);
            assert_eq!((m.relation, m.reversed, m.known), (*rel, *rev, true), "{raw}");
        }
    }

    #[test]
    fn unknown_strings_fall_back_to_uses() {
        for raw in ["PEERS_WITH", "", "x".repeat(100).as_str(), "ÄTTACHED"] {
            let m = map_relation(raw);
            assert_eq!(
                (m.relation, m.reversed, m.known),
                (Relation::Uses, false, false),
                "{raw}"
            );
        }
    }

    #[test]
    fn numeric_values_match_the_binary_form() {
        for (i, r) in Relation::ALL.iter().enumerate() {
            assert_eq!(*r as u8 as usize, i);
            assert_eq!(Relation::from_u8(i as u8), Some(*r));
            assert_eq!(Relation::from_name(r.name()), Some(*r));
        }
        assert_eq!(Relation::from_u8(7), None);
    }
}
