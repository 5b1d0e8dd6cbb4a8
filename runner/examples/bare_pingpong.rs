//! Reference point for the performance script: the barest tokio ping-pong (current-thread
//! runtime, one client, one server, no verification, no latency recording). The echo core
//! is judged against it and against `echomark-runner calibrate`.
//!
//! Usage: `cargo run --release -p echomark-runner --example bare_pingpong -- [PAYLOAD] [SECONDS]`

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

async fn tcp(payload: usize, duration: Duration) -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = vec![0u8; payload];
        while s.read_exact(&mut buf).await.is_ok() {
            if s.write_all(&buf).await.is_err() {
                break;
            }
        }
    });
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.set_nodelay(true).unwrap();
    let msg = vec![7u8; payload];
    let mut buf = vec![0u8; payload];
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < duration {
        c.write_all(&msg).await.unwrap();
        c.read_exact(&mut buf).await.unwrap();
        n += 1;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    drop(c);
    let _ = server.await;
    rate
}

async fn udp(payload: usize, duration: Duration) -> f64 {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = server.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        loop {
            let (n, peer) = server.recv_from(&mut buf).await.unwrap();
            if n == 1 {
                break;
            }
            server.send_to(&buf[..n], peer).await.unwrap();
        }
    });
    let c = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    c.connect(addr).await.unwrap();
    let msg = vec![7u8; payload];
    let mut buf = vec![0u8; 65_536];
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < duration {
        c.send(&msg).await.unwrap();
        c.recv(&mut buf).await.unwrap();
        n += 1;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    c.send(&[0]).await.unwrap();
    let _ = task.await;
    rate
}

fn main() {
    let mut args = std::env::args().skip(1);
    let payload: usize = args.next().map_or(1024, |a| a.parse().expect("payload"));
    let seconds: f64 = args.next().map_or(1.0, |a| a.parse().expect("seconds"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let d = Duration::from_secs_f64(seconds);
    let tcp = rt.block_on(tcp(payload, d));
    let udp = rt.block_on(udp(payload, d));
    println!("{{\"payload_bytes\":{payload},\"tcp\":{{\"roundtrips_per_second\":{tcp}}},\"udp\":{{\"roundtrips_per_second\":{udp}}}}}");
}
