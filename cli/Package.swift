// swift-tools-version:6.1
// The `appstoreserver` command-line tool: its own package, so that swift-argument-parser and the tool's HTTP client
// never reach a package that depends on the library. Build it with cli/build (release, static Swift runtime,
// static libssl/libcrypto, linked against glibc 2.28's symbol set); scripts/build-and-demo does.
// No Foundation (FoundationEssentials only: no ICU data) and no SwiftNIO/BoringSSL: the HTTP client is CLIHTTP,
// a small C target over OpenSSL's libssl; `serve`'s server is CLIServe, another small C target.
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its folder, and the checkout may be called anything.
let rootIdentity = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("..").standardizedFileURL.lastPathComponent.lowercased()

let package = Package(
    name: "appstoreserver-cli",
    products: [
        .executable(name: "appstoreserver", targets: ["AppStoreServerCLI"]),
    ],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .executableTarget(
            name: "AppStoreServerCLI",
            dependencies: [
                .product(name: "AppStoreServer", package: rootIdentity),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                "CLIHTTP",
                "CLIServe",
            ]
        ),
        // Blocking HTTP/1.1 over sockets, TLS with OpenSSL's libssl (include/cli_http.h).
        .target(
            name: "CLIHTTP",
            cSettings: [.unsafeFlags(["-fvisibility=hidden", "-Wall", "-Wextra"])],
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]
        ),
        // `appstoreserver serve`'s HTTP/1.1 server: sockets and a thread per connection up to a cap, strict
        // parsing, hard limits, no TLS (a reverse proxy terminates it) (include/cli_serve.h, docs/serve.md).
        .target(
            name: "CLIServe",
            cSettings: [.unsafeFlags(["-fvisibility=hidden", "-Wall", "-Wextra"])]
        ),
    ]
)
