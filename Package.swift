// swift-tools-version:6.0
import PackageDescription

// appstoreserver: one verified implementation of Apple's App Store server toolkit.
// - AppStoreServer: the Swift core (FoundationEssentials + system libcrypto), for Swift consumers.
// - appstoreserver: the C library (libappstoreserver.so), only the @c exports of include/appstoreserver.h.
let package = Package(
    name: "appstoreserver",
    products: [
        .library(name: "AppStoreServer", targets: ["AppStoreServer"]),
        .library(name: "appstoreserver", type: .dynamic, targets: ["AppStoreServerC"]),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "AppStoreServer", dependencies: ["COpenSSL"]),
        .target(name: "AppStoreServerC", dependencies: ["AppStoreServer"]),
        .testTarget(
            name: "AppStoreServerTests",
            dependencies: ["AppStoreServer", "AppStoreServerC", "COpenSSL"]
        ),
    ]
)
