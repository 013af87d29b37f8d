// swift-tools-version:6.1
import PackageDescription

// appstoreserver: one verified implementation of Apple's App Store server toolkit.
// - AppStoreServer: the Swift core (FoundationEssentials + system libcrypto), for Swift consumers; sans-I/O.
//   A package that depends on this one for AppStoreServer resolves and builds nothing else.
// - AppStoreServerHTTP: the default Swift HTTP transport (AsyncHTTPClient) for the API client and online checks.
//   It exists only with the package trait "HTTP" (`.package(url: …, from: …, traits: ["HTTP"])`): without the
//   trait AsyncHTTPClient is neither resolved nor built, and the module is empty.
// - AppStoreServerC: the @c exports of include/appstoreserver.h, a target (tested here) but no product: the C
//   libraries are built by CMake only, which exports just appstore_* (exports.map) and makes both flavours.
// The command-line tool is its own package (cli/), so its dependencies never reach library consumers either.
let package = Package(
    name: "appstoreserver",
    products: [
        .library(name: "AppStoreServer", targets: ["AppStoreServer"]),
        .library(name: "AppStoreServerHTTP", targets: ["AppStoreServerHTTP"]),
    ],
    traits: [
        .trait(name: "HTTP", description: "AppStoreServerHTTP: the AsyncHTTPClient transport for the API client and OCSP"),
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
        // The purchase ledger's embedded storage (Ledger.open("sqlite:...")); CMake links it statically into the
        // self-contained C library.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(name: "AppStoreServer", dependencies: ["COpenSSL", "CSQLite"]),
        .target(name: "AppStoreServerC", dependencies: ["AppStoreServer"]),
        .target(
            name: "AppStoreServerHTTP",
            dependencies: [
                "AppStoreServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["HTTP"])),
            ]
        ),
        // The tests exercise the HTTP transport too: `swift test --traits HTTP` (scripts/test-all does).
        .testTarget(
            name: "AppStoreServerTests",
            dependencies: ["AppStoreServer", "AppStoreServerC", "AppStoreServerHTTP", "COpenSSL"]
        ),
    ]
)
