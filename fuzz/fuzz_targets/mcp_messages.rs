//! A body of JSON-RPC as the MCP endpoint and `svc mcp` read it, from
//! arbitrary bytes: answering never panics; a request (with an id) gets
//! exactly one answer, a JSON-RPC 2.0 object with that id and a result or
//! an error; a tool call reaches the executor only for a tool of the
//! catalogue.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use svc_api::assistant::mcp::handle_body;
use svc_api::assistant::run::Outcome;
use svc_api::assistant::tools;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().expect("a runtime"))
}

fuzz_target!(|data: &[u8]| {
    let call = |name: String, args: Value| async move {
        assert!(tools::catalogue().iter().any(|t| t.name == name), "the executor got {name:?}");
        match tools::request(&name, &args) {
            Ok(r) => Outcome { ok: true, value: serde_json::json!({ "path": r.path }) },
            Err(e) => Outcome::failed(e.0),
        }
    };
    let answer = runtime().block_on(handle_body(data, &call));
    let check = |a: &Value| {
        assert_eq!(a["jsonrpc"], "2.0", "{a}");
        assert!(a.get("result").is_some() != a.get("error").is_some(), "{a}");
    };
    match &answer {
        Some(Value::Array(list)) => list.iter().for_each(check),
        Some(one) => check(one),
        None => {}
    }
    if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(data)
        && m.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && m.get("method").is_some_and(Value::is_string)
        && let Some(id) = m.get("id")
    {
        let a = answer.unwrap_or_else(|| panic!("a request with id {id} went unanswered"));
        assert_eq!(&a["id"], id);
    }
});
