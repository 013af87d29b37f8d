// swift-tools-version:6.0
// Benchmarks for the Swift core, as a separate package so the library's own Package.swift stays untouched.
// It depends on the repository root by path. Built by benchmarks/run:
//   swift build -c release --package-path benchmarks/swift --scratch-path <repo>/.build-bench
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its folder, and the checkout may be called anything.
let rootIdentity = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../..").standardizedFileURL.lastPathComponent.lowercased()

let package = Package(
    name: "appstoreserver-benchmarks",
    dependencies: [
        .package(path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "AppStoreBench",
            dependencies: [.product(name: "AppStoreServer", package: rootIdentity)]
        ),
    ]
)
