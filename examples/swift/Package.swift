// swift-tools-version:6.1
// The Swift examples: three small programs over the AppStoreServer library, which this package uses by path (in
// your own package: `.package(url: "https://github.com/...", from: "0.3.0")`, see the README's Install (Swift)).
//
//   swift build --package-path examples/swift
//   swift run --package-path examples/swift verify-notification notification.json com.example.app
import PackageDescription

let appStoreServer: Target.Dependency = .product(name: "AppStoreServer", package: "appstoreserver")

let package = Package(
    name: "appstoreserver-examples",
    dependencies: [.package(name: "appstoreserver", path: "../..")],
    targets: [
        .executableTarget(name: "verify-notification", dependencies: [appStoreServer]),
        .executableTarget(name: "refund-history", dependencies: [appStoreServer]),
        .executableTarget(name: "offer-signature", dependencies: [appStoreServer]),
    ]
)
