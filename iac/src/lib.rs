//! Infrastructure as code: what Terraform declares, matched to the live
//! graph. `state` reads Terraform state (format version 4) into declared
//! resources with their addresses; `mapping` names each Terraform resource
//! type's graph type, CRN and the attributes both sides report; `drift`
//! compares the declared resources with the live ones; `code` finds a
//! resource's block in the `.tf` files of a git repository and who wrote
//! it; `change` says what code change keeps a deletion from leaving drift.
//!
//! Nothing here fetches a state or reads the daemon's configuration: the
//! API hands in the bytes of each state and the repository's path.

pub mod address;
pub mod change;
pub mod code;
pub mod drift;
pub mod mapping;
pub mod state;
