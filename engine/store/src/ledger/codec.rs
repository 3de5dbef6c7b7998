//! The stored form of one ledger event and its hash.
//!
//! Value layout in the `events` table (the key is the sequence number):
//! a format byte, `ts_us` (u64 LE), `prev_hash` and `hash` (32 bytes each),
//! then six strings, each a LEB128 length followed by UTF-8 bytes: event
//! type, CRN, actor, message, session id and the payload as JSON text.
//! Written and read with [`crate::bytes`].
//!
//! The hash is SHA-256 over a canonical encoding that does not depend on the
//! storage layout: a domain tag, `seq` and `ts_us` (u64 BE), the same six
//! strings each prefixed by its length (u64 BE), then `prev_hash`. The payload
//! is hashed as the exact JSON text stored, so verification never depends on
//! how a JSON library re-serializes a value.
//!
//! Decoding never panics: truncated or foreign bytes are an error saying what
//! broke.

use sha2::{Digest, Sha256};

use super::events::Event;
use crate::bytes::{DecodeError, Reader, Writer};

const FORMAT_V1: u8 = 1;
const HASH_DOMAIN: &[u8] = b"svc.ledger.event.v1\0";
const FIXED_LEN: usize = 1 + 8 + 32 + 32;

/// One event as stored, borrowing its strings from the stored bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored<'a> {
    pub ts_us: u64,
    pub event_type: &'a str,
    pub crn: &'a str,
    pub actor: &'a str,
    pub message: &'a str,
    pub session_id: &'a str,
    pub payload: &'a str,
    pub prev_hash: [u8; 32],
    pub hash: [u8; 32],
}

impl<'a> Stored<'a> {
    fn strings(&self) -> [&'a str; 6] {
        [
            self.event_type,
            self.crn,
            self.actor,
            self.message,
            self.session_id,
            self.payload,
        ]
    }

    /// The hash this event should carry when it has sequence number `seq`.
    pub fn compute_hash(&self, seq: u64) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(HASH_DOMAIN);
        h.update(seq.to_be_bytes());
        h.update(self.ts_us.to_be_bytes());
        for s in self.strings() {
            h.update((s.len() as u64).to_be_bytes());
            h.update(s.as_bytes());
        }
        h.update(self.prev_hash);
        h.finalize().into()
    }

    pub fn encode(&self) -> Vec<u8> {
        let strings = self.strings();
        let len = FIXED_LEN + strings.iter().map(|s| s.len() + 10).sum::<usize>();
        let mut out = Vec::with_capacity(len);
        let mut w = Writer::new(&mut out);
        w.u8(FORMAT_V1);
        w.u64(self.ts_us);
        w.raw(&self.prev_hash);
        w.raw(&self.hash);
        for s in strings {
            w.str_varint(s);
        }
        out
    }

    /// The public form, with the payload parsed.
    pub fn to_event(&self, seq: u64) -> Result<Event, String> {
        let payload = serde_json::from_str(self.payload).map_err(|e| format!("payload is not json: {e}"))?;
        Ok(Event {
            seq,
            ts_us: self.ts_us,
            event_type: self.event_type.to_owned(),
            crn: self.crn.to_owned(),
            actor: self.actor.to_owned(),
            message: self.message.to_owned(),
            session_id: self.session_id.to_owned(),
            payload,
            prev_hash: self.prev_hash,
            hash: self.hash,
        })
    }
}

/// What a read of a stored event could not read, as the ledger reports it.
fn malformed(e: DecodeError) -> String {
    format!("malformed {}", e.0)
}

/// Decodes a stored value. The error says what was wrong with the bytes.
pub fn decode(bytes: &[u8]) -> Result<Stored<'_>, String> {
    let mut r = Reader::new(bytes);
    let format = r.u8("event format").map_err(malformed)?;
    if format != FORMAT_V1 {
        return Err(format!("unknown event format {format}"));
    }
    let stored = read_fields(&mut r).map_err(malformed)?;
    if !r.is_empty() {
        return Err(format!("{} trailing bytes", r.remaining()));
    }
    Ok(stored)
}

