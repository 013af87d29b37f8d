// swift-tools-version:6.1
// The `appstoreserver` command-line tool: its own package, so that swift-argument-parser and the HTTP stack it
// needs never reach a package that depends on the library. Built by scripts/build-and-demo and by CMake
// (-DAPPSTORE_TOOL=ON):
//   swift build -c release --package-path cli --static-swift-stdlib
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
        .package(path: "..", traits: ["HTTP"]),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .executableTarget(
            name: "AppStoreServerCLI",
            dependencies: [
                .product(name: "AppStoreServer", package: rootIdentity),
                .product(name: "AppStoreServerHTTP", package: rootIdentity),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ]
)
