//! Framing and JSON-RPC message tests (no server needed): the stream facts of RFC 7047
//! as ovsdb-server 3.1 writes them, bad input as typed errors, and a property test that
//! feeds random messages split at random points (the same property as the fuzz target).

use bytes::BytesMut;
use ovsdb::codec::{DecodeError, Deframer, FrameError, JsonFramer, JsonRpcCodec};
use ovsdb::rpc::{Message, MessageError, RpcError};
use proptest::prelude::*;
use serde_json::{json, Value};
use tokio_util::codec::{Decoder, Encoder};

fn frames_of(chunks: &[&[u8]]) -> Result<Vec<Vec<u8>>, FrameError> {
    let mut deframer = Deframer::new(1 << 20);
    let mut out = Vec::new();
    for chunk in chunks {
        deframer.push(chunk);
        while let Some(frame) = deframer.next_frame()? {
            out.push(frame.to_vec());
        }
    }
    deframer.finish()?;
    Ok(out)
}

#[test]
fn concatenated_objects_with_whitespace_are_split() {
    let input = b"{\"id\":1,\"result\":[],\"error\":null}\n  \r\n\t{\"id\":\"echo\",\"method\":\"echo\",\"params\":[]}{\"a\":{}}";
    let frames = frames_of(&[input]).unwrap();
    assert_eq!(
        frames,
        vec![
            b"{\"id\":1,\"result\":[],\"error\":null}".to_vec(),
            b"{\"id\":\"echo\",\"method\":\"echo\",\"params\":[]}".to_vec(),
            b"{\"a\":{}}".to_vec(),
        ]
    );
}

