import Foundation
import Testing
@testable import AppStoreServer

/// Apple's roots carried by the library, and roots given as PEM (one or several certificates) wherever roots go.
@Suite struct RootsTests {
    @Test func bundledRootsMatchApplesFingerprints() throws {
        let all = AppleRootCertificate.all
        #expect(all.map(\.name) == ["Apple Root CA - G3", "Apple Inc. Root"])
        // Apple's published fingerprints (https://www.apple.com/certificateauthority/), typed here independently.
        #expect(AppleRootCertificate.appleRootCAG3?.sha256Fingerprint
                == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
        #expect(AppleRootCertificate.appleIncRoot?.sha256Fingerprint
                == "B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24")
        for root in all { #expect(CertificateInfo(der: root.der)?.subject.contains("Apple") == true, "\(root.name)") }
    }

    @Test func anAlteredRootIsLeftOut() throws {
        let g3 = try #require(AppleRootCertificate.appleRootCAG3)
        var der = g3.der
        der[der.count - 5] ^= 0x01
        let base64 = Data(der).base64EncodedString()
        #expect(AppleRootCertificate.checked(g3.name, g3.sha256Fingerprint, base64) == nil)
        #expect(AppleRootCertificate.checked(g3.name, g3.sha256Fingerprint, Data(g3.der).base64EncodedString()) != nil)
    }

    @Test func bundledRootsEqualTheSharedConformanceCopies() throws {
        guard Paths.conformanceAvailable else {
            print("SKIPPED: ../shared/conformance is absent: the bundled roots are not compared with Apple's files")
            return
        }
        let certs = Paths.conformance.appendingPathComponent("certs")
        #expect(AppleRootCertificate.appleRootCAG3?.der == [UInt8](try Data(contentsOf: certs.appendingPathComponent("apple-root-ca-g3.der"))))
        #expect(AppleRootCertificate.appleIncRoot?.der == [UInt8](try Data(contentsOf: certs.appendingPathComponent("apple-inc-root-ca.der"))))
    }

    static func pem(_ der: [UInt8]) -> [UInt8] {
        let b64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return Array("-----BEGIN CERTIFICATE-----\n\(b64)\n-----END CERTIFICATE-----\n".utf8)
    }

    @Test func pemRootsVerifyLikeDER() throws {
        let root = try [UInt8](Data(contentsOf: Paths.testPKI.appendingPathComponent("root.der")))
        let jws = try Paths.text(Paths.testPKI.appendingPathComponent("jws/tx-valid.jws"))
        let other = try #require(AppleRootCertificate.appleIncRoot).der
        // A bundle: a key block and another certificate around ours, CRLF line ends.
        let bundle = Array("junk before\r\n-----BEGIN PRIVATE KEY-----\r\nAAAA\r\n-----END PRIVATE KEY-----\r\n".utf8)
            + Self.pem(other) + Self.pem(root).flatMap { $0 == 0x0A ? [0x0D, 0x0A] : [$0] }
        for roots in [[root], [Self.pem(root)], [bundle]] {
            let verifier = try SignedDataVerifier(rootCertificates: roots, bundleId: "com.example.testpki", appAppleId: nil,
                                                  environment: .sandbox, enableOnlineChecks: false)
            #expect(throws: Never.self) { try verifier.verifyAndDecodeTransaction(signedTransaction: jws) }
        }
    }

    @Test func badPEMRootsAreRefusedWithAReason() throws {
        let cases: [([UInt8], String)] = [
            (Array("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".utf8), "do not decode"),
            (Array("-----BEGIN CERTIFICATE-----\nAAAA\n".utf8), "do not decode"),
            (Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8), "not an X.509"),
            (Array("not a certificate at all".utf8), "not a DER X.509"),
        ]
        for (input, why) in cases {
            do {
                _ = try SignedDataVerifier(rootCertificates: [input], bundleId: "com.example", appAppleId: nil,
                                           environment: .sandbox, enableOnlineChecks: false)
                Issue.record("accepted \(String(decoding: input, as: UTF8.self))")
            } catch {
                #expect(error.reason == .badCertificate && error.message.contains(why), "\(error.message)")
            }
        }
    }
}
