//! The echo core's WebSocket against an independent implementation (tungstenite, blocking),
//! over real loopback sockets: tungstenite's client drives echomark's upgrade and server
//! loop, and echomark's client side talks to tungstenite's server. Either side rejects what
//! RFC 6455 forbids (tungstenite closes on unmasked client frames, for one), so agreement
//! here means the framing is the standard one, not merely self-consistent.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use echomark_runner::framing::websocket::{self, WebSocket};
use echomark_runner::framing::Framing;
use echomark_runner::instruments::counters::ServerStats;
use echomark_runner::message::{self, Header, PHASE_MEASURED};
use echomark_runner::traffic::{connect, stream};
use tungstenite::protocol::frame::coding::{Data, OpCode};
use tungstenite::protocol::frame::Frame;
use tungstenite::Message;

fn message(sequence: u64, payload: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let header = Header {
        phase: PHASE_MEASURED,
        client_id: 3,
        sequence,
    };
    message::write_message(&mut out, header, payload);
    out
}

/// Payload sizes on both sides of the 7-bit / 16-bit length boundary, up to the largest
/// message the echo sends (the 64-bit form starts above it; unit tests cover that).
const SIZES: [usize; 6] = [16, 125, 126, 1024, 16_384, 65_507];

#[test]
fn tungstenite_client_against_the_echomark_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stats = Arc::new(ServerStats::default());
    let server_stats = stats.clone();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream.set_nonblocking(true).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let mut stream = tokio::net::TcpStream::from_std(stream).unwrap();
            connect::server_upgrade(&mut stream).await.unwrap();
            let duty = stream::ServerDuty {
                work_rounds: 0,
                stats: server_stats,
                fault: None,
                closing: Arc::new(AtomicBool::new(false)),
                echo_foreign: false,
                idle: None,
            };
            stream::serve(stream, duty, WebSocket::Server).await;
        });
    });

    let stream = TcpStream::connect(addr).unwrap();
    let (mut ws, response) =
        tungstenite::client::client(format!("ws://{addr}/echo"), stream).unwrap();
    assert_eq!(response.status(), 101);
    for (sequence, &size) in SIZES.iter().enumerate() {
        let sent = message(sequence as u64, size);
        ws.send(Message::Binary(sent.clone().into())).unwrap();
        match ws.read().unwrap() {
            Message::Binary(echo) => assert_eq!(&echo[..], &sent[..], "{size} B"),
            other => panic!("{size} B: not a binary echo: {other:?}"),
        }
    }
    // A window of 8 pipelined frames comes back in order.
    for sequence in 100..108 {
        ws.send(Message::Binary(message(sequence, 512).into()))
            .unwrap();
    }
    for sequence in 100..108 {
        let Message::Binary(echo) = ws.read().unwrap() else {
            panic!("not binary");
        };
        assert_eq!(&echo[..], &message(sequence, 512)[..]);
    }
    // A message in three fragments with a ping between the first two (RFC 6455 §5.4: a
    // control frame may come between fragments): the echo is the whole message and the
    // ping gets a pong with its payload.
    let whole = message(200, 3000);
    let fragments = [&whole[..1000], &whole[1000..2500], &whole[2500..]];
    let binary = OpCode::Data(Data::Binary);
    let continuation = OpCode::Data(Data::Continue);
    ws.send(Message::Frame(Frame::message(
        fragments[0].to_vec(),
        binary,
        false,
    )))
    .unwrap();
    ws.send(Message::Ping(b"between".to_vec().into())).unwrap();
    ws.send(Message::Frame(Frame::message(
        fragments[1].to_vec(),
        continuation,
        false,
    )))
    .unwrap();
    ws.send(Message::Frame(Frame::message(
        fragments[2].to_vec(),
        continuation,
        true,
    )))
    .unwrap();
    let (mut pong, mut echo) = (None, None);
    while pong.is_none() || echo.is_none() {
        match ws.read().unwrap() {
            Message::Pong(p) => pong = Some(p.to_vec()),
            Message::Binary(b) => echo = Some(b.to_vec()),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(pong.unwrap(), b"between");
    assert_eq!(echo.unwrap(), whole);
    // A close is answered with a close, and the server ends the connection.
    ws.close(None).unwrap();
    match ws.read() {
        Ok(Message::Close(_)) | Err(tungstenite::Error::ConnectionClosed) => {}
        Ok(other) => panic!("unexpected {other:?} after close"),
        Err(e) => panic!("no close answer: {e}"),
    }
    server.join().unwrap();
    assert_eq!(stats.received(PHASE_MEASURED), SIZES.len() as u64 + 9);
    for phase in [message::PHASE_WARMUP, PHASE_MEASURED] {
        assert_eq!(stats.counters(phase).content_errors, 0);
    }
}

#[test]
fn echomark_client_against_a_tungstenite_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut ws = tungstenite::accept(stream).unwrap();
        let mut echoed = 0;
        loop {
            match ws.read() {
                Ok(Message::Binary(data)) => {
                    ws.send(Message::Binary(data)).unwrap();
                    echoed += 1;
                }
                Ok(other) => panic!("unexpected {other:?}"),
                // The client closes the socket without a close frame.
                Err(_) => return echoed,
            }
        }
    });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut stream = runtime
        .block_on(tokio::net::TcpStream::connect(addr))
        .unwrap();
    runtime
        .block_on(connect::client_upgrade(&mut stream, &addr.to_string()))
        .unwrap();
    let mut stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    // The client's own codec writes the masked frames.
    let mut client = WebSocket::Client(websocket::MaskKeys::from_os().unwrap());
    for (sequence, &size) in SIZES.iter().enumerate() {
        let sent = message(sequence as u64, size);
        let mut frame = Vec::new();
        client.encode(&mut frame, size, |out| out.extend_from_slice(&sent));
        stream.write_all(&frame).unwrap();

        let mut buf = Vec::new();
        let head = loop {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).unwrap();
            assert!(n > 0, "server closed at {size} B");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(head) = websocket::read_head(&buf, false).unwrap() {
                if buf.len() >= head.len + head.body as usize {
                    break head;
                }
            }
        };
        assert_eq!((head.body, head.mask), (size as u64, None), "{size} B");
        assert_eq!(&buf[head.len..], &sent[..], "{size} B");
    }
    drop(stream);
    assert_eq!(server.join().unwrap(), SIZES.len());
}
