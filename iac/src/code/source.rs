//! Where a module call's `source` leads: a directory of the same
//! repository, or somewhere this repository cannot answer for.

/// Prefixes that make a module source a local path, as Terraform reads
/// them; anything else is a registry address or a remote (git, http, s3…).
const LOCAL_PREFIXES: [&str; 4] = ["./", "../", ".\\", "..\\"];

/// The repository-relative directory (`/`-separated, `""` for the root)
/// that the module call with `source`, made from the module in `caller`,
/// refers to. `None` when the source is not a local path or climbs above
/// the repository's root.
pub(super) fn resolve(caller: &str, source: &str) -> Option<String> {
    if !LOCAL_PREFIXES.iter().any(|prefix| source.starts_with(prefix)) {
        return None;
    }
    let mut dir: Vec<&str> = caller.split('/').filter(|part| !part.is_empty()).collect();
    for part in source.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                dir.pop()?;
            }
            name => dir.push(name),
        }
    }
    Some(dir.join("/"))
}
