//! The assistant's tools: read-only questions to the engine, each one
//! request to the daemon's own read endpoints. A tool call is checked
//! against its schema and turned into a [`ToolRequest`] (a `GET`, or the
//! policy dry run's `POST`, which evaluates a condition and writes
//! nothing); no tool can approve, reject, move, scan or change anything.
//! The same catalogue serves the chat's models, the offline answerer and
//! the MCP server.

use serde_json::{Map, Value, json};

/// One tool as a model or an MCP client sees it.
#[derive(Clone, Debug)]
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    /// JSON Schema of the arguments (an object).
    pub schema: Value,
}

/// What a tool call asks of the daemon.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolRequest {
    pub method: Method,
    /// Path and query, percent-encoded.
    pub path: String,
    pub body: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

/// The tools, in the order they are offered.
pub fn catalogue() -> Vec<Tool> {
    vec![
        Tool {
            name: "search_nodes",
            description: "Lists resources of the estate in the live graph, filtered by provider, type (`service:kind`, for example `ec2:volume`), state, tag (`key` or `key=value`), waste, or a substring of the CRN or a tag. Returns a page of nodes and the total that match.",
            schema: json!({
                "type": "object",
                "properties": {
                    "provider": {"type": "string", "description": "aws, gcp, azure, k8s, ..."},
                    "type": {"type": "string", "description": "service:kind, for example ec2:volume"},
                    "state": {"type": "string"},
                    "tag": {"type": "string", "description": "key, or key=value"},
                    "waste": {"type": "boolean"},
                    "q": {"type": "string", "description": "case-insensitive substring of the CRN or of a tag key=value"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100}
                },
                "additionalProperties": false
            }),
        },
        Tool {
            name: "get_node",
            description: "One resource by CRN: its properties, cost, state, waste verdict and findings, and how many edges it has each way.",
            schema: crn_schema(None),
        },
        Tool {
            name: "node_edges",
            description: "The resources one resource is connected to, both ways, with the relation of each edge.",
            schema: crn_schema(Some(1000)),
        },
        Tool {
            name: "blast_radius",
            description: "What depends on a resource: the resources affected if it were removed, with their depth.",
            schema: crn_schema(Some(1000)),
        },
        Tool {
            name: "graph_stats",
            description: "Totals of the live estate: resources, edges, monthly cost, waste resources, projected monthly savings, resources by provider.",
            schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        },
        Tool {
            name: "waste_summary",
            description: "Waste and projected monthly savings per resource type, largest first, with each type's top resources by saving (the last scan's findings).",
            schema: json!({
                "type": "object",
                "properties": {
                    "top": {"type": "integer", "minimum": 1, "maximum": 100},
                    "provider": {"type": "string"}
                },
                "additionalProperties": false
            }),
        },
        Tool {
            name: "history",
            description: "Events of the audit ledger, newest first: scans, findings, approvals, executions, rollbacks. Filter by event type (for example SCAN_COMPLETED, APPROVAL, EXECUTION_COMMIT), CRN, and a time window (`since`/`until`: RFC 3339 or a duration back from now such as 24h).",
            schema: json!({
                "type": "object",
                "properties": {
                    "type": {"type": "string"},
                    "crn": {"type": "string"},
                    "since": {"type": "string"},
                    "until": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100}
                },
                "additionalProperties": false
            }),
        },
        Tool {
            name: "policy_dry_run",
            description: "Evaluates a CEL condition over every resource of the live graph without storing or enforcing anything; returns how many match and their CRNs. Example: `node.type == \"ec2:volume\" && node.state == \"available\"`.",
            schema: json!({
                "type": "object",
                "properties": {
                    "condition": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000}
                },
                "required": ["condition"],
                "additionalProperties": false
            }),
        },
        Tool {
            name: "remediation_queue",
            description: "The remediation pipeline: resources flagged as waste with their stage (flagged, analyzed, codegen, sau_gate, pending, applied), proof and projected saving.",
            schema: json!({
                "type": "object",
                "properties": {
                    "stage": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100}
                },
                "additionalProperties": false
            }),
        },
        Tool {
            name: "remediation_plan",
            description: "The remediation plan of one resource in the pipeline: ordered steps with their inverses, the equivalent CLI commands and Terraform text. Showing a plan changes nothing; approving is for a person.",
            schema: crn_schema(None),
        },
        Tool {
            name: "resource_drift",
            description: "How one resource differs from the Terraform state that declares it: gone, changed attributes (declared and live values) or in sync, its Terraform address, or unmanaged (created by hand); and where it is declared and who wrote that line (commit, author, file, line).",
            schema: crn_schema(None),
        },
    ]
}

