import Foundation
import Testing
import AppStoreServer
@testable import AppStoreServerC

/// The C ABI's environment codes are typed in the header (APPSTORE_ENVIRONMENT_*) and mapped in
/// Sources/AppStoreServerC/Support.swift: checked here against the ABI description generated from the header, both
/// ways, so the two cannot drift.
@Suite struct EnvironmentCodeTests {
    @Test func theExportsMapEveryHeaderCodeAndNoOther() throws {
        let url = Paths.repo.appendingPathComponent("include/appstoreserver.abi.json")
        let abi = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let group = try #require((abi["constants"] as? [String: Any])?["environment"] as? [[String: Any]])
        let names: [String: AppStoreEnvironment] = ["APPSTORE_ENVIRONMENT_SANDBOX": .sandbox,
                                                    "APPSTORE_ENVIRONMENT_PRODUCTION": .production,
                                                    "APPSTORE_ENVIRONMENT_XCODE": .xcode,
                                                    "APPSTORE_ENVIRONMENT_LOCAL_TESTING": .localTesting]
        #expect(Set(group.compactMap { $0["name"] as? String }) == Set(names.keys))
        for constant in group {
            let name = try #require(constant["name"] as? String), code = try #require(constant["value"] as? Int)
            let environment = try cEnvironment(Int32(code))
            #expect(environment == names[name], "\(name) = \(code)")
            #expect(cEnvironmentCode(environment) == Int32(code), "\(name)")
        }
        for bad in [Int32(0), 5, -1, 99] { #expect(throws: CFailure.self) { try cEnvironment(bad) } }
    }
}
