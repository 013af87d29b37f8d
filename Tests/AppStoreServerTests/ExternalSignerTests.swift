import Foundation
import Testing
@testable import AppStoreServer

/// A key held outside the process, for the tests: `check_signatures.py sign-server` (Python `cryptography`) signs
/// the digests it is sent, one per line, with the test key — an implementation independent of this library.
final class PythonSigner: ES256Signer, @unchecked Sendable {
    private let process = Process()
    private let input = Pipe(), output = Pipe()
    private let lock = NSLock()
    private(set) var calls = 0

    init() throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Paths.repo.appendingPathComponent("Tests/support/check_signatures.py").path,
                             "sign-server", SigningFixtures.dir.appendingPathComponent("p256.p8").path]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    deinit { try? input.fileHandleForWriting.close() }

    struct Failure: Error {}

    func sign(message: [UInt8], digest: [UInt8]) throws -> [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        calls += 1
        try input.fileHandleForWriting.write(contentsOf: Data((digest.map { String(format: "%02x", $0) }.joined() + "\n").utf8))
        var line = Data()
        while let chunk = try output.fileHandleForReading.read(upToCount: 1), let b = chunk.first, b != 10 { line.append(b) }
        let hex = Array(String(decoding: line, as: UTF8.self).utf8)
        guard hex.count % 2 == 0, !hex.isEmpty else { throw Failure() }
        return stride(from: 0, to: hex.count, by: 2).compactMap { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16) }
    }
}

/// A signer that answers with fixed bytes, or throws.
struct FixedSigner: ES256Signer {
    struct Refused: Error, CustomStringConvertible { var description: String { "HSM session closed" } }
    let answer: [UInt8]?
    func sign(message: [UInt8], digest: [UInt8]) throws -> [UInt8] {
        guard let answer else { throw Refused() }
        return answer
    }
}

@Suite struct ExternalSignerTests {
    static let ids = SigningFixtures.ids

    @Test func everySignatureGoesThroughTheSignerAndVerifiesIndependently() async throws {
        let signer = try PythonSigner()
        let key = try SigningKey(signer: signer, publicKey: SigningFixtures.bytes("p256_public.pem"))
        let base: [String: Any] = ["kid": Self.ids.keyId, "iss": Self.ids.issuerId, "bid": Self.ids.bundleId]
        func with(_ extra: [String: Any]) -> [String: Any] { base.merging(extra) { $1 } }
        var items: [[String: Any]] = []
        items.append(["kind": "api_token", "name": "external token", "expect": with(["lifetime": 300]),
                      "value": try AppStoreServerAPIToken.create(signingKey: key, keyId: Self.ids.keyId, issuerId: Self.ids.issuerId,
                                                                 bundleId: Self.ids.bundleId)])
        let v2 = try PromotionalOfferV2SignatureCreator(signingKey: key, keyId: Self.ids.keyId, issuerId: Self.ids.issuerId,
                                                        bundleId: Self.ids.bundleId)
        items.append(["kind": "promo_v2", "name": "external v2", "expect": with(["productId": "p", "offerIdentifier": "o"]),
                      "value": try v2.createSignature(productId: "p", offerIdentifier: "o")])
        let intro = try IntroductoryOfferEligibilitySignatureCreator(signingKey: key, keyId: Self.ids.keyId,
                                                                     issuerId: Self.ids.issuerId, bundleId: Self.ids.bundleId)
        items.append(["kind": "intro_eligibility", "name": "external intro",
                      "expect": with(["productId": "p", "allowIntroductoryOffer": true, "transactionId": "7"]),
                      "value": try intro.createSignature(productId: "p", allowIntroductoryOffer: true, transactionId: "7")])
        let v1 = try PromotionalOfferSignatureCreator(signingKey: key, keyId: Self.ids.keyId, bundleId: Self.ids.bundleId)
        let r = try v1.createSignature(productIdentifier: "p", subscriptionOfferID: "o")
        items.append(["kind": "promo_v1", "name": "external v1", "value": r.signature,
                      "expect": ["bundleId": Self.ids.bundleId, "keyId": Self.ids.keyId, "productId": "p", "offerId": "o",
                                 "appAccountToken": "", "nonce": r.nonce, "timestamp": r.timestamp]])
        items += AdvancedCommerceFixtures.items(key: key, base: base)
        #expect(signer.calls == items.count)
        #expect(try SigningFixtures.independentlyVerified(items))
    }

