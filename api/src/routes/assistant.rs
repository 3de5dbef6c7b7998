//! `POST /api/v1/cortex/assimilate` (a question, answered as a stream of
//! JSON lines) and `GET /api/v1/ai/providers` (who answers).

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use utoipa::ToSchema;

use super::ApiJson;
use crate::assistant::agent::Setup;
use crate::assistant::model::{self, Wire};
use crate::assistant::{self, Event, MAX_QUESTION_CHARS, Turn, run::Executor};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Longest conversation id taken.
const MAX_CONVERSATION_ID: usize = 128;
/// Longest wait for a provider's list of models.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The body of `POST /api/v1/cortex/assimilate`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskBody {
    /// The question, in plain language (at most 4000 characters).
    pub question: String,
    /// The conversation the question continues; a new one when absent.
    #[serde(default)]
    pub conversation_id: Option<String>,
}

/// A new conversation's id: `c-` and 24 hex digits.
fn new_conversation_id() -> String {
    let mut b = [0u8; 12];
    if getrandom::fill(&mut b).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b.copy_from_slice(&nanos.to_le_bytes()[..12]);
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("c-{hex}")
}

fn conversation_id(given: Option<String>) -> ApiResult<String> {
    match given.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()) {
        None => Ok(new_conversation_id()),
        Some(id)
            if id.len() <= MAX_CONVERSATION_ID
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) =>
        {
            Ok(id)
        }
        Some(_) => Err(ApiError::bad_request(format!(
            "conversation_id must be at most {MAX_CONVERSATION_ID} letters, digits, '-', '_' or '.'"
        ))),
    }
}

/// The configuration's `ai` table.
fn ai_config(state: &AppState) -> Value {
    state.config().map(|c| c.get()["ai"].clone()).unwrap_or(Value::Null)
}

/// The configured models, or why the offline answerer answers instead.
fn setup(state: &AppState) -> Result<Setup, String> {
    match Setup::from_config(&ai_config(state), |k| std::env::var(k).ok()) {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err("no model is configured (`ai.provider` and `ai.model` in config.toml)".to_owned()),
        Err(e) => Err(format!("the configured model cannot be used: {e}")),
    }
}