/// The arguments of a tool about one resource: its CRN, and a `limit` up
/// to `most` when the answer is a list.
fn crn_schema(most: Option<u64>) -> Value {
    let mut properties = json!({"crn": {"type": "string", "description": "the resource's CRN"}});
    if let Some(most) = most {
        properties["limit"] = json!({"type": "integer", "minimum": 1, "maximum": most});
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": ["crn"],
        "additionalProperties": false
    })
}

/// A tool call that cannot be made, in words for the model or the user.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// The request a call of tool `name` with `args` makes, once the arguments
/// are checked against the tool's schema.
pub fn request(name: &str, args: &Value) -> Result<ToolRequest, ToolError> {
    let tool = catalogue()
        .into_iter()
        .find(|t| t.name == name)
        .ok_or_else(|| ToolError(format!("no tool named {name:?}")))?;
    let args = check(&tool, args)?;
    let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
    let query = |keys: &[(&str, &str)]| -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (arg, param) in keys {
            match args.get(*arg) {
                Some(Value::String(s)) => {
                    q.append_pair(param, s);
                }
                Some(Value::Bool(b)) => {
                    q.append_pair(param, if *b { "true" } else { "false" });
                }
                Some(Value::Number(n)) => {
                    q.append_pair(param, &n.to_string());
                }
                _ => {}
            }
        }
        q.finish()
    };
    let get = |path: String, q: String| ToolRequest {
        method: Method::Get,
        path: if q.is_empty() { path } else { format!("{path}?{q}") },
        body: None,
    };
    let crn = || text("crn").map(|c| segment(&c)).unwrap_or_default();
    Ok(match name {
        "search_nodes" => get(
            "/api/v1/graph/nodes".into(),
            query(&[
                ("provider", "provider"),
                ("type", "type"),
                ("state", "state"),
                ("tag", "tag"),
                ("waste", "waste"),
                ("q", "q"),
                ("limit", "limit"),
            ]),
        ),
        "get_node" => get(format!("/api/v1/graph/nodes/{}", crn()), String::new()),
        "node_edges" => get(
            format!("/api/v1/graph/nodes/{}/edges", crn()),
            query(&[("limit", "limit")]),
        ),
        "blast_radius" => get(
            format!("/api/v1/graph/blast-radius/{}", crn()),
            query(&[("limit", "limit")]),
        ),
        "graph_stats" => get("/api/v1/graph/stats".into(), String::new()),
        "waste_summary" => get(
            "/api/v1/waste-ledger".into(),
            query(&[("top", "top"), ("provider", "provider")]),
        ),
        "history" => get(
            "/api/v1/history".into(),
            query(&[
                ("type", "type"),
                ("crn", "crn"),
                ("since", "since"),
                ("until", "until"),
                ("limit", "limit"),
            ]),
        ),
        "policy_dry_run" => ToolRequest {
            method: Method::Post,
            path: "/api/v1/policies/dry-run".into(),
            body: Some(Value::Object(args.clone())),
        },
        "remediation_queue" => get(
            "/api/v1/remediation/queue".into(),
            query(&[("stage", "stage"), ("limit", "limit")]),
        ),
        "remediation_plan" => get("/api/v1/plan".into(), query(&[("crn", "crn")])),
        "resource_drift" => get("/api/v1/drift/report".into(), query(&[("crn", "crn")])),
        other => return Err(ToolError(format!("no tool named {other:?}"))),
    })
}

