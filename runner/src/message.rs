//! The echo message: a 16-byte header plus deterministic filler, and how an echo is judged.
//!
//! Header (big-endian, as in arknet): bytes 0–2 magic `EMK`, byte 3 phase tag (0 warmup,
//! 1 measured), bytes 4–7 client id, bytes 8–15 per-client sequence number. Filler byte at
//! absolute offset `i ≥ 16` is `(sequence + 17·i + 31·id) mod 256`.
//!
//! Because 17 is odd, `17·j mod 256` runs through all residues, so every filler is a window
//! into one static table: senders copy from it and verifiers compare against it with a single
//! `memcmp`, with no per-message allocation (arknet-echo-core.md §15 item 9).

use std::sync::OnceLock;

/// The ALPN both ends of a QUIC connection offer.
pub const ALPN: &[u8] = b"echomark";

/// Header length; also the smallest payload.
pub const HEADER_LEN: usize = 16;
/// Largest payload (the IPv4 UDP limit, used for every protocol as arknet does).
pub const MAX_PAYLOAD: usize = 65_507;
/// Magic bytes at the start of every message.
pub const MAGIC: [u8; 3] = *b"EMK";
/// Phase tag of warmup messages.
pub const PHASE_WARMUP: u8 = 0;
/// Phase tag of measured messages.
pub const PHASE_MEASURED: u8 = 1;

/// Multiplicative inverse of 17 modulo 256 (17 × 241 = 4097 ≡ 1).
const INV17: u32 = 241;

fn filler_table() -> &'static [u8] {
    static TABLE: OnceLock<Vec<u8>> = OnceLock::new();
    TABLE.get_or_init(|| {
        (0..MAX_PAYLOAD + 256)
            .map(|j| (j * 17 % 256) as u8)
            .collect()
    })
}

/// The filler bytes `[16, payload)` of message (`client_id`, `sequence`).
pub fn filler(client_id: u32, sequence: u64, payload: usize) -> &'static [u8] {
    let c = (sequence % 256) as u32 + (client_id % 256) * 31;
    let k = ((c % 256) * INV17 % 256) as usize;
    &filler_table()[HEADER_LEN + k..payload + k]
}

/// A decoded message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub phase: u8,
    pub client_id: u32,
    pub sequence: u64,
}

impl Header {
    /// Encodes the header into its 16 bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..3].copy_from_slice(&MAGIC);
        out[3] = self.phase;
        out[4..8].copy_from_slice(&self.client_id.to_be_bytes());
        out[8..16].copy_from_slice(&self.sequence.to_be_bytes());
        out
    }
}

/// Why a received message was rejected before its slot was looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// Shorter than the 16-byte header.
    Short,
    BadMagic,
    /// Phase tag above 1.
    BadPhase,
}

/// Decodes a header; the server-side check (arknet §2.5: short, magic, tag ≤ 1).
pub fn parse_header(message: &[u8]) -> Result<Header, HeaderError> {
    if message.len() < HEADER_LEN {
        return Err(HeaderError::Short);
    }
    if message[..3] != MAGIC {
        return Err(HeaderError::BadMagic);
    }
    let phase = message[3];
    if phase > PHASE_MEASURED {
        return Err(HeaderError::BadPhase);
    }
    let client_id = u32::from_be_bytes(message[4..8].try_into().expect("4 bytes"));
    let sequence = u64::from_be_bytes(message[8..16].try_into().expect("8 bytes"));
    Ok(Header {
        phase,
        client_id,
        sequence,
    })
}

/// Appends the complete message (`payload` bytes) for `header` to `out`.
pub fn write_message(out: &mut Vec<u8>, header: Header, payload: usize) {
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(filler(header.client_id, header.sequence, payload));
}

/// The outcome of checking one echo against what the client sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EchoVerdict {
    /// Size, magic, tag or client id wrong: `content_errors` on `phase`.
    Malformed,
    /// A valid header for another phase, or a finished client: `unexpected_messages` on the
    /// tagged phase.
    WrongPhase { tagged: u8 },
    /// No in-flight message with this sequence: `unexpected_messages`.
    NoSlot,
    /// The bytes differ from what was sent: `content_errors`; the slot is freed.
    Corrupted { sequence: u64 },
    /// Byte-for-byte equal to what was sent.
    Intact { sequence: u64 },
}

/// What the client expects of an echo; `in_flight(sequence)` says whether a slot holds it.
pub struct Expectation<F: Fn(u64) -> bool> {
    pub client_id: u32,
    pub phase: u8,
    pub payload: usize,
    pub in_flight: F,
}

