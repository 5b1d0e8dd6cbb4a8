//! `serve --protocol quic*` against clients that open streams the echo protocol never reads
//! and fill them, and against more connections than it takes (#53): a stream the protocol
//! does not use is refused (the client cannot open it), what one connection may make the
//! server hold is bounded, and connections past the cap are refused, so the server's memory
//! stays small however the client behaves. The hostile client is quinn, in this test.
use crate::common::*;
use bytes::Bytes;
use echomark_runner::traffic::quic::target_client_config;
use echomark_runner::traffic::tls::{TlsClient, TlsTrust};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Streams the hostile client tries to open besides the echo's, of each kind, and what it
/// writes on each (quinn's default stream window is 1,250,000 B).
const EXTRA: usize = 99;
const FILL: usize = 1_240_000;
/// Connections of the hostile client.
const CONNECTIONS: usize = 3;
/// How long an open waits for the server's stream credit before it counts as refused: an
/// open with credit completes without a round trip.
const OPEN_WAIT: Duration = Duration::from_secs(2);
/// What the hostile connections may add to the server's resident memory: quinn's defaults
/// let them add about 250 MB each (99 bidirectional and 100 unidirectional streams of
/// 1.24 MB).
const BOUND_KIB: u64 = 96 * 1024;

/// The resident memory of process `pid`, KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A connection to `serve` at `address`, trusting the certificate in `ca` (the endpoint
/// comes with it: it must outlive the connection).
async fn connect(
    address: &str,
    ca: &Path,
) -> Result<(quinn::Endpoint, quinn::Connection), quinn::ConnectionError> {
    let tls = TlsClient::for_target(&TlsTrust::Ca(ca.to_path_buf()), "localhost").unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(target_client_config(&tls, None).unwrap());
    let server: SocketAddr = address.parse().unwrap();
    let connection = endpoint.connect(server, "localhost").unwrap().await?;
    Ok((endpoint, connection))
}

/// The `quic` echo stream, kept open: the server closes the connection when it ends.
type EchoStream = Option<(quinn::SendStream, quinn::RecvStream)>;

/// One echo the way `protocol` carries it: the server is serving this connection.
async fn echo(connection: &quinn::Connection, protocol: &str) -> EchoStream {
    let message = Bytes::from(vec![b'q'; 64]);
    let mut kept = None;
    let echoed = match protocol {
        "quic" => {
            // TCP's length prefix: one byte below 254.
            let (mut send, mut recv) = connection.open_bi().await.unwrap();
            send.write_all(&[64]).await.unwrap();
            send.write_all(&message).await.unwrap();
            let mut back = vec![0u8; 65];
            recv.read_exact(&mut back).await.unwrap();
            kept = Some((send, recv));
            Bytes::from(back.split_off(1))
        }
        "quic-streams" => {
            let (mut send, mut recv) = connection.open_bi().await.unwrap();
            send.write_all(&message).await.unwrap();
            send.finish().unwrap();
            Bytes::from(recv.read_to_end(1 << 16).await.unwrap())
        }
        _ => {
            connection.send_datagram(message.clone()).unwrap();
            connection.read_datagram().await.unwrap()
        }
    };
    assert_eq!(echoed, message, "{protocol}");
    kept
}

/// Opens up to [`EXTRA`] streams of one kind, each filled with [`FILL`] bytes by a task of
/// `writers`, until an open is refused; how many opened.
async fn fill_streams<F>(open: impl Fn() -> F, writers: &mut JoinSet<()>) -> usize
where
    F: std::future::Future<Output = Result<quinn::SendStream, quinn::ConnectionError>>,
{
    let data = Bytes::from(vec![b'x'; FILL]);
    for opened in 0..EXTRA {
        let Ok(Ok(mut send)) = tokio::time::timeout(OPEN_WAIT, open()).await else {
            return opened;
        };
        let mut chunks = [data.clone()];
        writers.spawn(async move {
            let _ = send.write_all_chunks(&mut chunks).await;
        });
    }
    EXTRA
}

/// What the hostile client did on one connection, and its echo stream.
struct Hostile {
    bidi: usize,
    uni: usize,
    _echo: EchoStream,
}

/// Echoes once, then opens and fills every extra stream the server lets it, both kinds at
/// once; what it opened, and the writers still writing.
async fn hostile(connection: quinn::Connection, protocol: String) -> (Hostile, JoinSet<()>) {
    let echo = echo(&connection, &protocol).await;
    let c = &connection;
    let (mut bidi_writers, mut uni_writers) = (JoinSet::new(), JoinSet::new());
    let (bidi, uni) = tokio::join!(
        fill_streams(
            move || async move { c.open_bi().await.map(|(send, _)| send) },
            &mut bidi_writers,
        ),
        fill_streams(move || c.open_uni(), &mut uni_writers),
    );
    bidi_writers.spawn(async move { while uni_writers.join_next().await.is_some() {} });
    let did = Hostile {
        bidi,
        uni,
        _echo: echo,
    };
    (did, bidi_writers)
}

