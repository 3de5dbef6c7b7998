//! The plugin's settings, read from the `config` map of a `ScanRequest` or
//! `PreflightRequest` (the daemon's `[plugins.config.aws]`, values as
//! strings).
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `regions` | regions to scan: a list (`["us-east-1", "eu-west-1"]`) or comma-separated text | the account's enabled regions (`DescribeRegions`) |
//! | `region` | one region to scan, when `regions` is not set | as above |
//! | `max_in_flight` | AWS requests in flight at once, across regions and services | 8 |
//! | `max_attempts` | attempts per request, retries included (adaptive retry) | 3 |
//! | `endpoint_url.<region>` | the EC2 endpoint of one region (a VPC interface endpoint, FIPS) | the standard endpoint, or `AWS_ENDPOINT_URL` |
//! | `accounts` | roles to assume, one per further account to scan (`["arn:aws:iam::222233334444:role/svc-read"]`) | none |
//! | `external_id` | the external id those roles' trust policies ask for | none |
//! | `role_session_name` | the session name of those roles (CloudTrail shows it) | `svc-scan` |
//! | `include_caller_account` | whether the credentials' own account is scanned too | `true` |
//!
//! Credentials come from the standard chain (environment, shared profiles,
//! SSO, web identity, container and instance metadata), never from here.

use std::collections::{BTreeMap, HashMap};

/// Default bound on requests in flight.
pub const DEFAULT_IN_FLIGHT: usize = 8;
/// Default attempts per request.
pub const DEFAULT_ATTEMPTS: u32 = 3;
/// Upper bound on `max_in_flight`, so a typo cannot open a thousand connections.
const MAX_IN_FLIGHT: usize = 64;

/// Parsed settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Regions to scan; `None`: every enabled region of the account.
    pub regions: Option<Vec<String>>,
    pub max_in_flight: usize,
    pub max_attempts: u32,
    /// Endpoint overrides by region.
    pub endpoints: BTreeMap<String, String>,
    /// Roles to assume, one per further account (their ARNs).
    pub roles: Vec<Role>,
    pub external_id: Option<String>,
    pub session_name: String,
    /// Whether the account of the credentials themselves is scanned.
    pub include_caller_account: bool,
}

/// A role in another account, from its ARN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Role {
    pub arn: String,
    /// The account the ARN names.
    pub account: String,
}

impl Role {
    /// `arn:<partition>:iam::<12 digits>:role/<path and name>`.
    fn parse(arn: &str) -> Result<Role, String> {
        let parts: Vec<&str> = arn.splitn(6, ':').collect();
        let valid = parts.len() == 6
            && parts[0] == "arn"
            && !parts[1].is_empty()
            && parts[2] == "iam"
            && parts[3].is_empty()
            && parts[4].len() == 12
            && parts[4].bytes().all(|b| b.is_ascii_digit())
            && parts[5].strip_prefix("role/").is_some_and(|n| !n.is_empty());
        if !valid {
            return Err(format!(
                "invalid role {arn:?} in accounts: expected an ARN such as arn:aws:iam::222233334444:role/svc-read"
            ));
        }
        Ok(Role {
            arn: arn.to_owned(),
            account: parts[4].to_owned(),
        })
    }
}

/// The default session name of assumed roles.
pub const SESSION_NAME: &str = "svc-scan";

impl Settings {
    /// Reads the settings; an error names the key and the value that is wrong.
    pub fn from_config(config: &HashMap<String, String>) -> Result<Settings, String> {
        let regions = match (config.get("regions"), config.get("region")) {
            (Some(list), _) => Some(parse_list(list).map_err(|e| format!("invalid regions {list:?}: {e}"))?),
            (None, Some(one)) if !one.trim().is_empty() => Some(vec![one.trim().to_owned()]),
            _ => None,
        };
        if let Some(rs) = &regions {
            if rs.is_empty() {
                return Err("invalid regions: the list is empty".into());
            }
            if let Some(bad) = rs.iter().find(|r| !valid_region(r)) {
                return Err(format!("invalid region {bad:?}: expected a name such as us-east-1"));
            }
        }
        let max_in_flight = number(config, "max_in_flight", DEFAULT_IN_FLIGHT, 1..=MAX_IN_FLIGHT)?;
        let max_attempts = number(config, "max_attempts", DEFAULT_ATTEMPTS as usize, 1..=10)? as u32;
        let endpoints = config
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("endpoint_url.")?.to_owned(), v.trim().to_owned())))
            .collect();
        let roles = match config.get("accounts") {
            Some(list) => parse_list(list)
                .map_err(|e| format!("invalid accounts {list:?}: {e}"))?
                .iter()
                .map(|arn| Role::parse(arn))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let text = |key: &str| config.get(key).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let session_name = text("role_session_name").unwrap_or_else(|| SESSION_NAME.to_owned());
        let session_ok = session_name.len() <= 64
            && session_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"=,.@-_".contains(&b));
        if !session_ok {
            return Err(format!(
                "invalid role_session_name {session_name:?}: 2 to 64 letters, digits and =,.@-_"
            ));
        }
        let include_caller_account = match text("include_caller_account").as_deref() {
            None | Some("true") => true,
            Some("false") => false,
            Some(other) => {
                return Err(format!(
                    "invalid include_caller_account {other:?}: expected true or false"
                ));
            }
        };
        if !include_caller_account && roles.is_empty() {
            return Err("include_caller_account is false and accounts names no role: nothing to scan".into());
        }
        Ok(Settings {
            regions,
            max_in_flight,
            max_attempts,
            endpoints,
            roles,
            external_id: text("external_id"),
            session_name,
            include_caller_account,
        })
    }
}

