import Foundation
import Testing
@testable import AppStoreServer

/// What an error prints ("\(error)", `description`) says the status, the reason and exactly what failed, whichever
/// layer it comes from; `message` stays the bare text.
@Suite struct ErrorTextTests {
    @Test func everyFailureSaysItsReasonAndMessage() throws {
        var failures: [any AppStoreServerFailure] = []
        do { _ = try SigningKey(pem: "not a key") } catch { failures.append(error) }
        failures.append(AppStoreServerAPIError(kind: .apiError, message: "getTransactionInfo: HTTP 404, error 4040010",
                                               httpStatusCode: 404, rawApiError: 4040010))
        failures.append(SigningError(.invalidArgument, "productId must not be empty"))
        do {
            _ = try SignedDataVerifier(rootCertificates: [Array("junk".utf8)], bundleId: "b", appAppleId: nil,
                                       environment: .sandbox, enableOnlineChecks: false)
        } catch { failures.append(error) }
        #expect(failures.count == 4)
        for f in failures {
            let text = "\(f)"
            #expect(text.contains(f.reason.name) && text.hasSuffix(f.message), "\(text)")
        }
    }
}
