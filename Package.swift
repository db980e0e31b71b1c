// swift-tools-version:6.1
// Chorus — a conference-room server: mixed audio and forwarded video in one room, one UDP port.
// Targets are flat and ordered along the pipeline; see docs/ARCHITECTURE.md for the graph.
import Foundation
import PackageDescription

// Release builds of the server skip Swift's run-time exclusivity checks (`swift_beginAccess` on
// each access to a class's stored property, a global or a captured variable that the compiler
// cannot prove safe): callgrind put them at 14 % of the instructions of a 3,000-participant
// room's tick (`TickProfile`); without them a tick of 300 takes 6 % fewer. The standard library
// is built the same way. The checks stay on where bugs are looked for: debug builds, which run
// every unit and interop test of `make test`, and the fuzzers (CHORUS_FUZZ), which are release
// builds. The compile-time exclusivity checks apply everywhere.
let exclusivityChecked = ProcessInfo.processInfo.environment["CHORUS_FUZZ"] != nil
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
] + (exclusivityChecked ? [] : [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))])

let package = Package(
    name: "Chorus",
    // macOS 15: the Synchronization module (Atomic, Mutex) of the runtime checks; Linux is unaffected.
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "chorus", targets: ["chorus"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        // FullFoundation only: the ConfigurationSupport trait would build swift-configuration for nothing.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0", traits: ["FullFoundation"]),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        // PostgreSQL storage (`--db postgres://…`): postgres-nio's pooled client. It brings
        // swift-nio-ssl and swift-crypto (SCRAM-SHA-256) with it; NIOSSL is named here only for
        // the TLS settings of `sslmode`.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.25.0"),
        // Webhook posts (the Webhooks target). Already resolved in the graph (Hummingbird's test
        // support uses it); its own modules cost about a minute of a clean build (docs/ARCHITECTURE.md).
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.21.0"),
    ],
    targets: [
        // System libraries (edge of the C world). The shim header wraps macros and variadics.
        // sendmmsg(2) for the media port's writes (a GNU extension Swift's Glibc does not expose).
        .target(name: "CUDP"),
        // AES-128 on AES-NI under OpenSSL's GCM mode: SRTP's AEAD path without EVP's per-packet
        // parameter lookups (see its header).
        // DWARF 4: Debian 12's valgrind cannot read clang's default DWARF 5, and callgrind
        // counts the instructions of every benchmark that links this.
        .target(name: "CAESGCM", cSettings: [.unsafeFlags(["-gdwarf-4"])], linkerSettings: [.linkedLibrary("crypto")]),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),

        .systemLibrary(
            name: "CSRTP", pkgConfig: "libsrtp2",
            providers: [.apt(["libsrtp2-dev"])]
        ),

        .systemLibrary(
            name: "COpus", pkgConfig: "opus",
            providers: [.apt(["libopus-dev"])]
        ),

        // libvpx: the load generator's VP8 camera (encoded once at start).
        .systemLibrary(
            name: "CVPX", pkgConfig: "vpx",
            providers: [.apt(["libvpx-dev"])]
        ),

        // Shared vocabulary: identifiers and their validation rules.
        .target(name: "ChorusCore", swiftSettings: strict),

        // Credentials: registration signatures, signed application requests, access tokens.
        .target(name: "Auth", dependencies: ["ChorusCore", "COpenSSL"], swiftSettings: strict),

        // RFC 8489 STUN messages, pure parse/serialize (sans-IO).
        .target(name: "STUN", dependencies: ["ChorusCore", "COpenSSL"], swiftSettings: strict),
        // ICE-lite server side and the client role for tests and load (sans-IO).
        .target(name: "ICELite", dependencies: ["STUN", "ChorusCore"], swiftSettings: strict),
        // ICE-TCP (RFC 6544): RFC 4571 framing of media over TCP (sans-IO); the listener is in MediaSocket.
        .target(name: "ICETCP", dependencies: ["ChorusCore"], swiftSettings: strict),

        // SDP offer/answer (RFC 8866, JSEP): offer analysis against Chorus's shape, answer builder.
        .target(name: "SDP", dependencies: ["ChorusCore"], swiftSettings: strict),

        // RTP (RFC 3550, RFC 8285, VP8 descriptor RFC 7741) and RTCP messages, pure parse/serialize.
        .target(name: "RTP", dependencies: ["ChorusCore"], swiftSettings: strict),
        .target(name: "RTCP", dependencies: ["ChorusCore"], swiftSettings: strict),

        // SRTP/SRTCP behind a small seam: OpenSSL EVP in the media path, libsrtp2 as the reference.
        .target(name: "SRTP", dependencies: ["ChorusCore", "CSRTP", "COpenSSL", "CAESGCM"], swiftSettings: strict),

        // DTLS 1.2 handshake with OpenSSL over memory (one datagram per record flight), sans-IO.
        .target(name: "DTLS", dependencies: ["ChorusCore", "COpenSSL", "SRTP"], swiftSettings: strict),

        // One participant's connection: classify, ICE, DTLS, SRTP, RTCP reports; and the client
        // side of a connection (`ClientTransport`), which the tests and the load generator share.
        .target(
            name: "PeerTransport",
            dependencies: ["ChorusCore", "STUN", "ICELite", "DTLS", "SRTP", "RTP", "RTCP", "CongestionControl", "AudioMixer"],
            swiftSettings: strict
        ),

        // Send-side bandwidth estimation (draft-ietf-rmcat-gcc-02 with libwebrtc's parameters), sans-IO:
        // the packets a participant was sent and its transport-cc feedback in, a target bitrate and
        // probe requests out.
        .target(name: "CongestionControl", dependencies: ["ChorusCore", "RTCP"], swiftSettings: strict),

        // Audio mixer (MCU), sans-IO: Opus behind a codec seam, adaptive jitter buffer with FEC/PLC,
        // speaker selection with hysteresis, mixing with a soft limiter, outbound RTP per recipient.
        .target(name: "AudioMixer", dependencies: ["ChorusCore", "COpus"], swiftSettings: strict),
        // Video slots: rewriting publishers' RTP into each subscriber's slot streams, packet
        // cache for NACKs, keyframe requests, slot choice. Sans-IO, owned by the room.
        .target(name: "VideoForwarder", dependencies: ["ChorusCore", "RTP"], swiftSettings: strict),

        // `chorus load`: simulated participants over real connections (an edge target: sockets,
        // HTTP, its own event loop), each over PeerTransport's `ClientTransport`.
        .target(
            name: "LoadGenerator",
            dependencies: [
                "ChorusCore", "Auth", "ICELite", "DTLS", "AudioMixer", "RTP", "RTCP", "CVPX", "ICETCP",
                "PeerTransport", "CUDP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),

        // Room actors on their own serial queues, and the registry that owns them.
        .target(
            name: "Rooms",
            dependencies: [
                "ChorusCore", "PeerTransport", "SDP", "DTLS", "ICELite", "RTCP", "RTP", "SRTP", "AudioMixer", "VideoForwarder",
                "CongestionControl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),

        // The one UDP media port: NIO datagram channel, vector reads, O(1) demux (an edge target).
        .target(
            name: "MediaSocket",
            dependencies: [
                "ChorusCore", "STUN", "CUDP", "ICETCP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),

        // The storage protocol (ChorusStore), its records, the schema as one description, the
        // `--db` location, and the SQLite implementation through GRDB (an edge target).
        .target(
            name: "Storage",
            dependencies: ["ChorusCore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        // The PostgreSQL implementation of ChorusStore over postgres-nio's pool (an edge target).
        .target(
            name: "PostgresStorage",
            dependencies: [
                "Storage", "ChorusCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // The cluster's node (an edge target over the store): its identity, the heartbeat that
        // renews its room leases, the sweep of lost nodes and the calls they left behind. The API
        // asks it who holds a room; Rooms never knows of it. No HTTP.
        .target(
            name: "Cluster",
            dependencies: [
                "ChorusCore", "Rooms", "Storage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),

        // Webhook delivery (an edge target): the outbox dispatcher, Standard Webhooks signatures,
        // endpoint URLs, the outbound address policy (SSRF; RTP forwards use it too), and the
        // posts, over AsyncHTTPClient pinned to the address the policy checked.
        .target(
            name: "Webhooks",
            dependencies: [
                "Auth", "Storage",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),

        // REST control plane over Hummingbird (an edge target).
        .target(
            name: "ControlAPI",
            dependencies: [
                "ChorusCore", "Auth", "ICELite", "Rooms", "SDP", "SRTP", "Storage", "Cluster", "Webhooks",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // HTTPParserError: framing errors the decoder raises mid-body become 400s.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Resources/openapi.yaml"), .copy("Resources/web")],
            swiftSettings: strict
        ),

        // What several test targets share: seeded generators, test signals, the fixtures, a
        // client peer over PeerTransport's `ClientTransport` (the load generator's too), and a
        // throwaway PostgreSQL server (Debian's binaries, started and removed by the tests).
        .target(
            name: "ChorusTestSupport",
            dependencies: ["ChorusCore", "STUN", "ICELite", "DTLS", "SRTP", "RTP", "RTCP", "CongestionControl", "AudioMixer",
                           "PeerTransport"],
            swiftSettings: strict
        ),

        // Fuzz entry points shared by the libFuzzer harnesses (Fuzz/, `make fuzz`) and FuzzReplayTests.
        .target(
            name: "FuzzEntryPoints",
            dependencies: [
                "ChorusCore", "STUN", "ICELite", "RTP", "RTCP", "SDP", "SRTP", "DTLS", "PeerTransport", "MediaSocket",
                "VideoForwarder", "Rooms", "ICETCP", "CongestionControl",
            ],
            swiftSettings: strict
        ),

        // `chorus serve`'s settings: its options and their CHORUS_* fallbacks made into a checked
        // ServeConfiguration, a pure value. A library of its own so that its tests can import it
        // (test targets cannot import an executable target reliably on Linux).
        .target(
            name: "ServeSettings",
            dependencies: [
                "AudioMixer", "Cluster", "MediaSocket", "Rooms", "SDP", "Storage",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // Composition root: the CLI, and `serve`'s wiring of services from a ServeConfiguration.
        .executableTarget(
            name: "chorus",
            dependencies: [
                "LoadGenerator", "ServeSettings", "Cluster", "Webhooks",
                "AudioMixer", "ChorusCore", "Auth", "Rooms", "SDP", "Storage", "PostgresStorage", "ControlAPI", "MediaSocket", "DTLS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: strict
        ),

        .testTarget(name: "ChorusCoreTests", dependencies: ["ChorusCore"]),
        .testTarget(name: "AuthTests", dependencies: ["Auth", "ChorusCore"]),
        .testTarget(name: "STUNTests", dependencies: ["STUN", "ChorusCore"]),
        .testTarget(name: "ICELiteTests", dependencies: ["ICELite", "STUN", "ChorusCore"]),
        .testTarget(name: "ICETCPTests", dependencies: ["ICETCP"]),
        .testTarget(
            name: "PeerTransportTests",
            dependencies: [
                "PeerTransport", "ChorusCore", "DTLS", "ICELite", "STUN", "SRTP", "RTP", "RTCP", "ChorusTestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "FuzzReplayTests", dependencies: ["FuzzEntryPoints"]),
        .testTarget(name: "AudioMixerCodecTests", dependencies: ["AudioMixer", "ChorusCore", "COpus", "ChorusTestSupport"]),
        .testTarget(name: "AudioMixerTests", dependencies: ["AudioMixer", "ChorusCore", "RTP", "ChorusTestSupport"]),
        .testTarget(name: "VideoForwarderTests", dependencies: ["VideoForwarder", "ChorusCore", "RTP"]),
        .testTarget(name: "LoadGeneratorTests",
                    dependencies: ["LoadGenerator", "RTP", "RTCP", "SRTP", "ICELite", "DTLS", "ChorusCore", "PeerTransport",
                                   "ChorusTestSupport"]),
        .testTarget(name: "SDPTests", dependencies: ["SDP", "ChorusCore", "ChorusTestSupport"]),
        .testTarget(name: "RTPTests", dependencies: ["RTP", "ChorusCore", "ChorusTestSupport"]),
        .testTarget(name: "RTCPTests", dependencies: ["RTCP", "ChorusCore", "ChorusTestSupport"]),
        .testTarget(name: "CongestionControlTests", dependencies: ["CongestionControl", "RTCP", "ChorusCore"]),
        .testTarget(name: "SRTPTests", dependencies: ["SRTP", "ChorusCore"]),
        .testTarget(name: "DTLSTests", dependencies: ["DTLS", "SRTP", "ChorusCore", "ChorusTestSupport"]),
        .testTarget(
            name: "RoomsTests",
            dependencies: [
                "Rooms", "ChorusCore", "DTLS", "ChorusTestSupport", "AudioMixer", "RTP", "RTCP", "PeerTransport",
                "CongestionControl", "VideoForwarder",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "StorageTests",
            dependencies: ["Storage", "PostgresStorage", "ChorusCore", "ChorusTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "MediaSocketTests",
            dependencies: ["MediaSocket", "ChorusCore", "ChorusTestSupport", "STUN", .product(name: "Logging", package: "swift-log"),
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]
        ),
        .testTarget(
            name: "ClusterTests",
            dependencies: ["Cluster", "Rooms", "Storage", .product(name: "Logging", package: "swift-log"),
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]
        ),
        .testTarget(
            name: "WebhooksTests",
            dependencies: ["Webhooks", "Storage", .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]
        ),
        .testTarget(
            name: "ServeSettingsTests",
            dependencies: ["ServeSettings", "Cluster", "MediaSocket", "Rooms", "Storage",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "ControlAPITests",
            dependencies: [
                "ControlAPI", "Storage", "Auth", "Rooms", "ChorusCore", "ChorusTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Benchmarks (ordo-one/benchmark, Benchmarks/) and the libFuzzer harnesses (Fuzz/<Name>/, one
// per parser family) are part of the one build that `make test` makes (`swift build
// --build-tests`): one build configuration for tests, benchmarks and the fuzzers' smoke runs, so
// CI compiles each module once, in one build graph, and nothing can rot unbuilt. (They were
// variants of the manifest behind environment variables: each variant re-resolved and re-planned
// the package, twelve `swift build`s in all.) `make bench` runs the benchmarks from a release
// build of its own (.build-bench); `make run` builds the `chorus` product alone.
package.dependencies.append(
    .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.0", traits: ["MallocInterposer"]))
package.targets.append(
    .executableTarget(
        name: "ControlPlane",
        dependencies: ["Auth", "ChorusCore", .product(name: "Benchmark", package: "benchmark")],
        path: "Benchmarks/ControlPlane",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]))
// A room core with connected client peers, shared by MediaPath, ForwardProfile and TickProfile
// (the same forward path and audio tick under callgrind).
package.targets.append(
    .target(
        name: "BenchmarkSupport",
        dependencies: ["AudioMixer", "ChorusCore", "ChorusTestSupport", "DTLS", "RTP", "Rooms",
                       .product(name: "Logging", package: "swift-log")],
        path: "Benchmarks/Support"))
package.targets.append(
    .executableTarget(
        name: "MediaPath",
        dependencies: ["AudioMixer", "ChorusCore", "RTP", "RTCP", "SRTP", "STUN", "VideoForwarder", "BenchmarkSupport",
                       .product(name: "Benchmark", package: "benchmark")],
        path: "Benchmarks/MediaPath",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]))
package.targets.append(
    .executableTarget(name: "ForwardProfile", dependencies: ["BenchmarkSupport"], path: "Benchmarks/ForwardProfile"))
package.targets.append(
    .executableTarget(name: "TickProfile", dependencies: ["BenchmarkSupport"], path: "Benchmarks/TickProfile"))

// The harnesses: libFuzzer supplies `main`. In the ordinary build only the harness module is
// instrumented (`-sanitize=fuzzer` on it alone): the other modules keep their compile commands,
// so the harnesses cost seconds, and `make test` runs each briefly (blind: no coverage of the
// parsers, no ASan) to prove it links, starts and survives random inputs; FuzzReplayTests
// replays every committed input in the Swift suite. CHORUS_FUZZ=1 (`make fuzz`, in .build-fuzz)
// is the real campaign's build: `--sanitize=fuzzer` and ASan on every module.
let fuzzCampaign = ProcessInfo.processInfo.environment["CHORUS_FUZZ"] != nil
let harnessOnly: [String] = fuzzCampaign ? [] : ["-sanitize=fuzzer"]
package.targets.append(.target(name: "FuzzDriver", path: "Fuzz/Driver"))
for name in ["FuzzSTUN", "FuzzRTP", "FuzzRTCP", "FuzzSDP", "FuzzDTLS", "FuzzDatagram", "FuzzTCPFraming"] {
    package.targets.append(
        .executableTarget(
            name: name, dependencies: ["FuzzEntryPoints", "FuzzDriver"], path: "Fuzz/\(name)",
            swiftSettings: [.unsafeFlags(["-parse-as-library"] + harnessOnly)],
            linkerSettings: [.unsafeFlags(harnessOnly)]))
}
