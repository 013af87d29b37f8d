import Foundation
import Testing
import AppStoreServer
import AppStoreServerHTTP

/// Online checks out of the box: with AppStoreServerHTTP imported, Apple's initializer shape needs no transport.
/// Nested in OCSPTests so it inherits `.serialized`: it uses the same responders, and OCSPTests counts what arrives
/// there (run side by side, these requests landed in another test's count).
extension OCSPTests { @Suite struct DefaultTransport {
    @Test func onlineChecksWorkWithoutATransportArgument() throws {
        let h = try OCSPHarness.get()
        // A refused connection costs AsyncHTTPClient the whole timeout (its pool retries connecting): keep it short.
        let v = try SignedDataVerifier(rootCertificates: [h.root], bundleId: h.bundleId, appAppleId: nil,
                                       environment: .sandbox, enableOnlineChecks: true, ocspTimeoutMilliseconds: 2_000)
        #expect(v.transport is AsyncHTTPClientBlockingTransport)
        #expect(throws: Never.self) { try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good")).get() }
        let revoked = v.verifyAndDecodeTransaction(signedTransaction: h.jws("leaf_revoked"))
        guard case .invalid(let f) = revoked else { Issue.record("revoked leaf accepted"); return }
        #expect(f.reason == .revoked)
        let down = v.verifyAndDecodeTransaction(signedTransaction: h.jws("responder_down"))
        guard case .invalid(let d) = down else { Issue.record("unreachable responder accepted"); return }
        #expect(d.reason == .ocspUnreachable)
        // Offline verifiers get no transport; the core initializer with transport: nil still refuses online checks.
        #expect(try SignedDataVerifier(rootCertificates: [h.root], bundleId: h.bundleId, appAppleId: nil,
                                       environment: .sandbox, enableOnlineChecks: false).transport == nil)
        #expect(throws: ConfigurationError.self) {
            try SignedDataVerifier(rootCertificates: [h.root], bundleId: h.bundleId, appAppleId: nil, environment: .sandbox,
                                   enableOnlineChecks: true, transport: nil)
        }
    }

    @Test func slowRespondersTimeOut() throws {
        let h = try OCSPHarness.get()
        let v = try SignedDataVerifier(rootCertificates: [h.root], bundleId: h.bundleId, appAppleId: nil,
                                       environment: .sandbox, enableOnlineChecks: true, ocspTimeoutMilliseconds: 300)
        let r = v.verifyAndDecodeTransaction(signedTransaction: h.jws("responder_slow"))
        guard case .invalid(let f) = r else { Issue.record("slow responder accepted"); return }
        #expect(f.reason == .ocspTimeout)
    }
}
}