#[test]
fn strings_with_escaped_quotes_and_braces_do_not_end_a_frame() {
    let text = r#"{"id":1,"result":["a \"quoted}\" {brace", "back\\slash\\", "]]]"],"error":null}"#;
    let frames = frames_of(&[text.as_bytes(), b"{}"]).unwrap();
    assert_eq!(frames, vec![text.as_bytes().to_vec(), b"{}".to_vec()]);
    match Message::from_slice(&frames[0]).unwrap() {
        Message::Reply { id, result } => {
            assert_eq!(id, json!(1));
            let result: Value = serde_json::from_str(result.get()).unwrap();
            assert_eq!(
                result,
                json!(["a \"quoted}\" {brace", "back\\slash\\", "]]]"])
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_message_split_at_every_byte_boundary_decodes_the_same() {
    let text = br#"{"id":7,"result":{"x":"\\\"}{","y":[1,{"z":null}]},"error":null} {"id":8,"result":{},"error":null}"#;
    for cut in 0..=text.len() {
        let frames = frames_of(&[&text[..cut], &text[cut..]]).unwrap();
        assert_eq!(frames.len(), 2, "split at {cut}");
        assert_eq!(frames[1], br#"{"id":8,"result":{},"error":null}"#.to_vec());
    }
    // And one byte per read.
    let bytes: Vec<&[u8]> = text.chunks(1).collect();
    assert_eq!(frames_of(&bytes).unwrap().len(), 2);
}

#[test]
fn truncated_stream_is_a_typed_error() {
    let err = frames_of(&[b"{\"id\":1}  {\"id\":2,\"result\":[\"unfinished"]).unwrap_err();
    assert_eq!(
        err,
        FrameError::Truncated {
            offset: 10,
            buffered: 29
        }
    );
    // Whitespace after the last message is not truncation.
    assert_eq!(frames_of(&[b"{}  \n"]).unwrap().len(), 1);
}

#[test]
fn non_object_input_is_malformed_and_names_the_byte() {
    let err = frames_of(&[b"{}\n[1,2]"]).unwrap_err();
    assert_eq!(
        err,
        FrameError::Malformed {
            offset: 3,
            byte: b'['
        }
    );
    assert!(err.to_string().contains("offset 3"), "{err}");
    let err = frames_of(&[b"HTTP/1.1 200 OK"]).unwrap_err();
    assert_eq!(
        err,
        FrameError::Malformed {
            offset: 0,
            byte: b'H'
        }
    );
}

#[test]
fn oversize_message_is_rejected_before_it_is_complete() {
    // 18 bytes of an unfinished message with a 16-byte limit: rejected without waiting
    // for the rest.
    let mut framer = JsonFramer::new(16);
    let err = framer.scan(b"  {\"a\":\"0123456789\"").unwrap_err();
    assert_eq!(
        err,
        FrameError::TooLarge {
            offset: 2,
            limit: 16
        }
    );
    assert!(err.to_string().contains("16 bytes"), "{err}");
    // Exactly at the limit is fine.
    let mut framer = JsonFramer::new(16);
    let span = framer.scan(b"{\"a\":\"01234567\"}").unwrap().unwrap();
    assert_eq!((span.start, span.end), (0, 16));
}

#[test]
fn malformed_json_inside_a_frame_is_a_message_error() {
    let mut codec = JsonRpcCodec::default();
    let mut buf = BytesMut::from(&b"{\"id\":1,\"result\":[1,,2]}"[..]);
    match codec.decode(&mut buf) {
        Err(DecodeError::Message(MessageError::Json(_))) => {}
        other => panic!("expected a JSON error, got {other:?}"),
    }
}

#[test]
fn codec_reports_truncation_at_eof() {
    let mut codec = JsonRpcCodec::default();
    let mut buf = BytesMut::from(&b"{\"id\":1,\"result\":{},\"error\":null}{\"id\":2"[..]);
    assert!(codec.decode_eof(&mut buf).unwrap().is_some());
    match codec.decode_eof(&mut buf) {
        Err(DecodeError::Frame(FrameError::Truncated { buffered: 7, .. })) => {}
        other => panic!("expected truncation, got {other:?}"),
    }
}

#[test]
fn codec_encodes_compact_json_rpc_1_0() {
    let mut codec = JsonRpcCodec::default();
    let mut buf = BytesMut::new();
    codec
        .encode(Message::request(1, "list_dbs", vec![]), &mut buf)
        .unwrap();
    codec
        .encode(Message::notification("cancel", vec![json!(5)]), &mut buf)
        .unwrap();
    assert_eq!(
        &buf[..],
        &br#"{"id":1,"method":"list_dbs","params":[]}{"id":null,"method":"cancel","params":[5]}"#[..]
    );
}

#[test]
fn messages_are_classified_as_ovsdb_server_does() {
    let parse = |s: &str| Message::from_slice(s.as_bytes());
    assert_eq!(
        parse(r#"{"id":"echo","method":"echo","params":[]}"#).unwrap(),
        Message::request("echo", "echo", vec![])
    );
    assert_eq!(
        parse(r#"{"id":null,"method":"update2","params":["m",{}]}"#).unwrap(),
        Message::notification("update2", vec![json!("m"), json!({})])
    );
    // Error replies from Debian's 3.1 server have no "result" member.
    assert_eq!(
        parse(r#"{"id":16,"error":"unknown method"}"#).unwrap(),
        Message::Error {
            id: json!(16),
            error: RpcError {
                error: "unknown method".into(),
                details: None,
                syntax: None
            }
        }
    );
    let structured = r#"{"id":15,"error":{"syntax":"[\"Nope\"]","details":"transact request specifies unknown database Nope","error":"unknown database"}}"#;
    match parse(structured).unwrap() {
        Message::Error { error, .. } => {
            assert_eq!(error.error, "unknown database");
            assert_eq!(error.syntax.as_deref(), Some("[\"Nope\"]"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_messages_are_typed_errors_naming_the_member() {
    let parse = |s: &str| Message::from_slice(s.as_bytes()).unwrap_err();
    match parse(r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":[]}"#) {
        MessageError::UnexpectedMember { member } => assert_eq!(member, "jsonrpc"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse(r#"{"id":1,"method":"echo","params":null}"#),
        MessageError::MissingMember {
            kind: "request",
            member: "params"
        }
    ));
    assert!(matches!(
        parse(r#"{"id":null,"method":"echo","params":{}}"#),
        MessageError::WrongType {
            member: "params",
            ..
        }
    ));
    assert!(matches!(
        parse(r#"{"id":1,"result":1,"error":"x"}"#),
        MessageError::ResultAndError
    ));
    assert!(matches!(parse(r#"[1]"#), MessageError::Json(_)));
}

fn json_leaf() -> impl Strategy<Value = Value> + Clone {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        // Strings rich in the characters a framer must respect.
        "[a-z{}\\[\\]\"\\\\ ]{0,12}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> + Clone {
    json_leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\"{}]{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn message() -> impl Strategy<Value = Message> {
    let id = prop_oneof![
        any::<u32>().prop_map(Value::from),
        "[a-z]{1,8}".prop_map(Value::from)
    ];
    let params = prop::collection::vec(json_value(), 0..4);
    let error = (
        "[a-z ]{1,10}",
        proptest::option::of("[a-z\"]{0,10}"),
        proptest::option::of("[{}]{0,4}"),
    )
        .prop_map(|(error, details, syntax)| RpcError {
            error,
            details,
            syntax,
        });
    prop_oneof![
        (id.clone(), "[a-z_]{1,12}", params.clone())
            .prop_map(|(id, method, params)| Message::request(id, method, params)),
        ("[a-z_]{1,12}", params).prop_map(|(method, params)| Message::notification(method, params)),
        (
            id.clone(),
            json_value().prop_filter("non-null", |v| !v.is_null())
        )
            .prop_map(|(id, result)| Message::reply(id, &result)),
        (id, error).prop_map(|(id, error)| Message::Error { id, error }),
    ]
}

proptest! {
    #[test]
    fn random_messages_split_at_random_points_round_trip(
        messages in prop::collection::vec(message(), 1..8),
        separators in prop::collection::vec("[ \n\t\r]{0,3}", 8),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut stream = Vec::new();
        for (m, sep) in messages.iter().zip(separators.iter().cycle()) {
            stream.extend_from_slice(&m.to_vec());
            stream.extend_from_slice(sep.as_bytes());
        }
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
        points.push(0);
        points.push(stream.len());
        points.sort_unstable();
        let mut deframer = Deframer::new(1 << 20);
        let mut decoded = Vec::new();
        for pair in points.windows(2) {
            deframer.push(&stream[pair[0]..pair[1]]);
            while let Some(m) = deframer.next_message().unwrap() {
                decoded.push(m);
            }
        }
        deframer.finish().unwrap();
        prop_assert_eq!(decoded, messages);
    }

    /// The fuzz target's property (ovsdb/fuzz/fuzz_targets/deframer.rs) on stable:
    /// arbitrary bytes never panic the framer, every frame is a balanced object within the
    /// bound, and the result does not depend on where the input was split.
    #[test]
    fn arbitrary_bytes_frame_the_same_however_split(
        input in prop::collection::vec(
            prop_oneof![any::<u8>(), prop::sample::select(b"{}[]\"\\ :,a\n".to_vec())],
            0..300,
        ),
        cut in any::<prop::sample::Index>(),
    ) {
        let whole = decode_chunks(&[&input]);
        let (a, b) = input.split_at(cut.index(input.len() + 1));
        let split = decode_chunks(&[a, b]);
        prop_assert_eq!(&whole.0, &split.0);
        prop_assert_eq!(whole.1.is_some(), split.1.is_some());
    }
}

fn decode_chunks(chunks: &[&[u8]]) -> (Vec<Vec<u8>>, Option<FrameError>) {
    const MAX_LEN: usize = 64;
    let mut deframer = Deframer::new(MAX_LEN);
    let mut frames = Vec::new();
    for chunk in chunks {
        deframer.push(chunk);
        loop {
            match deframer.next_frame() {
                Ok(Some(frame)) => {
                    assert_eq!(frame.first(), Some(&b'{'));
                    // Depth counts both bracket kinds; a mismatched "{]" is left to the JSON parser.
                    assert!(matches!(frame.last(), Some(b'}' | b']')));
                    assert!(frame.len() <= MAX_LEN);
                    let _ = Message::from_slice(&frame);
                    frames.push(frame.to_vec());
                }
                Ok(None) => break,
                Err(e) => return (frames, Some(e)),
            }
        }
    }
    (frames, deframer.finish().err())
}
