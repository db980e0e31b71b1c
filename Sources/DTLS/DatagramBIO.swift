import COpenSSL

/// The bridge between OpenSSL and Chorus's sans-IO DTLS: a custom BIO that keeps one datagram
/// per read and per write. `BIO_s_mem()` would merge a whole flight into one blob, which breaks
/// DTLS over UDP, and a socket BIO would put I/O inside the protocol engine.
final class DatagramQueues {
    /// Datagrams from the peer, not yet read by OpenSSL.
    var incoming: [[UInt8]] = []
    /// Records OpenSSL wrote, one datagram each, waiting for the transport to send them.
    var outgoing: [[UInt8]] = []
    let mtu: Int

    init(mtu: Int) {
        self.mtu = mtu
    }
}

enum DatagramBIO {
    /// One method table for the process; BIO instances carry their queues in BIO_get_data.
    /// `nonisolated(unsafe)`: an `OpaquePointer` (not Sendable), built once by the lazy initializer, read-only after.
    nonisolated(unsafe) static let method: OpaquePointer? = {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "chorus-datagram") else {
            return nil
        }
        BIO_meth_set_write(method) { bio, data, length in
            guard let bio, let data, length >= 0, let queues = DatagramBIO.queues(bio) else { return -1 }
            queues.outgoing.append(Array(UnsafeRawBufferPointer(start: data, count: Int(length))))
            return length
        }
        BIO_meth_set_read(method) { bio, out, capacity in
            guard let bio, let out, capacity > 0, let queues = DatagramBIO.queues(bio) else { return -1 }
            chorus_bio_clear_retry_flags(bio)
            guard !queues.incoming.isEmpty else {
                chorus_bio_set_retry_read(bio)
                return -1
            }
            let datagram = queues.incoming.removeFirst()
            // A datagram longer than OpenSSL's buffer is truncated, as a UDP socket would.
            let count = min(Int(capacity), datagram.count)
            datagram.withUnsafeBytes { bytes in
                // An empty datagram has no base address; there is nothing to copy then.
                guard let source = bytes.baseAddress, count > 0 else { return }
                UnsafeMutableRawPointer(out).copyMemory(from: source, byteCount: count)
            }
            return Int32(count)
        }
        BIO_meth_set_ctrl(method) { bio, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH: return 1
            case BIO_CTRL_DGRAM_QUERY_MTU, BIO_CTRL_DGRAM_GET_FALLBACK_MTU:
                return bio.flatMap { DatagramBIO.queues($0) }.map { $0.mtu } ?? 1200
            case BIO_CTRL_PENDING, BIO_CTRL_WPENDING: return 0
            default: return 0
            }
        }
        BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        BIO_meth_set_destroy(method) { bio in
            guard let bio else { return 0 }
            if let raw = BIO_get_data(bio) {
                Unmanaged<DatagramQueues>.fromOpaque(raw).release()
                BIO_set_data(bio, nil)
            }
            return 1
        }
        return method
    }()

    /// A new BIO that retains `queues` until OpenSSL frees the BIO.
    static func make(_ queues: DatagramQueues) -> OpaquePointer? {
        guard let method, let bio = BIO_new(method) else { return nil }
        BIO_set_data(bio, Unmanaged.passRetained(queues).toOpaque())
        return bio
    }

    static func queues(_ bio: OpaquePointer) -> DatagramQueues? {
        guard let raw = BIO_get_data(bio) else { return nil }
        return Unmanaged<DatagramQueues>.fromOpaque(raw).takeUnretainedValue()
    }
}
