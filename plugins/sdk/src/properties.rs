//! Node properties as the wire carries them.

/// Encodes node properties for `Node.properties` (JSON bytes).
pub fn json_properties(value: &serde_json::Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_properties_round_trip() {
        let v = serde_json::json!({"size_gb": 100, "name": "données", "tags": {"env": "prod"}});
        let bytes = json_properties(&v);
        let back: serde_json::Value = serde_json::from_slice(&bytes).expect("valid JSON");
        assert_eq!(back, v);
    }
}