/// Everything after the format byte.
fn read_fields<'a>(r: &mut Reader<'a>) -> Result<Stored<'a>, DecodeError> {
    Ok(Stored {
        ts_us: r.u64("timestamp")?,
        prev_hash: r.array("prev_hash")?,
        hash: r.array("hash")?,
        event_type: r.str_varint("event type")?,
        crn: r.str_varint("crn")?,
        actor: r.str_varint("actor")?,
        message: r.str_varint("message")?,
        session_id: r.str_varint("session id")?,
        payload: r.str_varint("payload")?,
    })
}

/// Reads only the timestamp of a stored value.
pub fn peek_ts(bytes: &[u8]) -> Result<u64, String> {
    let mut r = Reader::new(bytes);
    if r.u8("event format") != Ok(FORMAT_V1) || bytes.len() < FIXED_LEN {
        return Err("unknown event format or truncated event".to_owned());
    }
    r.u64("timestamp").map_err(malformed)
}

/// Reads only the event type of a stored value, for filters that need
/// nothing else.
pub fn peek_type(bytes: &[u8]) -> Result<&str, String> {
    if bytes.first() != Some(&FORMAT_V1) {
        return Err("unknown event format".to_owned());
    }
    let Some(after_hashes) = bytes.get(FIXED_LEN..) else {
        return Err(malformed(DecodeError("event type")));
    };
    Reader::new(after_hashes).str_varint("event type").map_err(malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample<'a>(s: &'a [String; 6], ts_us: u64) -> Stored<'a> {
        Stored {
            ts_us,
            event_type: &s[0],
            crn: &s[1],
            actor: &s[2],
            message: &s[3],
            session_id: &s[4],
            payload: &s[5],
            prev_hash: [7; 32],
            hash: [9; 32],
        }
    }

    proptest! {
        #[test]
        fn codec_round_trips(s in proptest::array::uniform6(".{0,300}"), ts in any::<u64>()) {
            let stored = sample(&s, ts);
            let bytes = stored.encode();
            prop_assert_eq!(decode(&bytes), Ok(stored.clone()));
            prop_assert_eq!(peek_type(&bytes), Ok(stored.event_type));
            prop_assert_eq!(peek_ts(&bytes), Ok(ts));
        }

        #[test]
        fn codec_rejects_garbage_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
            let _ = peek_type(&bytes);
            let _ = peek_ts(&bytes);
        }
    }

    #[test]
    fn codec_rejects_every_truncation() {
        let s = [
            "T".to_owned(),
            "crn".to_owned(),
            "a".to_owned(),
            "m".to_owned(),
            "s".to_owned(),
            "{}".to_owned(),
        ];
        let bytes = sample(&s, 5).encode();
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn hash_covers_every_field() {
        let s = [
            "T".to_owned(),
            "c".to_owned(),
            "a".to_owned(),
            "m".to_owned(),
            "s".to_owned(),
            "{}".to_owned(),
        ];
        let base = sample(&s, 5);
        let h = base.compute_hash(1);
        assert_ne!(h, base.compute_hash(2));
        assert_ne!(
            h,
            Stored {
                ts_us: 6,
                ..base.clone()
            }
            .compute_hash(1)
        );
        assert_ne!(
            h,
            Stored {
                prev_hash: [0; 32],
                ..base.clone()
            }
            .compute_hash(1)
        );
        // Moving a byte from one field to the next changes the hash (length prefixes).
        assert_ne!(
            h,
            Stored {
                event_type: "",
                crn: "Tc",
                ..base.clone()
            }
            .compute_hash(1)
        );
        assert_ne!(h, Stored { payload: "{ }", ..base }.compute_hash(1));
    }
}
