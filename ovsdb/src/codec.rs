//! Framing: splitting an OVSDB byte stream into JSON-RPC messages.
//!
//! OVSDB (RFC 7047 §4) carries JSON-RPC 1.0 messages as bare JSON objects written
//! back-to-back on a stream socket, **with no length prefix and no delimiter**. Peers may
//! put whitespace between objects, a message may be split across reads and one read may
//! hold several messages. ovsdb-server's own reader (`lib/jsonrpc.c`) feeds bytes into an
//! incremental JSON parser and emits a message whenever one top-level value completes.
//!
//! This module keeps *framing* apart from *meaning*:
//! - [`JsonFramer`] is a sans-I/O byte scanner that finds where one top-level JSON
//!   object ends. It tracks nesting depth, whether it is inside a string and whether the
//!   previous byte was a backslash, and it resumes where it stopped: bytes are scanned
//!   once, never again from the start of the buffer on each read.
//! - [`Deframer`] owns a buffer and hands out whole frames (`push` bytes, pull frames).
//! - `JsonRpcCodec` (feature `client`) is the tokio-util `Decoder`/`Encoder` that turns
//!   frames into [`Message`]s.
//!
//! The scanner only checks structure: a frame must start with `{` and its brackets must
//! balance. Whether the frame is valid JSON and a valid JSON-RPC message is decided by
//! [`Message`]'s parser, which reports its own error.

use bytes::{Bytes, BytesMut};

use crate::rpc::{Message, MessageError};

/// Default bound on one message: 64 MiB. A monitor reply for a large NB database
/// (25k switches + 10k ports) is about 7 MB, so this leaves ample room while still
/// stopping a peer that never closes its object from exhausting memory.
pub const DEFAULT_MAX_MESSAGE_LEN: usize = 64 * 1024 * 1024;

/// A framing failure. Offsets count bytes from the start of the stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The message being received grew beyond the configured bound.
    #[error("message starting at stream offset {offset} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Stream offset of the message's first byte.
        offset: u64,
        /// The configured maximum message length.
        limit: usize,
    },
    /// A byte that cannot start or continue a JSON-RPC message at the top level.
    #[error("malformed stream: unexpected byte {byte:#04x} ({shown:?}) at stream offset {offset}, expected '{{'", shown = char::from(*byte))]
    Malformed {
        /// Stream offset of the offending byte.
        offset: u64,
        /// The offending byte.
        byte: u8,
    },
    /// The stream ended inside a message.
    #[error("stream ended in the middle of a message: {buffered} bytes of an unfinished message starting at stream offset {offset}")]
    Truncated {
        /// Stream offset of the unfinished message's first byte.
        offset: u64,
        /// How many bytes of it had arrived.
        buffered: usize,
    },
}

/// Where one complete frame lies in the scanned buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSpan {
    /// Index of the opening `{` (leading whitespace is skipped).
    pub start: usize,
    /// One past the closing `}`: consume this many bytes from the buffer.
    pub end: usize,
}

/// Sans-I/O scanner that finds the end of each top-level JSON object in a byte stream.
///
/// Call [`JsonFramer::scan`] with the *unconsumed* bytes each time more arrive. When it
/// returns a [`FrameSpan`], remove `span.end` bytes from the front of the buffer before
/// the next call; until then, keep appending to the same buffer, since the scanner
/// remembers how far it has already looked.
#[derive(Debug, Clone)]
pub struct JsonFramer {
    max_len: usize,
    /// Bytes of the current buffer already scanned.
    pos: usize,
    /// Index of the current frame's `{`, once seen.
    start: Option<usize>,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Bytes consumed by earlier frames, for error offsets.
    stream_offset: u64,
}

impl Default for JsonFramer {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_MESSAGE_LEN)
    }
}

