//! The protocol between the kill -9 harness and the `crash-child` process.
//!
//! The child is started as `crash-child append <dir> <stream-base> <threads> <seed>`. It opens
//! the log (recovering it), prints `ready <log end offset>`, then runs `threads` appender
//! threads; thread `t` writes stream `stream-base + t`. After each append *returns*, the child
//! prints one `ack` line per record and flushes stdout, so every line the parent reads is an
//! acknowledgement the log gave:
//!
//! ```text
//! ack <offset> <stream> <seq> <fingerprint, 16 hex digits> <D|P>
//! ```
//!
//! `D` marks a durable append (`Durability::Fsync`), `P` a page-cache append. A SIGKILL keeps
//! the page cache, so both must survive a kill -9; only `D` must survive a power loss.
//!
//! `crash-child open <dir>` opens the log and reports `opened`, or `locked` / `error <text>`;
//! with `hold` as a third argument it then sleeps until killed (used to test the directory lock
//! and KAFKA-10471: the clean-shutdown marker is consumed before loading).

use crate::payload::RecordId;

/// Segment size the child and the harness agree on: small, so a run rolls several segments.
pub const SEGMENT_BYTES: i32 = 48 * 1024;

/// The config the child opens the log with (and the harness reopens it with).
pub fn config() -> seglog::LogConfig {
    crate::small_config(SEGMENT_BYTES)
}

/// One acknowledgement line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The record's offset.
    pub offset: i64,
    /// The record.
    pub id: RecordId,
    /// Whether the append was durable (fsynced) when it returned.
    pub durable: bool,
}

impl Ack {
    /// The line the child prints (without the newline).
    pub fn to_line(&self) -> String {
        format!(
            "ack {} {} {} {:016x} {}",
            self.offset,
            self.id.stream,
            self.id.seq,
            self.id.fingerprint(),
            if self.durable { 'D' } else { 'P' }
        )
    }

    /// Parses an `ack` line. `None` for other lines; a line whose fingerprint does not match
    /// its record is an error (the child and the harness disagree about content).
    ///
    /// # Errors
    /// A description of the malformed line.
    pub fn parse(line: &str) -> Result<Option<Ack>, String> {
        let mut words = line.split_whitespace();
        if words.next() != Some("ack") {
            return Ok(None);
        }
        let mut next = |what: &str| {
            words
                .next()
                .ok_or_else(|| format!("ack line {line:?} has no {what}"))
        };
        let offset = next("offset")?;
        let stream = next("stream")?;
        let seq = next("seq")?;
        let fingerprint = next("fingerprint")?;
        let durable = next("durability")?;
        let bad = |what: &str| format!("ack line {line:?}: bad {what}");
        let id = RecordId {
            stream: stream.parse().map_err(|_| bad("stream"))?,
            seq: seq.parse().map_err(|_| bad("seq"))?,
        };
        let fingerprint = u64::from_str_radix(fingerprint, 16).map_err(|_| bad("fingerprint"))?;
        if fingerprint != id.fingerprint() {
            return Err(format!(
                "ack line {line:?}: fingerprint differs from the harness's ({:016x})",
                id.fingerprint()
            ));
        }
        Ok(Some(Ack {
            offset: offset.parse().map_err(|_| bad("offset"))?,
            id,
            durable: match durable {
                "D" => true,
                "P" => false,
                _ => return Err(bad("durability")),
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_lines_round_trip() {
        let ack = Ack {
            offset: 42,
            id: RecordId { stream: 3, seq: 9 },
            durable: true,
        };
        assert_eq!(Ack::parse(&ack.to_line()), Ok(Some(ack)));
        assert_eq!(Ack::parse("ready 0"), Ok(None));
        assert!(Ack::parse("ack 1 2 3 0000000000000000 D").is_err());
        assert!(Ack::parse("ack 1 2").is_err());
    }
}
