//! Cloud resource names.
//!
//! Graph form (canonical, what the daemon stores and returns):
//! `crn:svc:<provider>:<region>:<service>:<kind>:<account>:<physical_id>`.
//! Plugin form: `crn:svc:<provider>:<region>:<account>:<resource_type>:<resource_id>`,
//! converted by deriving the service from `(provider, resource_type)`.
//! The physical id is everything after the last fixed segment, so ids with
//! colons (ARNs) survive. Both forms are also accepted without the `svc`
//! segment.

use std::fmt;

use thiserror::Error;

/// The namespace token that begins every CRN.
pub const NAMESPACE: &str = "svc";

#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Crn {
    pub provider: String,
    pub region: String,
    pub service: String,
    pub kind: String,
    pub account: String,
    pub id: String,
}

/// Which form a CRN was written in.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum CrnForm {
    Graph,
    Plugin,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum CrnError {
    #[error("invalid crn {input:?}: must start with \"crn:\"")]
    Prefix { input: String },
    #[error("invalid crn {input:?}: expected 8 segments (or 7 in plugin form), found {found}")]
    Segments { input: String, found: usize },
    #[error("invalid crn {input:?}: segment {segment} is empty")]
    Empty { input: String, segment: &'static str },
    #[error("invalid crn {input:?}: segment {segment} has a character outside [A-Za-z0-9._/-]: {ch:?}")]
    Character {
        input: String,
        segment: &'static str,
        ch: char,
    },
    #[error("invalid crn {input:?}: the physical id contains whitespace or a control character")]
    Id { input: String },
    #[error("invalid crn {input:?}: longer than {max} bytes")]
    TooLong { input: String, max: usize },
}

/// The longest CRN accepted, in bytes, measured in graph form (with `svc`
/// and the service segment), the form it is stored and printed in: a CRN
/// accepted in a shorter form prints to text that parses again.
pub const MAX_CRN_LEN: usize = 2048;

const FIXED: [&str; 5] = ["provider", "region", "service", "kind", "account"];

impl Crn {
    /// Parses either form, with or without the `svc` segment. After `crn:` and
    /// the optional `svc:`, six or more segments are the graph form and five
    /// are the plugin form.
    pub fn parse(input: &str) -> Result<Crn, CrnError> {
        Crn::parse_with_form(input).map(|(crn, _)| crn)
    }

    /// Like [`Crn::parse`], also telling which form the input used.
    pub fn parse_with_form(input: &str) -> Result<(Crn, CrnForm), CrnError> {
        CrnRef::parse_with_form(input).map(|(c, form)| (c.to_crn(), form))
    }

    /// Parses the plugin form explicitly: `crn:svc:<provider>:<region>:<account>:<type>:<id>`
    /// where the id may contain colons. Input in graph form is not accepted here.
    pub fn parse_plugin_form(input: &str) -> Result<Crn, CrnError> {
        if input.len() > MAX_CRN_LEN {
            return Err(CrnError::TooLong {
                input: truncate(input),
                max: MAX_CRN_LEN,
            });
        }
        let rest = input
            .strip_prefix("crn:")
            .ok_or_else(|| CrnError::Prefix { input: truncate(input) })?;
        let rest = rest.strip_prefix("svc:").unwrap_or(rest);
        let parts: Vec<&str> = rest.splitn(5, ':').collect();
        if parts.len() != 5 {
            return Err(CrnError::Segments {
                input: truncate(input),
                found: input.split(':').count(),
            });
        }
        let service = service_for(parts[0], parts[3]);
        let crn = Crn::from_parts(parts[0], parts[1], service, parts[3], parts[2], parts[4]);
        crn.validate(input)?;
        Ok(crn)
    }

    pub fn from_parts(provider: &str, region: &str, service: &str, kind: &str, account: &str, id: &str) -> Crn {
        Crn {
            provider: provider.to_owned(),
            region: region.to_owned(),
            service: service.to_owned(),
            kind: kind.to_owned(),
            account: account.to_owned(),
            id: id.to_owned(),
        }
    }

    /// Node type, `<service>:<kind>`.
    pub fn node_type(&self) -> String {
        format!("{}:{}", self.service, self.kind)
    }

    fn validate(&self, input: &str) -> Result<(), CrnError> {
        CrnRef {
            provider: &self.provider,
            region: &self.region,
            service: &self.service,
            kind: &self.kind,
            account: &self.account,
            id: &self.id,
        }
        .validate(input)
    }
}

/// A parsed CRN whose segments borrow the text it was parsed from: what a
/// hot decoder uses to avoid six allocations per name.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct CrnRef<'a> {
    pub provider: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    pub kind: &'a str,
    pub account: &'a str,
    pub id: &'a str,
}

