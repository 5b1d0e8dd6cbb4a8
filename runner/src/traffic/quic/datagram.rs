//! `quic-datagram`: RFC 9221 unreliable datagrams as the UDP client's socket, so loss,
//! order and verification are judged exactly as for `udp`.

use std::future::Future;

use bytes::Bytes;
use quinn::{ConnectionError, SendDatagramError};

use super::QuicClient;
use crate::traffic::datagram::DatagramSocket;

impl DatagramSocket for QuicClient {
    fn send(&self, message: &[u8]) -> impl Future<Output = std::io::Result<usize>> + Send {
        let len = message.len();
        let datagram = Bytes::copy_from_slice(message);
        async move {
            match self.connection.send_datagram_wait(datagram).await {
                Ok(()) => {
                    self.handed_datagram();
                    Ok(len)
                }
                Err(SendDatagramError::ConnectionLost(e)) => Err(lost(e)),
                Err(e) => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)),
            }
        }
    }

    async fn recv(&self, into: &mut [u8]) -> std::io::Result<usize> {
        let datagram = self.connection.read_datagram().await.map_err(lost)?;
        // A datagram longer than the buffer is cut, as a UDP socket cuts it: the
        // verification then sees a wrong length.
        let len = datagram.len().min(into.len());
        into[..len].copy_from_slice(&datagram[..len]);
        Ok(len)
    }
}

/// A closed connection reads as a peer that is gone ([`crate::traffic::datagram::is_disconnect`]).
fn lost(e: ConnectionError) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionReset, e)
}
