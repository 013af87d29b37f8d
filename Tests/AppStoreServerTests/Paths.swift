import Foundation

/// Locations the tests read: the repository, the shared conformance data beside it, generated fixtures.
enum Paths {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let conformance = repo.deletingLastPathComponent().appendingPathComponent("shared/conformance")
    static var conformanceAvailable: Bool {
        FileManager.default.fileExists(atPath: conformance.appendingPathComponent("manifest.json").path)
    }

    /// Runs Tests/support/testpki.py once per process and returns its output folder.
    static let testPKI: URL = {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("appstore-testpki-\(getpid())")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", repo.appendingPathComponent("Tests/support/testpki.py").path, dir.path]
        do { try p.run() } catch { fatalError("cannot run testpki.py: \(error)") }
        p.waitUntilExit()
        precondition(p.terminationStatus == 0, "Tests/support/testpki.py failed (needs python3 + cryptography)")
        return dir
    }()

    /// Runs Tests/support/receipts.py once per process and returns its output folder (own-CA app receipts).
    static let receiptFixtures: URL = {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("appstore-receipts-\(getpid())")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", repo.appendingPathComponent("Tests/support/receipts.py").path, dir.path]
        do { try p.run() } catch { fatalError("cannot run receipts.py: \(error)") }
        p.waitUntilExit()
        precondition(p.terminationStatus == 0, "Tests/support/receipts.py failed (needs python3 + cryptography)")
        return dir
    }()

    static func read(_ url: URL) throws -> Data { try Data(contentsOf: url) }
    static func text(_ url: URL) throws -> String {
        String(decoding: try Data(contentsOf: url), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