#[test]
fn extra_streams_are_refused_and_unread_data_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    // The extra bidirectional streams each protocol lets a client open: `quic-streams`
    // takes a stream per message, up to a window of 1,024 in flight.
    for (protocol, extra_bidi) in [("quic", 0), ("quic-streams", EXTRA), ("quic-datagram", 0)] {
        let (server, _) = serve_protocol(dir.path(), protocol);
        let ca = dir.path().join(format!("{protocol}.pem"));
        let pid = server.child.id();
        let before = rss_kib(pid);
        let mut peak = before;
        let mut opened = Vec::new();
        rt.block_on(async {
            let mut clients = JoinSet::new();
            let mut held = Vec::new();
            for _ in 0..CONNECTIONS {
                let (endpoint, connection) = connect(&server.address, &ca).await.unwrap();
                held.push((endpoint, connection.clone()));
                clients.spawn(hostile(connection, protocol.to_string()));
            }
            let (mut writers, mut hostiles) = (JoinSet::new(), Vec::new());
            while let Some(done) = clients.join_next().await {
                let (did, mut theirs) = done.unwrap();
                hostiles.push(did);
                writers.spawn(async move { while theirs.join_next().await.is_some() {} });
            }
            // Until every write has gone as far as the server lets it (or a generous
            // deadline), the server's memory is watched.
            let deadline = Instant::now() + Duration::from_secs(30);
            while !writers.is_empty() && Instant::now() < deadline {
                peak = peak.max(rss_kib(pid));
                let _ = tokio::time::timeout(Duration::from_millis(50), writers.join_next()).await;
            }
            peak = peak.max(rss_kib(pid));
            // The server still echoes on a fresh connection.
            let (_endpoint, fresh) = connect(&server.address, &ca).await.unwrap();
            echo(&fresh, protocol).await;
            opened = hostiles.into_iter().map(|h| (h.bidi, h.uni)).collect();
            for (_, connection) in &held {
                connection.close(0u32.into(), b"done");
            }
        });
        assert!(
            peak < before + BOUND_KIB,
            "{protocol}: the server grew from {before} KiB to {peak} KiB"
        );
        for (bidi, uni) in opened {
            assert_eq!(bidi, extra_bidi, "{protocol}: extra bidirectional streams");
            assert_eq!(uni, 0, "{protocol}: unidirectional streams");
        }
        server.stop();
    }
}

#[test]
fn quic_streams_takes_a_window_of_1024_streams_and_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = serve_protocol(dir.path(), "quic-streams");
    let ca = dir.path().join("quic-streams.pem");
    runtime().block_on(async {
        let (_endpoint, connection) = connect(&server.address, &ca).await.unwrap();
        // Opening a stream sends nothing until it is written: only the credit is used.
        let mut open = Vec::new();
        for _ in 0..1024 {
            let stream = tokio::time::timeout(OPEN_WAIT, connection.open_bi()).await;
            open.push(stream.expect("a stream within the window").unwrap());
        }
        let past = tokio::time::timeout(OPEN_WAIT, connection.open_bi()).await;
        assert!(past.is_err(), "a 1,025th stream was opened");
    });
}

#[test]
fn connections_past_the_cap_are_refused_until_one_closes() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = serve_protocol_with(dir.path(), "quic", &["--quic-max-connections", "3"]);
    let ca = dir.path().join("quic.pem");
    runtime().block_on(async {
        let mut open = Vec::new();
        for _ in 0..3 {
            let (endpoint, connection) = connect(&server.address, &ca).await.unwrap();
            let stream = echo(&connection, "quic").await;
            open.push((endpoint, connection, stream));
        }
        let refused = connect(&server.address, &ca).await;
        assert!(
            matches!(refused, Err(quinn::ConnectionError::ConnectionClosed(_))),
            "a fourth connection: {:?}",
            refused.map(|_| ())
        );
        // Once one closes, its place is free again.
        let (_, first, _) = open.remove(0);
        first.close(0u32.into(), b"done");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match connect(&server.address, &ca).await {
                Ok((_endpoint, connection)) => {
                    echo(&connection, "quic").await;
                    break;
                }
                Err(e) => assert!(Instant::now() < deadline, "never taken again: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let report = server.stop();
    assert!(
        report["refused_connections"].as_u64() >= Some(1),
        "{report}"
    );
}
