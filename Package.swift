// swift-tools-version:6.0
import PackageDescription

// appstoreserver: one verified implementation of Apple's App Store server toolkit.
// - AppStoreServer: the Swift core (FoundationEssentials + system libcrypto), for Swift consumers; sans-I/O.
// - AppStoreServerC: the @c exports of include/appstoreserver.h, a target (tested here) but no product: the C
//   libraries are built by CMake only, which exports just appstore_* (exports.map) and makes both flavours.
// - AppStoreServerHTTP: the default Swift HTTP transport (AsyncHTTPClient) for the App Store Server API client.
//   Only this target depends on an HTTP stack; the core and the C library never link one.
let package = Package(
    name: "appstoreserver",
    products: [
        .library(name: "AppStoreServer", targets: ["AppStoreServer"]),
        .library(name: "AppStoreServerHTTP", targets: ["AppStoreServerHTTP"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "AppStoreServer", dependencies: ["COpenSSL"]),
        .target(name: "AppStoreServerC", dependencies: ["AppStoreServer"]),
        .target(
            name: "AppStoreServerHTTP",
            dependencies: ["AppStoreServer", .product(name: "AsyncHTTPClient", package: "async-http-client")]
        ),
        .testTarget(
            name: "AppStoreServerTests",
            dependencies: ["AppStoreServer", "AppStoreServerC", "AppStoreServerHTTP", "COpenSSL"]
        ),
    ]
)
