import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A failure of the throwaway PostgreSQL server's tooling, with what the tool printed.
public struct PostgresTestError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension PostgresTestServer {
    static var isRoot: Bool { getuid() == 0 }

    /// Runs one of PostgreSQL's server programs, as `nobody` when this process is root.
    static func runAsServerUser(_ program: String, _ arguments: [String]) throws {
        let path = binaries + "/" + program
        if isRoot {
            try run("/usr/sbin/runuser", ["-u", "nobody", "--", path] + arguments)
        } else {
            try run(path, arguments)
        }
    }

    /// Gives `paths` to `nobody` when this process is root (the server's user must own its data).
    static func handOver(_ paths: [URL]) throws {
        guard isRoot else { return }
        try run("/bin/chown", ["nobody:nogroup"] + paths.map(\.path))
    }

    /// Closes every descriptor above 2, then runs the command: Foundation's `Process` learns of
    /// a child's exit when a socket the child inherits closes, and the server that `pg_ctl start`
    /// leaves running would hold it (and any other test's) forever.
    static let closeDescriptors = #"for fd in /proc/self/fd/*; do fd=${fd##*/}; "#
        + #"if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi; done 2>/dev/null; exec "$@""#

    /// Runs `executable` to completion (through bash, which first closes inherited descriptors);
    /// its output, or an error with it when it fails. The output goes through a file, not a
    /// pipe, which the server left running could keep open too.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("chorus-pg-out-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: outputURL.path, contents: nil) else {
            throw PostgresTestError("cannot create \(outputURL.path)")
        }
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let output = try FileHandle(forWritingTo: outputURL)
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", closeDescriptors, "bash", executable] + arguments
        // The server's user may not be able to enter the test's working directory.
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let text = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0 else {
            throw PostgresTestError("\(executable) \(arguments.joined(separator: " ")) exited with "
                                    + "\(process.terminationStatus): \(text)")
        }
        return text
    }

    /// A TCP port on 127.0.0.1 that nothing listens on right now (bound to 0, then released).
    static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PostgresTestError("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw PostgresTestError("cannot bind a loopback port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