/// Checks one echo in arknet's order: header, phase, slot, content. Order is checked by the
/// caller, which knows the protocol's rule. A pure function, so it is unit-tested directly.
pub fn verify_echo<F: Fn(u64) -> bool>(expect: &Expectation<F>, message: &[u8]) -> EchoVerdict {
    if message.len() != expect.payload {
        return EchoVerdict::Malformed;
    }
    let header = match parse_header(message) {
        Ok(h) if h.client_id == expect.client_id => h,
        _ => return EchoVerdict::Malformed,
    };
    if header.phase != expect.phase {
        return EchoVerdict::WrongPhase {
            tagged: header.phase,
        };
    }
    if !(expect.in_flight)(header.sequence) {
        return EchoVerdict::NoSlot;
    }
    if message[HEADER_LEN..] != *filler(header.client_id, header.sequence, expect.payload) {
        return EchoVerdict::Corrupted {
            sequence: header.sequence,
        };
    }
    EchoVerdict::Intact {
        sequence: header.sequence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contracts_limits_are_the_runners_own() {
        use echomark_archive::limits;
        assert_eq!(limits::PAYLOAD, HEADER_LEN as u64..=MAX_PAYLOAD as u64);
        let batch = crate::traffic::mmsg::MAX_BATCH as u64;
        assert_eq!(limits::UDP_BATCH, 2..=batch);
    }

    fn naive_filler(id: u32, seq: u64, payload: usize) -> Vec<u8> {
        (HEADER_LEN..payload)
            .map(|i| ((seq as u128 + 17 * i as u128 + 31 * id as u128) % 256) as u8)
            .collect()
    }

    fn message(id: u32, seq: u64, phase: u8, payload: usize) -> Vec<u8> {
        let mut out = Vec::new();
        write_message(
            &mut out,
            Header {
                phase,
                client_id: id,
                sequence: seq,
            },
            payload,
        );
        out
    }

    fn expect(id: u32, phase: u8, payload: usize) -> Expectation<impl Fn(u64) -> bool> {
        Expectation {
            client_id: id,
            phase,
            payload,
            in_flight: |seq| seq < 100,
        }
    }

    #[test]
    fn filler_matches_the_arknet_formula() {
        for (id, seq, payload) in [
            (0, 0, 64),
            (1, 255, 1024),
            (1023, 1 << 40, 16),
            (7, 9, 65_507),
        ] {
            assert_eq!(
                filler(id, seq, payload),
                naive_filler(id, seq, payload).as_slice()
            );
        }
    }

    #[test]
    fn header_roundtrips() {
        let h = Header {
            phase: 1,
            client_id: 0xDEAD_BEEF,
            sequence: u64::MAX - 3,
        };
        assert_eq!(parse_header(&h.encode()), Ok(h));
    }

    #[test]
    fn intact_echo_is_accepted() {
        let m = message(3, 42, 1, 256);
        assert_eq!(
            verify_echo(&expect(3, 1, 256), &m),
            EchoVerdict::Intact { sequence: 42 }
        );
    }

    #[test]
    fn a_flipped_filler_byte_is_corruption() {
        let mut m = message(3, 42, 1, 256);
        m[200] ^= 1;
        assert_eq!(
            verify_echo(&expect(3, 1, 256), &m),
            EchoVerdict::Corrupted { sequence: 42 }
        );
    }

    #[test]
    fn header_damage_is_malformed() {
        let ok = message(3, 42, 1, 64);
        let mut bad_magic = ok.clone();
        bad_magic[0] = b'X';
        let mut bad_tag = ok.clone();
        bad_tag[3] = 7;
        let other_client = message(4, 42, 1, 64);
        let short = ok[..63].to_vec();
        for m in [bad_magic, bad_tag, other_client, short] {
            assert_eq!(verify_echo(&expect(3, 1, 64), &m), EchoVerdict::Malformed);
        }
    }

    #[test]
    fn wrong_phase_and_unknown_sequence_are_unexpected() {
        let warm = message(3, 5, 0, 64);
        assert_eq!(
            verify_echo(&expect(3, 1, 64), &warm),
            EchoVerdict::WrongPhase { tagged: 0 }
        );
        let stale = message(3, 500, 1, 64);
        assert_eq!(verify_echo(&expect(3, 1, 64), &stale), EchoVerdict::NoSlot);
    }

    #[test]
    fn server_check_rejects_short_magic_and_tag() {
        assert_eq!(parse_header(b"EMK"), Err(HeaderError::Short));
        let mut m = message(1, 1, 1, 32);
        m[1] = 0;
        assert_eq!(parse_header(&m), Err(HeaderError::BadMagic));
        m = message(1, 1, 1, 32);
        m[3] = 2;
        assert_eq!(parse_header(&m), Err(HeaderError::BadPhase));
    }
}
