//! The stored form of one ledger event and its hash.
//!
//! Value layout in the `events` table (the key is the sequence number):
//! a format byte, `ts_us` (u64 LE), `prev_hash` and `hash` (32 bytes each),
//! then six strings, each a LEB128 length followed by UTF-8 bytes: event
//! type, CRN, actor, message, session id and the payload as JSON text.
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

use super::Event;

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
        out.push(FORMAT_V1);
        out.extend_from_slice(&self.ts_us.to_le_bytes());
        out.extend_from_slice(&self.prev_hash);
        out.extend_from_slice(&self.hash);
        for s in strings {
            put_varint(&mut out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
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

/// Decodes a stored value. The error says what was wrong with the bytes.
pub fn decode(bytes: &[u8]) -> Result<Stored<'_>, String> {
    let mut r = Reader { bytes, pos: 0 };
    let format = r.take(1)?[0];
    if format != FORMAT_V1 {
        return Err(format!("unknown event format {format}"));
    }
    let ts_us = u64::from_le_bytes(r.array()?);
    let prev_hash = r.array()?;
    let hash = r.array()?;
    let event_type = r.string("event type")?;
    let crn = r.string("crn")?;
    let actor = r.string("actor")?;
    let message = r.string("message")?;
    let session_id = r.string("session id")?;
    let payload = r.string("payload")?;
    if r.pos != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - r.pos));
    }
    Ok(Stored {
        ts_us,
        event_type,
        crn,
        actor,
        message,
        session_id,
        payload,
        prev_hash,
        hash,
    })
}

/// Reads only the timestamp of a stored value.
pub fn peek_ts(bytes: &[u8]) -> Result<u64, String> {
    if bytes.first() != Some(&FORMAT_V1) || bytes.len() < FIXED_LEN {
        return Err("unknown event format or truncated event".to_owned());
    }
    let mut ts = [0u8; 8];
    ts.copy_from_slice(&bytes[1..9]);
    Ok(u64::from_le_bytes(ts))
}

/// Reads only the event type of a stored value, for filters that need
/// nothing else.
pub fn peek_type(bytes: &[u8]) -> Result<&str, String> {
    let mut r = Reader { bytes, pos: FIXED_LEN };
    if bytes.first() != Some(&FORMAT_V1) {
        return Err("unknown event format".to_owned());
    }
    r.string("event type")
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("length too long at byte {}", self.pos))
    }

    fn string(&mut self, what: &str) -> Result<&'a str, String> {
        let len = usize::try_from(self.varint()?).map_err(|_| format!("{what} too long"))?;
        let raw = self.take(len).map_err(|e| format!("{what}: {e}"))?;
        std::str::from_utf8(raw).map_err(|e| format!("{what} is not utf-8: {e}"))
    }
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
