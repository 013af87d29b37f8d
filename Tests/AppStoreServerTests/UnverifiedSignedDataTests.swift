import Foundation
import Testing
@testable import AppStoreServer

/// UnverifiedSignedData: what a JWS says about itself, compared with what OpenSSL and Foundation read from the same
/// bytes (never with the code under test).
@Suite struct UnverifiedSignedDataTests {
    @Test func readsHeaderPayloadKindAndCertificates() throws {
        let signer = try TestSigner()
        let jws = try signer.sign(["transactionId": "2000000000000001", "bundleId": "com.example", "signedDate": 1])
        let u = try UnverifiedSignedData.read(jws).get()
        #expect(u.kind == .transaction)
        #expect(u.algorithm == "ES256")
        let payload = try JSONSerialization.jsonObject(with: Data(u.payloadJSON)) as? [String: Any]
        #expect(payload?["transactionId"] as? String == "2000000000000001")
        let header = try JSONSerialization.jsonObject(with: Data(u.headerJSON)) as? [String: Any]
        #expect((header?["x5c"] as? [String]) == signer.x5c)
        #expect(u.certificates.count == 3)
        for (result, b64) in zip(u.certificates, signer.x5c) {
            let info = try result.get()
            let der = [UInt8](Data(base64Encoded: b64)!)
            #expect(info.der == der)
            #expect(info.sha256Fingerprint == Self.opensslFingerprint(der))
            #expect(info.subject.contains("/CN="))
        }
        // The root's issuer is its subject; the leaf's issuer is the intermediate's subject.
        let certs = try u.certificates.map { try $0.get() }
        #expect(certs[2].issuer == certs[2].subject)
        #expect(certs[0].issuer == certs[1].subject)
        let notAfter = try #require(certs[0].notAfter), notBefore = try #require(certs[0].notBefore)
        #expect(notBefore < notAfter)
    }

    @Test func kindsFollowTheVerifiersRule() throws {
        let signer = try TestSigner()
        let cases: [([String: Any], SignedPayloadKind?)] = [
            (["notificationType": "TEST"], .notification),
            (["receiptType": "Sandbox"], .appTransaction),
            (["userLocale": "en_US", "requestIdentifier": "x"], .realtimeRequest),
            (["autoRenewStatus": 1, "transactionId": "1"], .renewalInfo),
            (["transactionId": "1"], .transaction),
            (["something": "else"], nil),
        ]
        for (payload, kind) in cases {
            #expect(try UnverifiedSignedData.read(try signer.sign(payload)).get().kind == kind, "\(payload)")
        }
    }

    @Test func anyoneCanWriteWhatItReads() throws {
        // A forged signature and a certificate that is not one: read all the same, the bad entry described.
        let signer = try TestSigner()
        let jws = try signer.sign(["transactionId": "1"], header: ["alg": "ES256", "x5c": ["bm90IGEgY2VydA==", signer.x5c[1]]])
        let parts = jws.split(separator: ".")
        let forged = "\(parts[0]).\(parts[1]).AAAA"
        let u = try UnverifiedSignedData.read(forged).get()
        #expect(u.certificates.count == 2)
        guard case .failure(let f) = u.certificates[0] else { Issue.record("garbage read as a certificate"); return }
        #expect(f.message.contains("x5c[0]"))
        #expect((try? u.certificates[1].get()) != nil)
    }

    @Test func malformedAndOversizedInputFails() {
        for bad in ["", "a.b", "a.b.c.d", "!!!.e30.AA", "e30.!!!.AA"] {
            guard case .failure(let f) = UnverifiedSignedData.read(bad) else { Issue.record("read \(bad)"); continue }
            #expect(f.reason == .malformed, "\(bad): \(f)")
        }
        guard case .failure(let f) = UnverifiedSignedData.read(String(repeating: "a", count: 100), maxBytes: 10) else {
            Issue.record("oversized input read"); return
        }
        #expect(f.reason == .inputTooLarge)
    }

    /// The fingerprint as the openssl command line prints it (not the library's code path).
    static func opensslFingerprint(_ der: [UInt8]) -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cert-\(UUID().uuidString).der")
        defer { try? FileManager.default.removeItem(at: file) }
        guard (try? Data(der).write(to: file)) != nil else { return "write failed" }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["openssl", "x509", "-inform", "DER", "-in", file.path, "-noout", "-fingerprint", "-sha256"]
        let out = Pipe()
        p.standardOutput = out
        guard (try? p.run()) != nil else { return "openssl did not run" }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        // "sha256 Fingerprint=63:34:..." (older versions: "SHA256 Fingerprint=")
        return text.split(separator: "=", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? text
    }
}