impl JsonFramer {
    /// A scanner that rejects messages longer than `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        JsonFramer {
            max_len,
            pos: 0,
            start: None,
            depth: 0,
            in_string: false,
            escaped: false,
            stream_offset: 0,
        }
    }

    /// The configured maximum message length.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Scans the unconsumed bytes `buf` (which must extend the bytes given on the
    /// previous call) and returns the span of the first complete object, if any.
    pub fn scan(&mut self, buf: &[u8]) -> Result<Option<FrameSpan>, FrameError> {
        let mut i = self.pos;
        if self.start.is_none() {
            i = self.skip_whitespace(buf, i)?;
            if i == buf.len() {
                if i > self.max_len {
                    // Nothing but whitespace, and too much of it.
                    return Err(FrameError::TooLarge {
                        offset: self.stream_offset,
                        limit: self.max_len,
                    });
                }
                self.pos = i;
                return Ok(None);
            }
            // skip_whitespace stopped at a '{'.
            self.start = Some(i);
            self.depth = 1;
            i += 1;
        }
        let start = self.start.unwrap_or(0);
        // Never look past the size bound: a peer could otherwise make us scan (and
        // buffer) without limit.
        let limit = buf.len().min(start.saturating_add(self.max_len));
        match self.scan_object(&buf[..limit], i) {
            Some(end) => {
                self.reset_after(end);
                Ok(Some(FrameSpan { start, end }))
            }
            None if buf.len() - start >= self.max_len => Err(FrameError::TooLarge {
                offset: self.stream_offset + start as u64,
                limit: self.max_len,
            }),
            None => {
                self.pos = limit;
                Ok(None)
            }
        }
    }

    /// Called at end of stream with the unconsumed bytes: succeeds only when nothing
    /// but whitespace is left.
    pub fn finish(&mut self, buf: &[u8]) -> Result<(), FrameError> {
        if let Some(span) = self.scan(buf)? {
            // A whole frame is still buffered: the caller should have drained it first.
            return Err(FrameError::Truncated {
                offset: self.stream_offset + span.start as u64,
                buffered: buf.len() - span.start,
            });
        }
        match self.start {
            None => Ok(()),
            Some(start) => Err(FrameError::Truncated {
                offset: self.stream_offset + start as u64,
                buffered: buf.len() - start,
            }),
        }
    }

    fn skip_whitespace(&self, buf: &[u8], mut i: usize) -> Result<usize, FrameError> {
        while i < buf.len() {
            match buf[i] {
                b' ' | b'\t' | b'\n' | b'\r' => i += 1,
                b'{' => return Ok(i),
                byte => {
                    return Err(FrameError::Malformed {
                        offset: self.stream_offset + i as u64,
                        byte,
                    })
                }
            }
        }
        Ok(i)
    }

    /// Continues scanning an object from `i`; returns one past its closing brace.
    fn scan_object(&mut self, buf: &[u8], mut i: usize) -> Option<usize> {
        while i < buf.len() {
            if self.in_string {
                if self.escaped {
                    // The byte right after a backslash is literal, whatever it is.
                    self.escaped = false;
                    i += 1;
                    continue;
                }
                // Hot loop: most bytes of a message are string contents.
                match buf[i..].iter().position(|&b| b == b'"' || b == b'\\') {
                    None => {
                        i = buf.len();
                        break;
                    }
                    Some(off) => {
                        i += off;
                        if buf[i] == b'\\' {
                            self.escaped = true;
                        } else {
                            self.in_string = false;
                        }
                        i += 1;
                    }
                }
                continue;
            }
            match buf[i] {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.pos = i;
        None
    }

    fn reset_after(&mut self, end: usize) {
        self.stream_offset += end as u64;
        self.pos = 0;
        self.start = None;
        self.depth = 0;
        self.in_string = false;
        self.escaped = false;
    }
}

/// A buffer plus a [`JsonFramer`]: push bytes as they arrive, pull whole frames.
///
/// This is the sans-I/O form of the decoder, used by the fuzz target and by callers
/// that drive their own I/O.
#[derive(Debug, Default)]
pub struct Deframer {
    framer: JsonFramer,
    buf: BytesMut,
}

impl Deframer {
    /// A deframer that rejects messages longer than `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        Deframer {
            framer: JsonFramer::new(max_len),
            buf: BytesMut::new(),
        }
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame (one JSON object, without surrounding whitespace).
    pub fn next_frame(&mut self) -> Result<Option<Bytes>, FrameError> {
        match self.framer.scan(&self.buf)? {
            Some(span) => {
                let mut frame = self.buf.split_to(span.end);
                Ok(Some(frame.split_off(span.start).freeze()))
            }
            None => Ok(None),
        }
    }

    /// The next complete message, parsed.
    pub fn next_message(&mut self) -> Result<Option<Message>, DecodeError> {
        match self.next_frame()? {
            Some(frame) => Ok(Some(Message::from_slice(&frame)?)),
            None => Ok(None),
        }
    }

    /// Declares end of stream: fails if an unfinished message is buffered.
    pub fn finish(&mut self) -> Result<(), FrameError> {
        self.framer.finish(&self.buf)
    }
}

/// Failure to decode a message from the stream: bad framing or a bad message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The byte stream could not be split into messages.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// A frame was not a valid JSON-RPC 1.0 message.
    #[error(transparent)]
    Message(#[from] MessageError),
    /// Reading from or writing to the socket failed.
    #[error("i/o error on the ovsdb stream")]
    Io(#[from] std::io::Error),
}

#[cfg(feature = "client")]
pub use self::tokio_codec::JsonRpcCodec;

#[cfg(feature = "client")]
mod tokio_codec {
    use bytes::{Buf, BufMut, BytesMut};
    use tokio_util::codec::{Decoder, Encoder};

    use super::{DecodeError, JsonFramer};
    use crate::rpc::Message;

    /// tokio-util codec for OVSDB's JSON-RPC 1.0 stream.
    ///
    /// Decoding yields one [`Message`] per top-level JSON object; at end of stream an
    /// unfinished message is reported as [`super::FrameError::Truncated`].
    #[derive(Debug, Default)]
    pub struct JsonRpcCodec {
        framer: JsonFramer,
    }

    impl JsonRpcCodec {
        /// A codec that rejects incoming messages longer than `max_len` bytes.
        pub fn new(max_len: usize) -> Self {
            JsonRpcCodec {
                framer: JsonFramer::new(max_len),
            }
        }
    }

    impl Decoder for JsonRpcCodec {
        type Item = Message;
        type Error = DecodeError;

        fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Message>, DecodeError> {
            let Some(span) = self.framer.scan(src)? else {
                // Let the buffer grow in big steps rather than per read.
                return Ok(None);
            };
            // Parse in place and then drop the bytes: splitting the frame off would turn
            // the buffer into shared storage and make the next read reallocate it.
            let message = Message::from_slice(&src[span.start..span.end]);
            src.advance(span.end);
            Ok(Some(message?))
        }

        fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Message>, DecodeError> {
            if let Some(message) = self.decode(src)? {
                return Ok(Some(message));
            }
            self.framer.finish(src)?;
            src.clear();
            Ok(None)
        }
    }

    impl Encoder<&Message> for JsonRpcCodec {
        type Error = DecodeError;

        fn encode(&mut self, item: &Message, dst: &mut BytesMut) -> Result<(), DecodeError> {
            item.write_to(&mut dst.writer())?;
            Ok(())
        }
    }

    impl Encoder<Message> for JsonRpcCodec {
        type Error = DecodeError;

        fn encode(&mut self, item: Message, dst: &mut BytesMut) -> Result<(), DecodeError> {
            self.encode(&item, dst)
        }
    }
}
