import Foundation
import Testing
@testable import AppStoreServer
@testable import AppStoreServerC

/// Keys written once per process by Tests/support/check_signatures.py (Python `cryptography`).
enum SigningFixtures {
    static let dir: URL = {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("appstore-signing-\(getpid())")
        #expect(runPython(["keys", dir.path]) == 0)
        return dir
    }()

    @discardableResult
    static func runPython(_ args: [String], quiet: Bool = false) -> Int32 {
        let p = Process()
        if quiet { p.standardOutput = FileHandle.nullDevice }
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Paths.repo.appendingPathComponent("Tests/support/check_signatures.py").path] + args
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }

    static func pem(_ name: String) throws -> String { try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8) }
    static func key() throws -> SigningKey { try SigningKey(pem: try pem("p256.p8")) }
    static func bytes(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: dir.appendingPathComponent(name))) }

    /// Runs the independent checker on items; true when every item verified.
    /// `quiet` hides the checker's report, for tests whose items are meant to fail (so logs show no failing totals).
    static func independentlyVerified(_ items: [[String: Any]], quiet: Bool = false) throws -> Bool {
        let file = dir.appendingPathComponent("items-\(UUID().uuidString).json")
        let doc: [String: Any] = ["public_key": dir.appendingPathComponent("p256_public.pem").path, "items": items]
        try JSONSerialization.data(withJSONObject: doc).write(to: file)
        return runPython(["check", file.path], quiet: quiet) == 0
    }

    static let ids = (keyId: "ABC123DEFG", issuerId: "57246542-96fe-1a63-e053-0824d011072a", bundleId: "com.example.app")
}

@Suite struct SigningKeyTests {
    @Test func rejectsBadKeysWithClearReasons() throws {
        func reason(_ file: String) -> SigningKeyError.Kind? {
            guard let pem = try? SigningFixtures.pem(file) else { return nil }
            let result = Result { () throws(SigningKeyError) -> SigningKey in try SigningKey(pem: pem) }
            if case .failure(let e) = result { return e.kind }
            return nil
        }
        #expect(reason("p256.p8") == nil)
        #expect(reason("p384.p8") == .wrongCurve)
        #expect(reason("rsa.p8") == .notEC)
        #expect(reason("encrypted.p8") == .encrypted)
        #expect(reason("truncated.p8") == .malformed)
        #expect(reason("not_pem.txt") == .notPEM)
        #expect(throws: SigningKeyError.self) { try SigningKey(pem: "") }
    }

    @Test func errorsNeverContainKeyMaterial() throws {
        let pem = try SigningFixtures.pem("truncated.p8")
        let body = pem.split(separator: "\n")[1]
        let result = Result { () throws(SigningKeyError) -> SigningKey in try SigningKey(pem: pem) }
        guard case .failure(let e) = result else { Issue.record("truncated key accepted"); return }
        #expect(!e.message.contains(body))
        #expect(!e.description.contains(body.prefix(12)))
        // The same through an Apple-style initializer (the SigningError carries the key error and its message).
        let ids = SigningFixtures.ids
        do {
            _ = try PromotionalOfferV2SignatureCreator(signingKey: pem, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId)
            Issue.record("truncated key accepted")
        } catch {
            #expect(!error.message.contains(body.prefix(12)))
            #expect(!"\(error.reason)".contains(body.prefix(12)))
        }
    }

