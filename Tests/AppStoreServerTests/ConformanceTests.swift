import Foundation
import Testing
import AppStoreServer

@Suite struct ConformanceTests {
    /// Every verify case of ../shared/conformance/manifest.json (real Apple-signed data).
    @Test func sharedConformanceManifest() throws {
        guard Paths.conformanceAvailable else {
            print("conformance: SKIPPED — \(Paths.conformance.path) not found; real Apple data was NOT checked")
            print("conformance: 0 passed, 0 failed, 85 skipped")
            return
        }
        var runner = try ManifestRunner(manifest: Paths.conformance.appendingPathComponent("manifest.json"))
        runner.run()
        for f in runner.failures { print("conformance FAIL \(f)") }
        print("conformance: \(runner.passed) passed, \(runner.failed) failed, \(runner.skipped) skipped")
        #expect(runner.cases.count == 85)
        #expect(runner.failed == 0)
        #expect(runner.skipped == 0)
    }

    /// Every case of our own generated PKI fixtures (Tests/support/testpki.py), with exact status and reason.
    @Test func ownFixtureManifest() throws {
        var runner = try ManifestRunner(manifest: Paths.testPKI.appendingPathComponent("manifest.json"))
        runner.run()
        for f in runner.failures { print("testpki FAIL \(f)") }
        print("testpki: \(runner.passed) passed, \(runner.failed) failed, \(runner.skipped) skipped")
        #expect(runner.cases.count == 169)
        #expect(runner.failed == 0)
        #expect(runner.skipped == 0)
    }
}