fn number(
    config: &HashMap<String, String>,
    key: &str,
    default: usize,
    range: std::ops::RangeInclusive<usize>,
) -> Result<usize, String> {
    let Some(v) = config.get(key) else {
        return Ok(default);
    };
    match v.trim().parse::<usize>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(format!(
            "invalid {key} {v:?}: expected a number from {} to {}",
            range.start(),
            range.end()
        )),
    }
}

/// A list as the daemon hands it over: TOML or JSON array text
/// (`["a", "b"]`), or comma-separated names.
fn parse_list(text: &str) -> Result<Vec<String>, String> {
    let t = text.trim();
    let items: Vec<String> = if t.starts_with('[') {
        serde_json::from_str::<Vec<String>>(t).map_err(|e| format!("not a list of names: {e}"))?
    } else {
        t.split(',').map(str::to_owned).collect()
    };
    Ok(items
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect())
}

/// `us-east-1`, `ap-southeast-2`, `us-gov-west-1`: lowercase letters,
/// digits and dashes, starting with a letter.
fn valid_region(r: &str) -> bool {
    r.len() <= 32
        && r.starts_with(|c: char| c.is_ascii_lowercase())
        && r.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn reads_lists_in_toml_json_and_comma_form() {
        for text in [
            r#"["us-east-1", "eu-west-1"]"#,
            "us-east-1, eu-west-1",
            "us-east-1,eu-west-1,",
        ] {
            let s = Settings::from_config(&cfg(&[("regions", text)])).unwrap();
            assert_eq!(s.regions, Some(vec!["us-east-1".into(), "eu-west-1".into()]), "{text}");
        }
        let s = Settings::from_config(&cfg(&[("region", "eu-west-3")])).unwrap();
        assert_eq!(s.regions, Some(vec!["eu-west-3".into()]));
        let s = Settings::from_config(&cfg(&[])).unwrap();
        assert_eq!(s.regions, None);
        assert_eq!((s.max_in_flight, s.max_attempts), (DEFAULT_IN_FLIGHT, DEFAULT_ATTEMPTS));
    }

    #[test]
    fn names_the_wrong_value() {
        let e = Settings::from_config(&cfg(&[("regions", "[]")])).unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let e = Settings::from_config(&cfg(&[("regions", "us-east-1, Bad Region")])).unwrap_err();
        assert_eq!(e, r#"invalid region "Bad Region": expected a name such as us-east-1"#);
        let e = Settings::from_config(&cfg(&[("max_in_flight", "0")])).unwrap_err();
        assert_eq!(e, r#"invalid max_in_flight "0": expected a number from 1 to 64"#);
    }

    #[test]
    fn reads_the_accounts_to_assume_roles_in() {
        let s = Settings::from_config(&cfg(&[(
            "accounts",
            r#"["arn:aws:iam::222233334444:role/svc-read", "arn:aws-cn:iam::555566667777:role/ops/svc"]"#,
        )]))
        .unwrap();
        let accounts: Vec<&str> = s.roles.iter().map(|r| r.account.as_str()).collect();
        assert_eq!(accounts, ["222233334444", "555566667777"]);
        assert_eq!(
            (s.session_name.as_str(), s.include_caller_account),
            (SESSION_NAME, true)
        );
        assert_eq!(s.external_id, None);
        for bad in [
            "arn:aws:iam::2222:role/x",
            "arn:aws:iam::222233334444:user/x",
            "arn:aws:iam::222233334444:role/",
            "222233334444",
        ] {
            let e = Settings::from_config(&cfg(&[("accounts", bad)])).unwrap_err();
            assert!(e.starts_with("invalid role"), "{bad}: {e}");
        }
        let e = Settings::from_config(&cfg(&[("include_caller_account", "false")])).unwrap_err();
        assert!(e.contains("nothing to scan"), "{e}");
        let e = Settings::from_config(&cfg(&[("role_session_name", "has space")])).unwrap_err();
        assert!(e.starts_with("invalid role_session_name"), "{e}");
    }

    #[test]
    fn reads_endpoint_overrides_by_region() {
        let s = Settings::from_config(&cfg(&[("endpoint_url.eu-west-1", " http://127.0.0.1:9 ")])).unwrap();
        assert_eq!(
            s.endpoints.get("eu-west-1").map(String::as_str),
            Some("http://127.0.0.1:9")
        );
    }
}