impl<'a> CrnRef<'a> {
    /// Parses either form exactly as [`Crn::parse`] does, with the same errors.
    pub fn parse(input: &'a str) -> Result<CrnRef<'a>, CrnError> {
        CrnRef::parse_with_form(input).map(|(crn, _)| crn)
    }

    /// Like [`CrnRef::parse`], also telling which form the input used.
    pub fn parse_with_form(input: &'a str) -> Result<(CrnRef<'a>, CrnForm), CrnError> {
        let err_input = || truncate(input);
        if input.len() > MAX_CRN_LEN {
            return Err(CrnError::TooLong {
                input: err_input(),
                max: MAX_CRN_LEN,
            });
        }
        let rest = input
            .strip_prefix("crn:")
            .ok_or_else(|| CrnError::Prefix { input: err_input() })?;
        let rest = rest.strip_prefix("svc:").unwrap_or(rest);
        let colons = rest.bytes().filter(|b| *b == b':').count();
        let (crn, form) = if colons >= 5 {
            let mut it = rest.splitn(6, ':');
            let mut seg = || it.next().unwrap_or("");
            let (provider, region, service, kind, account, id) = (seg(), seg(), seg(), seg(), seg(), seg());
            let crn = CrnRef {
                provider,
                region,
                service,
                kind,
                account,
                id,
            };
            (crn, CrnForm::Graph)
        } else if colons == 4 {
            let mut it = rest.splitn(5, ':');
            let mut seg = || it.next().unwrap_or("");
            let (provider, region, account, kind, id) = (seg(), seg(), seg(), seg(), seg());
            let service = service_for(provider, kind);
            let crn = CrnRef {
                provider,
                region,
                service,
                kind,
                account,
                id,
            };
            (crn, CrnForm::Plugin)
        } else {
            let found = input.split(':').count();
            return Err(CrnError::Segments {
                input: err_input(),
                found,
            });
        };
        crn.validate(input)?;
        Ok((crn, form))
    }

    /// The owned CRN.
    pub fn to_crn(&self) -> Crn {
        Crn::from_parts(
            self.provider,
            self.region,
            self.service,
            self.kind,
            self.account,
            self.id,
        )
    }

    /// The length of the graph form, `crn:svc:` and the six segments.
    pub fn graph_len(&self) -> usize {
        let fixed = [self.provider, self.region, self.service, self.kind, self.account];
        "crn:svc:".len() + fixed.iter().map(|s| s.len() + 1).sum::<usize>() + self.id.len()
    }

    fn validate(&self, input: &str) -> Result<(), CrnError> {
        if self.graph_len() > MAX_CRN_LEN {
            return Err(CrnError::TooLong {
                input: truncate(input),
                max: MAX_CRN_LEN,
            });
        }
        let fixed = [self.provider, self.region, self.service, self.kind, self.account];
        for (value, name) in fixed.iter().zip(FIXED) {
            if value.is_empty() {
                return Err(CrnError::Empty {
                    input: truncate(input),
                    segment: name,
                });
            }
            if value.bytes().all(segment_byte) {
                continue;
            }
            if let Some(ch) = value.chars().find(|c| !segment_char(*c)) {
                return Err(CrnError::Character {
                    input: truncate(input),
                    segment: name,
                    ch,
                });
            }
        }
        if self.id.is_empty() {
            return Err(CrnError::Empty {
                input: truncate(input),
                segment: "physical_id",
            });
        }
        // Printable ASCII is neither whitespace nor a control character.
        let printable = self.id.bytes().all(|b| (0x21..0x7f).contains(&b));
        if !printable && self.id.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(CrnError::Id { input: truncate(input) });
        }
        Ok(())
    }
}

fn segment_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/')
}

fn segment_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')
}

fn truncate(input: &str) -> String {
    if input.len() <= 200 {
        return input.to_owned();
    }
    let mut end = 200;
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &input[..end])
}

impl fmt::Display for Crn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "crn:{NAMESPACE}:{}:{}:{}:{}:{}:{}",
            self.provider, self.region, self.service, self.kind, self.account, self.id
        )
    }
}

/// Writes a graph-form CRN from its parts into `out`.
pub fn write_crn(out: &mut String, parts: [&str; 6]) {
    out.reserve(8 + parts.iter().map(|p| p.len() + 1).sum::<usize>());
    out.push_str("crn:");
    out.push_str(NAMESPACE);
    for p in parts {
        out.push(':');
        out.push_str(p);
    }
}

