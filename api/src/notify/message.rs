//! What a notice says and how each destination receives it: Slack's
//! incoming-webhook JSON (`text` plus `blocks`), or the generic webhook's
//! signed JSON body.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::settings::Kind;

/// One notification, before it is addressed.
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    /// Unique per notice: the `X-Svc-Delivery` header, the same on every
    /// attempt and destination, so a receiver can drop a repeat.
    pub id: String,
    pub kind: Kind,
    /// The ledger event type it comes from (`SCAN_COMPLETED`,
    /// `EXECUTION_ROLLBACK`), or `LEDGER_VERIFY` / `TEST`.
    pub event_type: String,
    /// Unix seconds.
    pub timestamp: u64,
    /// One line: the Slack header.
    pub title: String,
    /// A few lines of plain text.
    pub summary: String,
    /// The facts, for machines.
    pub payload: Value,
    /// The dashboard view that shows more (`#/waste`), if any.
    pub view: Option<&'static str>,
}

impl Notice {
    pub fn new(kind: Kind, event_type: &str, title: String, summary: String, payload: Value) -> Notice {
        Notice {
            id: delivery_id(),
            kind,
            event_type: event_type.to_owned(),
            timestamp: now_s(),
            title,
            summary,
            payload,
            view: None,
        }
    }

    pub fn with_view(mut self, view: &'static str) -> Notice {
        self.view = Some(view);
        self
    }

    /// The Slack incoming-webhook body: `text` (the fallback shown in
    /// notifications) and `blocks`: a header, the summary, and a link to
    /// the dashboard when its URL is configured.
    pub fn slack_body(&self, dashboard_url: Option<&str>) -> Value {
        let mut blocks = vec![
            json!({"type": "header", "text": {"type": "plain_text", "text": clip(&self.title, 150)}}),
            json!({"type": "section", "text": {"type": "mrkdwn", "text": clip(&escape_mrkdwn(&self.summary), 3000)}}),
        ];
        let mut context =
            vec![json!({"type": "mrkdwn", "text": format!("svc · {} · {}", self.kind.name(), self.event_type)})];
        if let Some(link) = self.link(dashboard_url) {
            context.push(json!({"type": "mrkdwn", "text": format!("<{link}|Open in the dashboard>")}));
        }
        blocks.push(json!({"type": "context", "elements": context}));
        json!({
            "text": format!("{}: {}", self.title, self.summary.lines().next().unwrap_or_default()),
            "blocks": blocks,
        })
    }

    /// The generic webhook body: `{kind, event_type, timestamp, summary, payload}`.
    pub fn webhook_body(&self) -> Value {
        json!({
            "kind": self.kind.name(),
            "event_type": self.event_type,
            "timestamp": self.timestamp,
            "summary": self.summary,
            "payload": self.payload,
        })
    }

    /// The dashboard link, `<base>/#/<view>`.
    pub fn link(&self, dashboard_url: Option<&str>) -> Option<String> {
        let base = dashboard_url?.trim_end_matches('/');
        Some(format!("{base}/{}", self.view?))
    }
}

/// `X-Svc-Signature`'s value for `body`: `sha256=` and the hex HMAC-SHA256
/// of the body's bytes with the webhook's secret.
pub fn signature(secret: &str, body: &[u8]) -> String {
    format!("sha256={}", hex::encode(hmac_sha256(secret.as_bytes(), body)))
}

/// HMAC (RFC 2104) over SHA-256.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| k.map(|b| b ^ byte);
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    let outer = Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize();
    let mut mac = [0u8; 32];
    mac.copy_from_slice(&outer);
    mac
}

/// Slack reads `&`, `<` and `>` as markup.
fn escape_mrkdwn(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// At most `max` characters, an ellipsis marking a cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A random 128-bit id in hex.
fn delivery_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // No randomness: time and a counter are still unique in this process.
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        b[..8].copy_from_slice(&now_s().to_be_bytes());
        b[8..].copy_from_slice(&n.to_be_bytes());
    }
    hex::encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231 test cases 1, 2 and 6 (a key longer than a block).
    #[test]
    fn hmac_matches_rfc_4231() {
        assert_eq!(
            hex::encode(hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn bodies_carry_the_notice() {
        let n = Notice::new(
            Kind::Waste,
            "SCAN_COMPLETED",
            "Waste up $120.00/mo".into(),
            "scan 3: waste <now> $500.00/mo\nsecond line".into(),
            json!({"scan_seq": 3}),
        )
        .with_view("#/waste");
        let w = n.webhook_body();
        assert_eq!(w["kind"], "waste");
        assert_eq!(w["event_type"], "SCAN_COMPLETED");
        assert_eq!(w["payload"]["scan_seq"], 3);
        assert_eq!(w.as_object().map(|o| o.len()), Some(5));
        let s = n.slack_body(Some("https://svc.example.com/"));
        assert_eq!(s["text"], "Waste up $120.00/mo: scan 3: waste <now> $500.00/mo");
        assert_eq!(s["blocks"][0]["type"], "header");
        assert!(
            s["blocks"][1]["text"]["text"]
                .as_str()
                .unwrap_or_default()
                .contains("&lt;now&gt;")
        );
        assert!(
            s.to_string()
                .contains("<https://svc.example.com/#/waste|Open in the dashboard>")
        );
        assert!(!n.slack_body(None).to_string().contains("dashboard"));
        assert_eq!(clip("abcdef", 4), "abc…");
    }
}