/// `POST /api/v1/cortex/assimilate`.
#[utoipa::path(
    post,
    path = "/cortex/assimilate",
    operation_id = "askAssistant",
    tag = "assistant",
    summary = "Ask a question about the estate in plain language; the answer streams as JSON lines.",
    description = "The answer is `application/x-ndjson`: one JSON object a line, each with a `type`: `start` (the conversation id and who answers: `tier` `offline`, `router` or `deep`), `tool_call` and `tool_result` (each read the answerer made, with its arguments), `text` (pieces of the Markdown answer, in order), `sources` (the CRNs and the requests the answer rests on), then `done`, or `error` when it stopped early. The answerer only reads the estate (search, a node and its edges, blast radius, waste and savings, history, a policy dry run, the remediation queue and plans) with the asker's credentials; it never approves, rejects or changes anything. Without a configured model it answers the common questions (top waste, what depends on a CRN, what changed since yesterday, why a CRN is flagged, what approving everything pending would save, the estate's totals) and says plainly when a question needs a model.",
    request_body(content = AskBody, content_type = "application/json"),
    responses(
        (status = 200, description = "The answer, streamed as JSON lines.", body = String, content_type = "application/x-ndjson"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn assimilate(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<AskBody>,
) -> ApiResult<Response> {
    state.engine()?;
    let question = body.question.trim().to_owned();
    if question.is_empty() {
        return Err(ApiError::bad_request("question must not be empty"));
    }
    if question.chars().count() > MAX_QUESTION_CHARS {
        return Err(ApiError::bad_request(format!(
            "question is longer than {MAX_QUESTION_CHARS} characters"
        )));
    }
    let conversation = conversation_id(body.conversation_id)?;
    let (turn, events) = Turn::new(Executor::new(&state, &headers));
    match setup(&state) {
        Ok(setup) => {
            let state = state.clone();
            tokio::spawn(async move {
                let conversations = &state.inner.conversations;
                assistant::answer_with_model(&setup, conversations, &question, turn, conversation).await;
            });
        }
        Err(why) => {
            tokio::spawn(async move { assistant::answer(&question, turn, conversation, &why).await });
        }
    }
    let lines = ReceiverStream::new(events).map(|e: Event| {
        let mut line = serde_json::to_vec(&e)
            .unwrap_or_else(|_| b"{\"type\":\"error\",\"message\":\"unencodable event\"}".to_vec());
        line.push(b'\n');
        Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(line))
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(lines),
    )
        .into_response())
}

/// One answerer `GET /api/v1/ai/providers` lists.
#[derive(Serialize, ToSchema)]
pub struct AiProvider {
    /// `offline` for the built-in answerer, else the configured provider.
    pub name: String,
    /// `builtin`, `openai` (any OpenAI-compatible endpoint) or `anthropic`.
    pub kind: String,
    /// The models by tier: `router` (cheap, first) and `deep`.
    pub models: AiModels,
    /// The endpoint's base URL, when one is configured.
    pub base_url: Option<String>,
    /// Whether it answers questions now.
    pub answers: bool,
    /// Why not, when it does not (empty when it does).
    pub message: String,
}

#[derive(Serialize, ToSchema)]
pub struct AiModels {
    pub router: Option<String>,
    pub deep: Option<String>,
}

/// `GET /api/v1/ai/providers`.
#[derive(Serialize, ToSchema)]
pub struct AiProviders {
    /// The answerer questions go to now.
    pub active: String,
    pub providers: Vec<AiProvider>,
}

/// `GET /api/v1/ai/providers`.
#[utoipa::path(
    get,
    path = "/ai/providers",
    operation_id = "listAiProviders",
    tag = "assistant",
    summary = "The configured AI providers, their models and whether each answers.",
    description = "Always lists the built-in offline answerer; a provider configured in `ai.*` is listed with its models by tier. API keys are never shown.",
    responses(
        (status = 200, description = "The providers.", body = AiProviders, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn providers(State(state): State<AppState>) -> ApiResult<axum::Json<AiProviders>> {
    state.engine()?;
    let ai = ai_config(&state);
    let text = |k: &str| ai[k].as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let configured = setup(&state);
    let (answers, message) = match &configured {
        Ok(s) => match probe(s).await {
            Ok(()) => (true, String::new()),
            Err(e) => (false, e),
        },
        Err(e) => (false, e.clone()),
    };
    let mut providers = vec![AiProvider {
        name: "offline".into(),
        kind: "builtin".into(),
        models: AiModels {
            router: None,
            deep: None,
        },
        base_url: None,
        answers: true,
        message: format!(
            "answers the common questions from the estate's own tools: {}",
            assistant::offline::KNOWN.join("; ")
        ),
    }];
    if let Some(name) = text("provider") {
        providers.push(AiProvider {
            kind: if name == "anthropic" { "anthropic" } else { "openai" }.into(),
            models: AiModels {
                router: text("router_model").or_else(|| text("model")),
                deep: text("model"),
            },
            base_url: configured
                .as_ref()
                .ok()
                .map(|s| s.deep.base_url.clone())
                .or_else(|| text("base_url")),
            answers,
            message,
            name,
        });
    }
    let active = match &configured {
        Ok(s) => s.provider.clone(),
        Err(_) => "offline".into(),
    };
    Ok(axum::Json(AiProviders { active, providers }))
}

/// Whether the provider answers: its list of models, within a few seconds.
async fn probe(setup: &Setup) -> Result<(), String> {
    let e = &setup.deep;
    let client = model::client().map_err(|e| e.message)?;
    let url = match e.wire {
        Wire::OpenAi => format!("{}/models", e.base_url),
        Wire::Anthropic => format!("{}/v1/models", e.base_url),
    };
    let req = model::authorized(client.get(&url), e);
    match tokio::time::timeout(PROBE_TIMEOUT, req.send()).await {
        Err(_) => Err(format!("{url} did not answer within {PROBE_TIMEOUT:?}")),
        Ok(Err(err)) => Err(format!("cannot reach {url}: {err}")),
        Ok(Ok(r)) if r.status().is_success() => Ok(()),
        Ok(Ok(r)) => Err(format!("{url} answered HTTP {}", r.status().as_u16())),
    }
}

/// A JSON-RPC 2.0 message, or a batch of them (the body and the answer of
/// `POST /api/v1/mcp`).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum JsonRpc {
    One(serde_json::Map<String, Value>),
    Batch(Vec<serde_json::Map<String, Value>>),
}

/// `POST /api/v1/mcp`.
#[utoipa::path(
    post,
    path = "/mcp",
    operation_id = "mcp",
    tag = "assistant",
    summary = "The assistant's read-only tools over the Model Context Protocol (streamable HTTP).",
    description = "A JSON-RPC 2.0 message, or a batch of them, of the Model Context Protocol: `initialize`, `ping`, `tools/list` and `tools/call` (the tools of `/api/v1/cortex/assimilate`, each a read of this API made with the caller's token; none writes). A request is answered with its JSON-RPC response (errors included, with status 200); a body of notifications only with 202 and no body. There is no server-initiated stream: `GET` answers 405. `svc mcp` serves the same over stdio.",
    request_body(content = JsonRpc, description = "A JSON-RPC 2.0 message or batch.", content_type = "application/json"),
    responses(
        (status = 200, description = "The JSON-RPC response (or batch of responses).", body = JsonRpc, content_type = "application/json"),
        (status = 202, description = "Notifications only: nothing to answer."),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn mcp(State(state): State<AppState>, headers: HeaderMap, body: axum::body::Bytes) -> ApiResult<Response> {
    state.engine()?;
    let exec = Executor::new(&state, &headers);
    let call = |name: String, args: Value| {
        let exec = &exec;
        async move { exec.call(&name, &args).await }
    };
    Ok(match assistant::mcp::handle_body(&body, &call).await {
        Some(answer) => axum::Json(answer).into_response(),
        None => axum::http::StatusCode::ACCEPTED.into_response(),
    })
}