    @Test func apiCallsSignTheirTokensThroughTheSigner() async throws {
        guard let url = APIFixtures.mockBaseURL else { Issue.record("mock server did not start"); return }
        let signer = try PythonSigner()
        // The mock server verifies every bearer token with the public key.
        let client = try AppStoreServerAPIClient(signingKey: SigningKey(signer: signer, publicKey: SigningFixtures.bytes("p256_public.der")), keyId: Self.ids.keyId,
                                                 issuerId: Self.ids.issuerId, bundleId: Self.ids.bundleId,
                                                 environment: .localTesting, transport: DefaultTransport.make(),
                                                 configuration: .init(baseURL: url))
        let c = try #require(APIFixtures.case(.getTransactionInfo))
        let info = try await client.getTransactionInfo(transactionId: c.params["transactionId"] as! String)
        #expect(info.signedTransactionInfo != nil)
        #expect(signer.calls == 1)
    }

    @Test func signerFailuresAndNonSignaturesAreReported() throws {
        let order: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                              0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51]
        let one = [UInt8](repeating: 0, count: 31) + [1]
        let validDER = ES256.rawToDER(one + one)
        let answers: [(String, [UInt8]?)] = [
            ("throws", nil), ("40 bytes", [UInt8](repeating: 1, count: 40)), ("empty", []),
            ("r = 0", [UInt8](repeating: 0, count: 32) + one), ("s = n", one + order), ("r = n", order + one),
            ("DER with a byte after it", validDER + [0]), ("73 bytes", [UInt8](repeating: 0x30, count: 73)),
        ]
        for (what, answer) in answers {
            let key = try SigningKey(signer: FixedSigner(answer: answer), publicKey: SigningFixtures.bytes("p256_public.pem"))
            do {
                _ = try AppStoreServerAPIToken.create(signingKey: key, keyId: "k", issuerId: "i", bundleId: "b")
                Issue.record("\(what): accepted")
            } catch {
                #expect(error.reason == .signerFailed, "\(what)")
                #expect(error.statusCode == .invalidKey, "\(what)")
                if answer == nil { #expect(error.message.contains("HSM session closed")) }
            }
            let v1 = try PromotionalOfferSignatureCreator(signingKey: key, keyId: "k", bundleId: "b")
            #expect(throws: SigningError.self, "\(what)") { try v1.createSignature(productIdentifier: "p", subscriptionOfferID: "o") }
            // The API client's bearer token too: the same status and reason, not an OpenSSL failure.
            let builder = try AppStoreServerAPIRequestBuilder(signingKey: key, keyId: "k", issuerId: "i", bundleId: "b",
                                                              environment: .sandbox)
            do {
                _ = try builder.build(.getTransactionInfo(transactionId: "1"))
                Issue.record("\(what): request built")
            } catch {
                #expect(error.statusCode == .invalidKey && error.reason == .signerFailed, "\(what): \(error)")
            }
        }
        // The smallest valid values pass the range check in both forms (r = s = 1); the signature check comes next.
        for answer in [one + one, validDER] { #expect(ExternalSignature.raw(answer) == one + one) }
    }

    /// A signer that signs with a key held here: the right one, another one, or late.
    struct LocalSigner: ES256Signer {
        let key: SigningKey
        var delayMilliseconds: UInt32 = 0
        func sign(message: [UInt8], digest: [UInt8]) throws -> [UInt8] {
            if delayMilliseconds > 0 { usleep(delayMilliseconds * 1000) }
            return try message.withUnsafeBytes { try key.signDER($0) }
        }
    }

    /// Replays the first signature it made for every later message.
    final class ReplayingSigner: ES256Signer, @unchecked Sendable {
        let key: SigningKey
        private var first: [UInt8]?
        init(key: SigningKey) { self.key = key }
        func sign(message: [UInt8], digest: [UInt8]) throws -> [UInt8] {
            if let first { return first }
            let s = try message.withUnsafeBytes { try key.signDER($0) }
            first = s
            return s
        }
    }

    /// Signatures Apple would refuse are refused here, before anything is sent: by another key, random bytes, one
    /// replayed from another message, one that came too late.
    @Test func signaturesAreVerifiedWithTheSignersPublicKey() throws {
        let publicKey = try SigningFixtures.bytes("p256_public.pem")
        let right = try SigningFixtures.key()
        let other = try SigningKey(pem: try SigningFixtures.pem("other_p256.p8"))
        var random = [UInt8](repeating: 0, count: 64)
        for i in random.indices { random[i] = UInt8.random(in: 1...255) }
        let replaying = ReplayingSigner(key: right)
        let good = try SigningKey(signer: LocalSigner(key: right), publicKey: publicKey)
        _ = try AppStoreServerAPIToken.create(signingKey: good, keyId: "k", issuerId: "i", bundleId: "b")
        let replayKey = try SigningKey(signer: replaying, publicKey: publicKey)
        _ = try AppStoreServerAPIToken.create(signingKey: replayKey, keyId: "k", issuerId: "i", bundleId: "b", issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let cases: [(String, SigningKey, String)] = [
            ("another key", try SigningKey(signer: LocalSigner(key: other), publicKey: publicKey), "does not verify"),
            ("random bytes", try SigningKey(signer: FixedSigner(answer: random), publicKey: publicKey), "does not verify"),
            ("replayed", replayKey, "does not verify"),
            ("too slow", try SigningKey(signer: LocalSigner(key: right, delayMilliseconds: 300), publicKey: publicKey,
                                        timeoutMilliseconds: 100), "deadline is 100 ms"),
        ]
        for (what, key, text) in cases {
            do {
                _ = try AppStoreServerAPIToken.create(signingKey: key, keyId: "k", issuerId: "i", bundleId: "b", issuedAt: Date(timeIntervalSince1970: 1_700_000_999))
                Issue.record("\(what): accepted")
            } catch {
                #expect(error.statusCode == .invalidKey && error.reason == .signerFailed, "\(what): \(error)")
                #expect(error.message.contains(text), "\(what): \(error.message)")
            }
            let v1 = try PromotionalOfferSignatureCreator(signingKey: key, keyId: "k", bundleId: "b")
            #expect(throws: SigningError.self, "\(what)") { try v1.createSignature(productIdentifier: "p", subscriptionOfferID: "o") }
        }
    }

    @Test func theSignersPublicKeyMustBeAP256PublicKey() throws {
        let signer = FixedSigner(answer: nil)
        let p384Public: [UInt8] = try {
            let k = try SigningFixtures.pem("p384.p8")
            #expect(throws: SigningKeyError.self) { try SigningKey(pem: k) }
            return Array("-----BEGIN PUBLIC KEY-----\nMHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE\n-----END PUBLIC KEY-----\n".utf8)
        }()
        let refused: [(String, [UInt8], SigningKeyError.Kind)] = [
            ("empty", [], .malformed),
            ("garbage", Array("not a key".utf8), .malformed),
            ("a private key", try SigningFixtures.bytes("p256.p8"), .notPEM),
            ("truncated P-384", p384Public, .malformed),
            ("DER with a trailing byte", try SigningFixtures.bytes("p256_public.der") + [0], .malformed),
        ]
        for (what, bytes, kind) in refused {
            do {
                _ = try SigningKey(signer: signer, publicKey: bytes)
                Issue.record("\(what): accepted")
            } catch {
                #expect(error.kind == kind, "\(what): \(error)")
                #expect(!error.message.contains("MIG"), "\(what): key material in \(error.message)")
            }
        }
    }
}