    /// Key text is searched as bytes: markers are found next to invalid UTF-8 and after more than 4 KB of other
    /// text, and the three entry points (String, [UInt8], borrowed buffer) agree.
    @Test func pemIsSearchedAsBytes() throws {
        let pem = try SigningFixtures.pem("p256.p8")
        let marker = Array("-----BEGIN PRIVATE KEY-----".utf8)
        #expect(Array(pem.utf8).withUnsafeBytes { KeyMemory.contains($0, marker) })
        #expect(![UInt8]("-----BEGIN PRIVATE KEY----".utf8).withUnsafeBytes { KeyMemory.contains($0, marker) })
        #expect([UInt8]().withUnsafeBytes { !KeyMemory.contains($0, marker) && KeyMemory.contains($0, []) })
        #expect([UInt8]("--------BEGIN PRIVATE KEY-----".utf8).withUnsafeBytes { KeyMemory.contains($0, marker) })

        let prefixed = [0xFF, 0xFE, 0xC0, 0x0A] + [UInt8](repeating: 0x23, count: 5000) + [0x0A] + Array(pem.utf8)
        _ = try SigningKey(pemBytes: prefixed)
        _ = try prefixed.withUnsafeBytes { buffer throws(SigningKeyError) in try SigningKey(pemBuffer: buffer) }
        func reason(_ bytes: [UInt8]) -> SigningKeyError.Kind? {
            do { _ = try SigningKey(pemBytes: bytes); return nil } catch { return error.kind }
        }
        #expect(reason([0xFF, 0xFE, 0x00, 0x80]) == .notPEM)
        #expect(reason(Array("-----BEGIN PRIVATE KEY-----\n\u{FF}\u{FE}\n-----END PRIVATE KEY-----\n".utf8)) == .malformed)
        #expect(reason([0xFF] + Array("\n-----BEGIN ENCRYPTED PRIVATE KEY-----\n".utf8)) == .encrypted)
        #expect(reason([]) == .notPEM)
        #expect(throws: SigningKeyError.self) { try SigningKey(pemBuffer: UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    /// The transient copy of the key text is wiped with OPENSSL_cleanse (zeros, same length).
    @Test func transientCopiesAreCleansed() {
        var bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        #expect(bytes.contains { $0 != 0 })
        KeyMemory.cleanse(&bytes)
        #expect(bytes.count == 300)
        #expect(bytes.allSatisfy { $0 == 0 })
        var empty: [UInt8] = []
        KeyMemory.cleanse(&empty)
        #expect(empty.isEmpty)
    }

    /// Apple-style initializers (PEM as a String) keep the precise key error, and the C layer maps it to
    /// APPSTORE_INVALID_KEY with the same reason and message.
    @Test func appleStyleInitializersKeepTheKeyError() throws {
        let ids = SigningFixtures.ids
        let cases: [(String, SigningKeyError.Kind, FailureReason)] = [
            ("p384.p8", .wrongCurve, .keyWrongCurve), ("rsa.p8", .notEC, .keyNotEC), ("encrypted.p8", .encrypted, .keyEncrypted),
            ("truncated.p8", .malformed, .keyMalformed), ("not_pem.txt", .notPEM, .keyNotPEM),
        ]
        for (file, keyReason, cReason) in cases {
            let pem = try SigningFixtures.pem(file)
            let direct: SigningKeyError
            do { _ = try SigningKey(pem: pem); Issue.record("\(file) accepted"); continue } catch { direct = error }
            let initializers: [(String, () throws(SigningError) -> Void)] = [
                ("PromotionalOfferV2SignatureCreator", { () throws(SigningError) in
                    _ = try PromotionalOfferV2SignatureCreator(signingKey: pem, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId) }),
                ("IntroductoryOfferEligibilitySignatureCreator", { () throws(SigningError) in
                    _ = try IntroductoryOfferEligibilitySignatureCreator(signingKey: pem, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId) }),
                ("AdvancedCommerceInAppSignatureCreator", { () throws(SigningError) in
                    _ = try AdvancedCommerceInAppSignatureCreator(signingKey: pem, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId) }),
                ("PromotionalOfferSignatureCreator", { () throws(SigningError) in
                    _ = try PromotionalOfferSignatureCreator(privateKey: pem, keyId: ids.keyId, bundleId: ids.bundleId) }),
            ]
            for (name, make) in initializers {
                do throws(SigningError) {
                    try make()
                    Issue.record("\(name)(\(file)) accepted")
                } catch {
                    #expect(error.kind == .invalidKey(direct), "\(name)(\(file)): \(error.kind)")
                    guard case .invalidKey(let e) = error.kind else { continue }
                    #expect(e.kind == keyReason, "\(name)(\(file))")
                    #expect(error.message == direct.message, "\(name)(\(file)): \(error.message)")
                    // The status and reason the C layer reports (AppStoreServerFailure).
                    #expect(error.statusCode == .invalidKey && error.reason == cReason, "\(name)(\(file)): \(error.statusCode) \(error.reason)")
                }
            }
        }
        // Other signing errors keep their C mapping.
        #expect(SigningError(.invalidArgument, "x").statusCode.rawValue == 1)
        #expect(SigningError(.signingFailed, "x").statusCode.rawValue == 99)
    }
}

@Suite struct SignatureCreationTests {
    let ids = SigningFixtures.ids