/// The service family of a plugin-form resource type: a fixed table per
/// provider, falling back to the type itself.
pub fn service_for<'a>(provider: &str, kind: &'a str) -> &'a str {
    let known = match provider {
        "aws" => match kind {
            "instance" | "volume" | "snapshot" | "eip" | "image" | "ami" | "security-group" | "security_group"
            | "vpc" | "subnet" | "nat-gateway" | "nat_gateway" | "network-interface" | "eni" | "vpc-endpoint"
            | "internet-gateway" | "key-pair" => Some("ec2"),
            "db" | "db-instance" | "db-cluster" | "db-snapshot" => Some("rds"),
            "function" => Some("lambda"),
            "bucket" | "multipart-upload" => Some("s3"),
            "load-balancer" | "loadbalancer" | "lb" | "target-group" => Some("elb"),
            "table" => Some("dynamodb"),
            "cache" | "cache-cluster" | "replication-group" => Some("elasticache"),
            "log-group" => Some("logs"),
            "role" | "user" | "policy" | "instance-profile" => Some("iam"),
            "cluster" | "nodegroup" | "node-group" => Some("eks"),
            "hosted-zone" | "record" | "dns-record" => Some("route53"),
            "api" | "rest-api" => Some("apigateway"),
            "queue" => Some("sqs"),
            "topic" => Some("sns"),
            "repository" => Some("ecr"),
            _ => None,
        },
        "gcp" => match kind {
            "instance" | "disk" | "snapshot" | "image" | "address" | "firewall" | "network" | "subnetwork"
            | "forwarding-rule" | "backend-service" | "router" | "nat" => Some("compute"),
            "bucket" => Some("storage"),
            "sql-instance" | "db" => Some("sql"),
            "function" => Some("cloudfunctions"),
            "cluster" | "node-pool" => Some("container"),
            "service-account" => Some("iam"),
            "managed-zone" | "record" | "dns-record" => Some("dns"),
            "dataset" | "table" => Some("bigquery"),
            "redis-instance" | "cache" => Some("redis"),
            _ => None,
        },
        "azure" => match kind {
            "vm" | "instance" | "disk" | "snapshot" | "image" => Some("compute"),
            "public-ip" | "nic" | "vnet" | "subnet" | "nsg" | "load-balancer" | "nat-gateway" | "dns-record" => {
                Some("network")
            }
            "storage-account" | "bucket" => Some("storage"),
            "sql-database" | "db" | "sql-server" => Some("sql"),
            "function" | "function-app" | "app-service-plan" => Some("web"),
            "aks-cluster" | "cluster" | "node-pool" => Some("containerservice"),
            "cache" | "redis" => Some("cache"),
            "managed-identity" | "role-assignment" => Some("authorization"),
            _ => None,
        },
        "kubernetes" | "k8s" => match kind {
            "pod"
            | "service"
            | "pvc"
            | "pv"
            | "node"
            | "namespace"
            | "configmap"
            | "secret"
            | "persistentvolumeclaim"
            | "persistentvolume"
            | "serviceaccount" => Some("core"),
            "deployment" | "statefulset" | "daemonset" | "replicaset" => Some("apps"),
            "ingress" => Some("networking"),
            "job" | "cronjob" => Some("batch"),
            _ => None,
        },
        _ => None,
    };
    known.unwrap_or(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_graph_form() {
        let c = Crn::parse("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0abc").unwrap();
        assert_eq!(c.provider, "aws");
        assert_eq!(c.region, "us-east-1");
        assert_eq!(c.service, "ec2");
        assert_eq!(c.kind, "volume");
        assert_eq!(c.account, "123456789012");
        assert_eq!(c.id, "vol-0abc");
        assert_eq!(c.to_string(), "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0abc");
        assert_eq!(c.node_type(), "ec2:volume");
    }

    #[test]
    fn keeps_colons_in_ids() {
        let s = "crn:svc:aws:us-east-1:lambda:function:123:arn:aws:lambda:us-east-1:123:function:f";
        let c = Crn::parse(s).unwrap();
        assert_eq!(c.id, "arn:aws:lambda:us-east-1:123:function:f");
        assert_eq!(c.to_string(), s);
    }

    #[test]
    fn converts_plugin_form() {
        let (c, form) = Crn::parse_with_form("crn:svc:aws:us-east-1:123456789012:volume:vol-1").unwrap();
        assert_eq!(form, CrnForm::Plugin);
        assert_eq!(c.to_string(), "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1");
        let c = Crn::parse("crn:svc:aws:eu-west-1:1:db:orders").unwrap();
        assert_eq!(c.service, "rds");
        let c = Crn::parse("crn:svc:aws:eu-west-1:1:widget:w1").unwrap();
        assert_eq!(c.service, "widget");
        let c = Crn::parse_plugin_form("crn:svc:aws:us-east-1:1:function:arn:aws:lambda:x").unwrap();
        assert_eq!(c.service, "lambda");
        assert_eq!(c.id, "arn:aws:lambda:x");
    }

    #[test]
    fn accepts_crn_without_namespace() {
        let a = Crn::parse("crn:aws:us-east-1:ec2:volume:123:vol-1").unwrap();
        let b = Crn::parse("crn:svc:aws:us-east-1:ec2:volume:123:vol-1").unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn rejects_bad_input_with_clear_errors() {
        let e = Crn::parse("crn:svc:aws").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid crn \"crn:svc:aws\": expected 8 segments (or 7 in plugin form), found 3"
        );
        assert!(matches!(Crn::parse("urn:x"), Err(CrnError::Prefix { .. })));
        assert!(matches!(
            Crn::parse("crn:svc:aws::ec2:volume:1:v"),
            Err(CrnError::Empty { segment: "region", .. })
        ));
        assert!(matches!(
            Crn::parse("crn:svc:aws:us east:ec2:volume:1:v"),
            Err(CrnError::Character { .. })
        ));
        assert!(matches!(
            Crn::parse("crn:svc:aws:r:ec2:volume:1:"),
            Err(CrnError::Empty { .. })
        ));
        assert!(matches!(
            Crn::parse("crn:svc:aws:r:ec2:volume:1:a b"),
            Err(CrnError::Id { .. })
        ));
        assert!(matches!(Crn::parse(&"x".repeat(5000)), Err(CrnError::TooLong { .. })));
        assert!(Crn::parse("").is_err());
    }

    /// The limit holds for the graph form: a CRN written without `svc`, or
    /// in plugin form, is accepted only when the text it prints as (longer
    /// by `svc:` and the service segment) parses again.
    #[test]
    fn the_length_limit_is_the_graph_form_s() {
        let id_of = |prefix: &str, total: usize| "x".repeat(total - prefix.len());
        for (short, graph_prefix) in [
            ("crn:aws:us-east-1:ec2:volume:1:", "crn:svc:aws:us-east-1:ec2:volume:1:"),
            ("crn:aws:us-east-1:1:volume:", "crn:svc:aws:us-east-1:ec2:volume:1:"),
            ("crn:svc:aws:us-east-1:1:volume:", "crn:svc:aws:us-east-1:ec2:volume:1:"),
            ("crn:svc:gcp:r:1:widget:", "crn:svc:gcp:r:widget:widget:1:"),
        ] {
            // Exactly at the limit in graph form: accepted, and it prints
            // to text at the limit that parses to the same CRN.
            let fits = format!("{short}{}", id_of(graph_prefix, MAX_CRN_LEN));
            let c = Crn::parse(&fits).unwrap_or_else(|e| panic!("{short}: {e}"));
            let printed = c.to_string();
            assert_eq!(printed.len(), MAX_CRN_LEN, "{short}");
            assert_eq!(Crn::parse(&printed), Ok(c));
            // One byte more in graph form: refused, though the text is shorter.
            let over = format!("{short}{}", id_of(graph_prefix, MAX_CRN_LEN + 1));
            assert!(over.len() <= MAX_CRN_LEN, "{short}");
            assert!(
                matches!(Crn::parse(&over), Err(CrnError::TooLong { .. })),
                "{short}: {:?}",
                Crn::parse(&over)
            );
            assert!(matches!(CrnRef::parse(&over), Err(CrnError::TooLong { .. })));
        }
        let plugin = format!(
            "crn:svc:aws:us-east-1:1:volume:{}",
            id_of("crn:svc:aws:us-east-1:ec2:volume:1:", MAX_CRN_LEN + 1)
        );
        assert!(matches!(Crn::parse_plugin_form(&plugin), Err(CrnError::TooLong { .. })));
    }

    fn seg() -> impl Strategy<Value = String> {
        "[a-z0-9][a-z0-9._/-]{0,15}"
    }

    proptest! {
        #[test]
        fn graph_form_round_trips(p in seg(), r in seg(), s in seg(), k in seg(), a in seg(),
                                  id in "[!-~]{1,40}") {
            prop_assume!(p != NAMESPACE);
            let crn = Crn::from_parts(&p, &r, &s, &k, &a, &id);
            let text = crn.to_string();
            let parsed = Crn::parse(&text).unwrap();
            prop_assert_eq!(&parsed, &crn);
            prop_assert_eq!(parsed.to_string(), text.clone());
            // Without the namespace segment it is the same resource.
            let bare = text.replacen("crn:svc:", "crn:", 1);
            prop_assert_eq!(Crn::parse(&bare).unwrap(), crn);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,80}") {
            let _ = Crn::parse(&s);
            let _ = Crn::parse_plugin_form(&s);
        }

        #[test]
        fn plugin_form_converts_stably(p in seg(), r in seg(), a in seg(), k in seg(), id in "[!-9;-~]{1,30}") {
            let text = format!("crn:svc:{p}:{r}:{a}:{k}:{id}");
            let c = Crn::parse(&text).unwrap();
            prop_assert_eq!(&c.service, service_for(&p, &k));
            prop_assert_eq!(Crn::parse(&c.to_string()).unwrap(), c);
        }
    }
}