/// A CRN as one path segment: every byte but the unreserved ones
/// percent-encoded.
fn segment(crn: &str) -> String {
    let mut out = String::with_capacity(crn.len() * 3 / 2);
    for b in crn.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `args` checked against the tool's schema: an object, only the declared
/// properties, each of its declared type and range, the required ones present.
fn check(tool: &Tool, args: &Value) -> Result<Map<String, Value>, ToolError> {
    let args = match args {
        Value::Null => Map::new(),
        Value::Object(m) => m.clone(),
        other => {
            return Err(ToolError(format!(
                "{}: the arguments must be an object, not {other}",
                tool.name
            )));
        }
    };
    let empty = Map::new();
    let props = tool.schema["properties"].as_object().unwrap_or(&empty);
    for (k, v) in &args {
        let Some(spec) = props.get(k) else {
            let known: Vec<&str> = props.keys().map(String::as_str).collect();
            return Err(ToolError(format!(
                "{}: unknown argument {k:?}; it takes {}",
                tool.name,
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        };
        let ok = match spec["type"].as_str() {
            Some("string") => v.as_str().is_some_and(|s| !s.trim().is_empty()),
            Some("boolean") => v.is_boolean(),
            Some("integer") => v.as_i64().is_some_and(|n| {
                spec["minimum"].as_i64().is_none_or(|lo| n >= lo) && spec["maximum"].as_i64().is_none_or(|hi| n <= hi)
            }),
            _ => true,
        };
        if !ok {
            let want = match spec["type"].as_str() {
                Some("integer") => format!(
                    "an integer from {} to {}",
                    spec["minimum"].as_i64().unwrap_or(i64::MIN),
                    spec["maximum"].as_i64().unwrap_or(i64::MAX)
                ),
                Some("string") => "a non-empty string".to_owned(),
                Some(t) => format!("a {t}"),
                None => "a value".to_owned(),
            };
            return Err(ToolError(format!(
                "{}: argument {k:?} must be {want}, not {v}",
                tool.name
            )));
        }
    }
    for required in tool.schema["required"].as_array().into_iter().flatten() {
        if let Some(r) = required.as_str()
            && !args.contains_key(r)
        {
            return Err(ToolError(format!("{}: argument {r:?} is required", tool.name)));
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_reads_only() {
        let example = |t: &Tool| -> Value {
            let mut args = Map::new();
            for r in t.schema["required"].as_array().into_iter().flatten() {
                let v = if r == "condition" {
                    json!("true")
                } else {
                    json!("crn:svc:aws:us-east-1:1:ec2:volume:vol-1")
                };
                args.insert(r.as_str().unwrap_or_default().to_owned(), v);
            }
            Value::Object(args)
        };
        for t in catalogue() {
            let r = request(t.name, &example(&t)).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            match r.method {
                Method::Get => assert!(r.body.is_none()),
                // The one POST evaluates a condition and stores nothing.
                Method::Post => assert_eq!(r.path, "/api/v1/policies/dry-run"),
            }
            assert!(r.path.starts_with("/api/v1/"), "{r:?}");
            assert!(!t.description.is_empty() && t.schema["type"] == "object");
        }
    }

    #[test]
    fn arguments_become_the_query_and_the_path() {
        let r = request(
            "search_nodes",
            &json!({"type": "ec2:volume", "waste": true, "limit": 5}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.path, "/api/v1/graph/nodes?type=ec2%3Avolume&waste=true&limit=5");
        let r = request(
            "blast_radius",
            &json!({"crn": "crn:svc:aws:us-east-1:1:ec2:instance:i-1"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            r.path,
            "/api/v1/graph/blast-radius/crn%3Asvc%3Aaws%3Aus-east-1%3A1%3Aec2%3Ainstance%3Ai-1"
        );
        let r = request("graph_stats", &Value::Null).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.path, "/api/v1/graph/stats");
    }

    #[test]
    fn bad_calls_are_refused_in_words() {
        let e = |name: &str, args: Value| request(name, &args).err().map(|e| e.0).unwrap_or_default();
        assert!(e("approve", json!({})).contains("no tool named"));
        assert!(e("get_node", json!({})).contains("\"crn\" is required"));
        assert!(e("get_node", json!({"crn": 7})).contains("must be a non-empty string"));
        assert!(e("search_nodes", json!({"limit": 5000})).contains("from 1 to 100"));
        assert!(e("search_nodes", json!({"colour": "red"})).contains("unknown argument"));
        assert!(e("graph_stats", json!([1])).contains("must be an object"));
    }
}