    @Test func promotionalOfferV1PayloadIsByteExact() throws {
        let creator = try PromotionalOfferSignatureCreator(signingKey: SigningFixtures.key(), keyId: "KEY123", bundleId: "com.example")
        let s = "\u{2063}"
        #expect(creator.payload(productIdentifier: "prod", subscriptionOfferID: "offer", appAccountToken: "ABCD-EF",
                                nonce: "8F2B0C4E-0D5B-4A34-9F55-0A5D4B8A4F1E", timestamp: 1_700_000_000_123)
                == "com.example\(s)KEY123\(s)prod\(s)offer\(s)abcd-ef\(s)8f2b0c4e-0d5b-4a34-9f55-0a5d4b8a4f1e\(s)1700000000123")
        // An empty app account token leaves two separators side by side.
        #expect(creator.payload(productIdentifier: "p", subscriptionOfferID: "o", appAccountToken: "", nonce: "n", timestamp: 1)
                == "com.example\(s)KEY123\(s)p\(s)o\(s)\(s)n\(s)1")
        #expect(Array("\u{2063}".utf8) == [0xE2, 0x81, 0xA3])
    }

    @Test func tokenLifetimeLimits() throws {
        let key = try SigningFixtures.key()
        for bad: Int64 in [0, -5, 3601, 86_400] {
            #expect(throws: SigningError.self) {
                try AppStoreServerAPIToken.create(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId, lifetime: bad)
            }
        }
        _ = try AppStoreServerAPIToken.create(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId, lifetime: 3600)
    }

    @Test func emptyArgumentsAreRejected() throws {
        let key = try SigningFixtures.key()
        #expect(throws: SigningError.self) { try PromotionalOfferV2SignatureCreator(signingKey: key, keyId: "", issuerId: ids.issuerId, bundleId: ids.bundleId) }
        let v2 = try PromotionalOfferV2SignatureCreator(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId)
        #expect(throws: SigningError.self) { try v2.createSignature(productId: "", offerIdentifier: "o") }
        let v1 = try PromotionalOfferSignatureCreator(signingKey: key, keyId: ids.keyId, bundleId: ids.bundleId)
        #expect(throws: SigningError.self) { try v1.createSignature(productIdentifier: "p", subscriptionOfferID: "o", nonce: "not-a-uuid") }
    }

    /// Everything we sign is checked by code we did not write (cryptography + joserfc), including from 8 threads.
    @Test func independentVerifierAcceptsEverySignature() async throws {
        let key = try SigningFixtures.key()
        var items: [[String: Any]] = []
        let base: [String: Any] = ["kid": ids.keyId, "iss": ids.issuerId, "bid": ids.bundleId]
        func with(_ extra: [String: Any]) -> [String: Any] { base.merging(extra) { $1 } }

        let issued = Date(timeIntervalSince1970: 1_750_000_000)
        items.append(["kind": "api_token", "name": "token default lifetime", "expect": with(["lifetime": 300]),
                      "value": try AppStoreServerAPIToken.create(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId)])
        items.append(["kind": "api_token", "name": "token 60 min at fixed iat", "expect": with(["lifetime": 3600, "iat": 1_750_000_000]),
                      "value": try AppStoreServerAPIToken.create(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId,
                                                                 issuedAt: issued, lifetime: 3600)])
        let v2 = try PromotionalOfferV2SignatureCreator(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId)
        items.append(["kind": "promo_v2", "name": "v2 without transactionId", "expect": with(["productId": "com.example.monthly", "offerIdentifier": "WINBACK1"]),
                      "value": try v2.createSignature(productId: "com.example.monthly", offerIdentifier: "WINBACK1")])
        items.append(["kind": "promo_v2", "name": "v2 with transactionId",
                      "expect": with(["productId": "p\"quoted\\", "offerIdentifier": "o", "transactionId": "2000000000000001"]),
                      "value": try v2.createSignature(productId: "p\"quoted\\", offerIdentifier: "o", transactionId: "2000000000000001")])
        let intro = try IntroductoryOfferEligibilitySignatureCreator(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId)
        for allow in [true, false] {
            items.append(["kind": "intro_eligibility", "name": "intro \(allow)",
                          "expect": with(["productId": "com.example.yearly", "allowIntroductoryOffer": allow, "transactionId": "1000000000000042"]),
                          "value": try intro.createSignature(productId: "com.example.yearly", allowIntroductoryOffer: allow, transactionId: "1000000000000042")])
        }
        let v1 = try PromotionalOfferSignatureCreator(signingKey: key, keyId: ids.keyId, bundleId: ids.bundleId)
        for token in ["", "E3B0C442-98FC-1C14-9AFB-F4C8996FB924"] {
            let r = try v1.createSignature(productIdentifier: "com.example.monthly", subscriptionOfferID: "OFFER1", appAccountToken: token)
            #expect(r.nonce == r.nonce.lowercased())
            items.append(["kind": "promo_v1", "name": "v1 token '\(token)'", "value": r.signature,
                          "expect": ["bundleId": ids.bundleId, "keyId": ids.keyId, "productId": "com.example.monthly", "offerId": "OFFER1",
                                     "appAccountToken": token, "nonce": r.nonce, "timestamp": r.timestamp]])
        }
        let fixed = try v1.createSignature(productIdentifier: "p", subscriptionOfferID: "o", appAccountToken: "", nonce: "0B7D5B44-2D8A-4C4E-9B7E-5A1A3C2F9E10", timestamp: 42)
        #expect(fixed.nonce == "0b7d5b44-2d8a-4c4e-9b7e-5a1a3c2f9e10")
        #expect(fixed.timestamp == 42)
        items.append(["kind": "promo_v1", "name": "v1 fixed nonce", "value": fixed.signature,
                      "expect": ["bundleId": ids.bundleId, "keyId": ids.keyId, "productId": "p", "offerId": "o", "appAccountToken": "",
                                 "nonce": "0b7d5b44-2d8a-4c4e-9b7e-5a1a3c2f9e10", "timestamp": 42]])
        items += AdvancedCommerceFixtures.items(key: key, base: base)

        // 8 threads on one key handle; the checker also proves every nonce is unique.
        // Tasks finish in any order: each result carries its thread's index, and the lists are put back in that order.
        let threaded = await withTaskGroup(of: (Int, [String]).self) { group in
            for t in 0..<8 {
                group.addTask {
                    (t, (0..<25).compactMap { i in try? v2.createSignature(productId: "p\(t)", offerIdentifier: "o\(i)") })
                }
            }
            return await group.reduce(into: [(Int, [String])]()) { $0.append($1) }.sorted { $0.0 < $1.0 }.map(\.1)
        }
        #expect(threaded.map(\.count) == Array(repeating: 25, count: 8))
        for (t, list) in threaded.enumerated() {
            for (i, jws) in list.enumerated() {
                let o = "o\(i)"
                items.append(["kind": "promo_v2", "name": "thread \(t) #\(i)", "value": jws,
                              "expect": with(["productId": "p\(t)", "offerIdentifier": o])])
            }
        }
        #expect(try SigningFixtures.independentlyVerified(items))
    }

    /// The checker itself must be able to fail: a forged claim and a wrong expectation are caught.
    @Test func independentVerifierRejectsWrongSignatures() throws {
        let key = try SigningFixtures.key()
        let v2 = try PromotionalOfferV2SignatureCreator(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId)
        let jws = try v2.createSignature(productId: "p", offerIdentifier: "o")
        var parts = jws.split(separator: ".").map(String.init)
        parts[1] = TestSigner.b64url(Data(#"{"iss":"x","iat":1,"aud":"promotional-offer","bid":"b","nonce":"n","productId":"p","offerIdentifier":"o"}"#.utf8))
        let base: [String: Any] = ["kid": ids.keyId, "iss": ids.issuerId, "bid": ids.bundleId, "productId": "p", "offerIdentifier": "o"]
        #expect(try !SigningFixtures.independentlyVerified([["kind": "promo_v2", "value": parts.joined(separator: "."), "expect": base]], quiet: true))
        var wrong = base
        wrong["productId"] = "other"
        #expect(try !SigningFixtures.independentlyVerified([["kind": "promo_v2", "value": jws, "expect": wrong]], quiet: true))
        let v1 = try PromotionalOfferSignatureCreator(signingKey: key, keyId: ids.keyId, bundleId: ids.bundleId)
        let r = try v1.createSignature(productIdentifier: "p", subscriptionOfferID: "o")
        #expect(try !SigningFixtures.independentlyVerified([["kind": "promo_v1", "value": r.signature,
            "expect": ["bundleId": ids.bundleId, "keyId": ids.keyId, "productId": "p", "offerId": "o", "appAccountToken": "",
                       "nonce": r.nonce, "timestamp": r.timestamp + 1]]], quiet: true))
        // Advanced Commerce: the request claim must be exactly the expected object (a key missing from or added to
        // the expectation, or a JSON type changed, fails).
        let ac = try AdvancedCommerceInAppSignatureCreator(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId)
        let answer = AdvancedCommerceFixtures.knownAnswers[4]  // reactivate (full)
        let acJWS = try ac.createSignature(advancedCommerceInAppRequest: answer.request)
        let acBase: [String: Any] = ["kid": ids.keyId, "iss": ids.issuerId, "bid": ids.bundleId]
        let exact = AdvancedCommerceFixtures.object(answer.json)
        #expect(try SigningFixtures.independentlyVerified([["kind": "advanced_commerce", "value": acJWS,
                                                            "expect": acBase.merging(["request": exact]) { $1 }]], quiet: true))
        var missing = exact
        missing["storefront"] = nil
        var extra = exact
        extra["currency"] = "USD"
        var retyped = exact
        retyped["transactionId"] = 2000000000000003
        for wrong in [missing, extra, retyped] {
            #expect(try !SigningFixtures.independentlyVerified([["kind": "advanced_commerce", "value": acJWS,
                                                                 "expect": acBase.merging(["request": wrong]) { $1 }]], quiet: true))
        }
    }
}

@Suite struct NonceTests {
    @Test func noncesAreLowercaseVersion4UUIDs() {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let n = JWSCreation.lowercaseUUID()
            #expect(n.count == 36)
            #expect(n == n.lowercased())
            #expect(UUID(uuidString: n) != nil)
            let chars = Array(n)
            #expect(chars[14] == "4")                          // version 4
            #expect("89ab".contains(chars[19]))                // RFC 4122 variant
            seen.insert(n)
        }
        #expect(seen.count == 1000)
    }
}
