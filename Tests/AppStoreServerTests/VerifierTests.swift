import Foundation
import Testing
import COpenSSL
@testable import AppStoreServer

/// Reads one JWS of the generated fixtures by case id.
func fixture(_ id: String) throws -> String { try Paths.text(Paths.testPKI.appendingPathComponent("jws/\(id).jws")) }

@Suite struct ChainCacheTests {
    @Test func repeatedChainHitsTheCache() throws {
        let s = try TestSigner()
        let v = try s.verifier()
        for i in 0..<5 {
            let jws = try s.sign(TestSigner.transaction(extra: ["transactionId": "20000000000000\(i)"]))
            #expect(try v.verifyAndDecodeTransaction(signedTransaction: jws).get().transactionId == "20000000000000\(i)")
        }
        let stats = v.chainCacheStatistics
        #expect(stats.misses == 1)
        #expect(stats.hits == 4)
        #expect(stats.entries == 1)
    }

    @Test func disabledCacheAlwaysMisses() throws {
        let s = try TestSigner()
        let v = try s.verifier(cache: .disabled)
        let jws = try s.sign(TestSigner.transaction())
        for _ in 0..<3 { #expect(try v.verifyAndDecodeTransaction(signedTransaction: jws).get().bundleId == TestSigner.bundleId) }
        #expect(v.chainCacheStatistics.hits == 0)
        #expect(v.chainCacheStatistics.misses == 3)
        #expect(v.chainCacheStatistics.entries == 0)
    }

    @Test func zeroTTLNeverReuses() throws {
        let s = try TestSigner()
        let v = try s.verifier(cache: ChainCacheConfiguration(maxEntries: 8, timeToLive: -1))
        let jws = try s.sign(TestSigner.transaction())
        _ = try v.verifyAndDecodeTransaction(signedTransaction: jws).get()
        _ = try v.verifyAndDecodeTransaction(signedTransaction: jws).get()
        // A TTL clamped to 0 keeps an entry only within the same second: at most one hit, never more.
        #expect(v.chainCacheStatistics.misses >= 1)
        #expect(v.chainCacheStatistics.hits <= 1)
        #expect(v.chainCacheStatistics.hits + v.chainCacheStatistics.misses == 2)
    }

    /// A cached chain is not a free pass: each payload's own effective date is still checked against the chain.
    @Test func cachedChainStillChecksEachPayloadDate() throws {
        let v = try TestSigner().verifier()
        #expect(throws: Never.self) { try v.verifyAndDecodeTransaction(signedTransaction: fixture("tx-valid-expired-leaf-signed-in-window")).get() }
        let result = v.verifyAndDecodeTransaction(signedTransaction: try fixture("tx-expired-leaf-signed-after-window"))
        guard case .invalid(let f) = result else { Issue.record("a payload dated after the leaf expired was accepted"); return }
        #expect(f.reason == .expired)
        #expect(f.status == .VERIFICATION_FAILURE)
        #expect(v.chainCacheStatistics.hits == 1)  // the second call found the chain, then rejected the date
    }

    /// Forged header variants (genuine x5c, other members, garbage signatures) never enter the cache, so they cannot
    /// evict the chains of genuine payloads; each costs a signature check, not a chain verification.
    @Test func forgedHeadersNeitherEnterNorEvict() throws {
        let s = try TestSigner()
        let v = try s.verifier(cache: ChainCacheConfiguration(maxEntries: 4))
        let genuine = try s.sign(TestSigner.transaction())
        _ = try v.verifyAndDecodeTransaction(signedTransaction: genuine).get()
        #expect(v.chainCacheStatistics.insertions == 1)
        for i in 0..<40 {
            var forged = try s.sign(TestSigner.transaction(), header: ["alg": "ES256", "x5c": s.x5c, "typ": "JWT", "kid": "v\(i)"])
            forged.removeLast(8)
            forged += "AAAAAAAA"
            let f = failure(v.verifyAndDecodeTransaction(signedTransaction: forged))
            #expect(f?.reason == .badSignature, "\(i): \(f.map { "\($0)" } ?? "accepted")")
        }
        #expect(v.chainCacheStatistics.insertions == 1 && v.chainCacheStatistics.entries == 1)
        let hits = v.chainCacheStatistics.hits
        _ = try v.verifyAndDecodeTransaction(signedTransaction: genuine).get()
        #expect(v.chainCacheStatistics.hits == hits + 1, "the genuine chain is still cached")
    }

    /// A JWS over the size limit is refused before it is read; the limit is the verifier's.
    @Test func oversizedInputIsRefusedUnread() throws {
        let s = try TestSigner()
        let genuine = try s.sign(TestSigner.transaction())
        let v = try s.verifier()
        let huge = String(repeating: "A", count: SignedDataVerifier.defaultMaxJWSBytes + 1)
        let f = failure(v.verifyAndDecodeTransaction(signedTransaction: huge))
        #expect(f?.reason == .inputTooLarge && f?.status == .INVALID_JWT_FORMAT, "\(f.map { "\($0)" } ?? "accepted")")
        let tight = try SignedDataVerifier(rootCertificates: [s.root], bundleId: TestSigner.bundleId, appAppleId: nil,
                                           environment: .sandbox, enableOnlineChecks: false, maxJWSBytes: genuine.utf8.count - 1)
        #expect(failure(tight.verifyAndDecodeTransaction(signedTransaction: genuine))?.reason == .inputTooLarge)
        #expect(throws: ConfigurationError.self) {
            try SignedDataVerifier(rootCertificates: [s.root], bundleId: "b", appAppleId: nil, environment: .sandbox,
                                   enableOnlineChecks: false, maxJWSBytes: 0)
        }
    }

    /// A tampered payload under a cached chain still fails: the cache never skips the signature.
    @Test func cachedChainStillChecksSignature() throws {
        let s = try TestSigner()
        let v = try s.verifier()
        let good = try s.sign(TestSigner.transaction())
        _ = try v.verifyAndDecodeTransaction(signedTransaction: good).get()
        var parts = good.split(separator: ".").map(String.init)
        parts[1] = TestSigner.b64url(try JSONSerialization.data(withJSONObject: TestSigner.transaction(extra: ["price": 1])))
        let bad = parts.joined(separator: ".")
        guard case .invalid(let f) = v.verifyAndDecodeTransaction(signedTransaction: bad) else {
            Issue.record("tampered payload accepted with a cached chain"); return
        }
        #expect(f.reason == .badSignature)
        #expect(v.chainCacheStatistics.hits == 1)
    }

    @Test func evictsBeyondMaxEntries() throws {
        let c = ChainCache(configuration: ChainCacheConfiguration(maxEntries: 2, timeToLive: 900))
        let s = try TestSigner()
        let v = try s.verifier(cache: .disabled)
        // Build one real VerifiedChain to store under several keys.
        guard let leaf = Certificate(der: [UInt8](Data(base64Encoded: s.x5c[0])!)),
              let inter = Certificate(der: [UInt8](Data(base64Encoded: s.x5c[1])!)),
              case .success(let chain) = ChainVerifier.verify(leaf: leaf, intermediate: inter, trust: v.trust, at: 1_748_736_000)
        else { Issue.record("chain did not verify"); return }
        let keys = (0..<3).map { ChainCache.Key(header: Array("header\($0)".utf8)) }
        c.insert(keys[0], chain, now: 100)
        c.insert(keys[1], chain, now: 101)
        _ = c.lookup(keys[0], now: 102)  // keys[0] is now more recently used than keys[1]
        c.insert(keys[2], chain, now: 103)
        #expect(c.statistics.entries == 2)
        #expect(c.lookup(keys[1], now: 104) == nil)
        #expect(c.lookup(keys[0], now: 104) != nil)
        #expect(c.lookup(keys[2], now: 2000) == nil)  // older than the TTL
    }
}

@Suite struct VerifierBehaviourTests {
    @Test func deepNotificationVerifiesNestedValues() throws {
        let v = try TestSigner().verifier()
        let deep = try v.verifyAndDecodeNotificationDeep(signedPayload: fixture("notif-valid-did-renew")).get()
        #expect(deep.notification.notificationType == .didRenew)
        #expect(deep.transaction?.transactionId != nil)
        #expect(deep.renewalInfo?.autoRenewStatus != nil)
        #expect(deep.appTransaction == nil)
        // Nested signed dates differ from the outer one: each was checked at its own.
        #expect(deep.transaction?.signedDate != deep.notification.signedDate)
    }

    @Test func deepNotificationReportsTheFailingNestedField() throws {
        let s = try TestSigner()
        let v = try s.verifier()
        var tx = try s.sign(TestSigner.transaction())
        tx.removeLast(4)
        tx += "AAAA"  // breaks the nested signature only
        let outer = try s.sign(["notificationType": "DID_RENEW", "notificationUUID": "5e5c1d6b-0d5b-4a34-9f55-0a5d4b8a4f1e",
                                "version": "2.0", "signedDate": 1_748_736_000_000,
                                "data": ["bundleId": TestSigner.bundleId, "environment": "Sandbox", "signedTransactionInfo": tx]])
        #expect(throws: Never.self) { try v.verifyAndDecodeNotification(signedPayload: outer).get() }  // shallow is fine
        guard case .invalid(let f) = v.verifyAndDecodeNotificationDeep(signedPayload: outer) else {
            Issue.record("deep verification accepted a bad nested signature"); return
        }
        #expect(f.reason == .badSignature)
        #expect(f.message.hasPrefix("data.signedTransactionInfo: "))
    }

    @Test func deepRescindConsentVerifiesAppTransaction() throws {
        let v = try TestSigner().verifier()
        let deep = try v.verifyAndDecodeNotificationDeep(signedPayload: fixture("notif-valid-rescind-consent-appdata")).get()
        #expect(deep.appTransaction?.bundleId == TestSigner.bundleId)
        #expect(deep.transaction == nil)
    }

    @Test func outputJSONKeepsUnknownKeysAndModelKeepsUnknownEnums() throws {
        let s = try TestSigner()
        let v = try s.verifier()
        let jws = try s.sign(TestSigner.transaction(extra: ["futureField": ["nested": [1, 2]], "offerDiscountType": "BRAND_NEW",
                                                             "type": "Some Future Type"]))
        let json = try v.verifiedPayloadJSON(.transaction, jws).get()
        let obj = try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any]
        #expect((obj?["futureField"] as? [String: Any])?["nested"] as? [Int] == [1, 2])
        let model = try v.verifyAndDecodeTransaction(signedTransaction: jws).get()
        #expect(model.offerDiscountType?.rawValue == "BRAND_NEW")
        #expect(model.offerDiscountType?.isKnown == false)
        #expect(model.type?.rawValue == "Some Future Type")
        #expect(model.inAppOwnershipType == .purchased)
    }

    @Test func fractionalAndNegativeMillisecondDates() throws {
        let s = try TestSigner()
        let v = try s.verifier()
        let jws = try s.sign(TestSigner.transaction(extra: ["purchaseDate": 1697679936049.7297, "originalPurchaseDate": -62135769600000]))
        let t = try v.verifyAndDecodeTransaction(signedTransaction: jws).get()
        #expect(t.purchaseDate.map { Int64($0.timeIntervalSince1970 * 1000) } == 1_697_679_936_049)
        #expect(t.originalPurchaseDate?.timeIntervalSince1970 == -62_135_769_600)
    }

    @Test func wrongKindNamesTheRightOperation() throws {
        let v = try TestSigner().verifier()
        guard case .invalid(let f) = v.verifyAndDecodeAppTransaction(signedAppTransaction: try fixture("tx-valid")) else {
            Issue.record("a transaction was accepted as an app transaction"); return
        }
        #expect(f.reason == .wrongKind)
        #expect(f.status == .INVALID_ENVIRONMENT)  // Apple's status for this payload (no receiptType)
        #expect(f.message.contains("is a transaction"))
        #expect(f.message.contains("verifyAndDecodeTransaction"))
    }

    @Test func absurdDatesFailInsteadOfTrapping() throws {
        let s = try TestSigner()
        let v = try s.verifier()
        for date in [1e300, -1e300, 9.2e18, 1e15] {
            let r = v.verifyAndDecodeTransaction(signedTransaction: try s.sign(TestSigner.transaction(signedDate: date)))
            guard case .invalid(let f) = r else { Issue.record("date \(date) accepted"); continue }
            #expect(f.reason == .expired)
        }
    }

    @Test func configurationErrors() throws {
        let root = try TestSigner().root
        func reason(_ body: () throws -> SignedDataVerifier) -> FailureReason? {
            do { _ = try body(); return nil } catch { return (error as? ConfigurationError)?.reason ?? .internal }
        }
        #expect(reason { try SignedDataVerifier(rootCertificates: [[UInt8]](), bundleId: "b", appAppleId: nil, environment: .sandbox, enableOnlineChecks: false) } == .noTrustAnchor)
        #expect(reason { try SignedDataVerifier(rootCertificates: [root], bundleId: "b", appAppleId: nil, environment: .production, enableOnlineChecks: false) } == .invalidArgument)
        #expect(reason { try SignedDataVerifier(rootCertificates: [root], bundleId: "b", appAppleId: nil, environment: .sandbox, enableOnlineChecks: true, transport: nil) } == .onlineChecksUnavailable)
        #expect(reason { try SignedDataVerifier(rootCertificates: [[1, 2, 3]], bundleId: "b", appAppleId: nil, environment: .sandbox, enableOnlineChecks: false) } == .badCertificate)
        #expect(reason { try SignedDataVerifier(rootCertificates: [root], bundleId: "b", appAppleId: nil, environment: AppStoreEnvironment(rawValue: "Staging"), enableOnlineChecks: false) } == .invalidArgument)
        #expect(reason { try SignedDataVerifier(rootCertificates: [root], bundleId: "b", appAppleId: 1, environment: .production, enableOnlineChecks: false) } == nil)
        // Xcode and LocalTesting skip signature checks, so they need no roots (Apple's libraries allow it too).
        #expect(reason { try SignedDataVerifier(rootCertificates: [[UInt8]](), bundleId: "b", appAppleId: nil, environment: .xcode, enableOnlineChecks: false) } == nil)
        #expect(reason { try SignedDataVerifier(rootCertificates: [[UInt8]](), bundleId: "b", appAppleId: nil, environment: .localTesting, enableOnlineChecks: false) } == nil)
        #expect(reason { try SignedDataVerifier(rootCertificates: [[UInt8]](), bundleId: "b", appAppleId: 1, environment: .production, enableOnlineChecks: false) } == .noTrustAnchor)
    }

    @Test func eightThreadsShareOneVerifier() async throws {
        let s = try TestSigner()
        let v = try s.verifier()
        let good = try s.sign(TestSigner.transaction())
        let badSig = String(good.dropLast(4)) + "AAAA"
        let notif = try fixture("notif-valid-did-renew")
        let failures = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var bad = 0
                    for _ in 0..<100 {
                        if case .invalid = v.verifyAndDecodeTransaction(signedTransaction: good) { bad += 1 }
                        if case .valid = v.verifyAndDecodeTransaction(signedTransaction: badSig) { bad += 1 }
                        if case .invalid = v.verifyAndDecodeNotificationDeep(signedPayload: notif) { bad += 1 }
                    }
                    return bad
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 0)
    }

    @Test func versionMatchesVersionFile() throws {
        #expect(try Paths.text(Paths.repo.appendingPathComponent("VERSION")) == AppStoreServerVersion.string)
        #expect(AppStoreServerVersion.string == "\(AppStoreServerVersion.major).\(AppStoreServerVersion.minor).\(AppStoreServerVersion.patch)")
    }
}

@Suite struct Base64Tests {
    @Test func urlAlphabetIsStrict() {
        #expect(Base64.decode("AQID", alphabet: .url) == [1, 2, 3])
        #expect(Base64.decode("-_8", alphabet: .url) == [0xFB, 0xFF])
        #expect(Base64.decode("AQI=", alphabet: .url) == nil)   // padding is not base64url
        #expect(Base64.decode("+/8", alphabet: .url) == nil)    // standard alphabet
        #expect(Base64.decode("A", alphabet: .url) == nil)      // impossible length
        #expect(Base64.decode("AR", alphabet: .url) == nil)     // non-zero trailing bits
        #expect(Base64.decode("AQ ID", alphabet: .url) == nil)
        #expect(Base64.decode("", alphabet: .url) == [])
    }

    @Test func standardAlphabetNeedsPadding() {
        #expect(Base64.decode("AQI=", alphabet: .standard) == [1, 2])
        #expect(Base64.decode("AQ==", alphabet: .standard) == [1])
        #expect(Base64.decode("AQI", alphabet: .standard) == nil)
        #expect(Base64.decode("A===", alphabet: .standard) == nil)
        #expect(Base64.decode("-_8=", alphabet: .standard) == nil)
    }

    @Test func roundTripsRandomBytes() {
        var rng = SystemRandomNumberGenerator()
        for n in 0..<64 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(Base64.decode(Base64.encode(bytes, alphabet: .url), alphabet: .url) == bytes)
            #expect(Base64.decode(Base64.encode(bytes, alphabet: .standard), alphabet: .standard) == bytes)
            #expect(Base64.encode(bytes, alphabet: .standard) == Data(bytes).base64EncodedString())
        }
    }
}

@Suite struct ES256EncodingTests {
    /// Our hand-built DER for r||s must equal OpenSSL's i2d_ECDSA_SIG for every shape of r and s.
    @Test func rawToDERMatchesOpenSSL() {
        var rng = SystemRandomNumberGenerator()
        for i in 0..<400 {
            var raw = (0..<64).map { _ in UInt8.random(in: 0...255, using: &rng) }
            switch i % 5 {
            case 0: raw[0] = 0; raw[1] = 0            // r with leading zero bytes
            case 1: raw[32] |= 0x80                   // s needs a 0x00 pad
            case 2: raw[0] = 0; raw[1] = 0x80         // r: a zero byte that must come back as padding
            case 3: for j in 32..<63 { raw[j] = 0 }   // tiny s
            default: break
            }
            #expect(ES256.rawToDER(raw) == opensslDER(raw), "r||s \(raw)")
        }
    }

    func opensslDER(_ raw: [UInt8]) -> [UInt8] {
        let sig = ECDSA_SIG_new()
        defer { ECDSA_SIG_free(sig) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        ECDSA_SIG_set0(sig, r, s)
        let len = i2d_ECDSA_SIG(sig, nil)
        var out = [UInt8](repeating: 0, count: Int(len))
        out.withUnsafeMutableBufferPointer { b in
            var p: UnsafeMutablePointer<UInt8>? = b.baseAddress
            _ = i2d_ECDSA_SIG(sig, &p)
        }
        return out
    }
}

@Suite struct HostileHeaderTests {
    /// The x5c header's shape, each with its reason: absent or null (missingX5c), an empty list (emptyX5c, which
    /// Apple's Python reports unlike a short chain), a list of other than 3 (chainLength).
    @Test func x5cShapes() throws {
        let s = try TestSigner()
        let v = try s.verifier()
        let cases: [(Any?, FailureReason)] = [(nil, .missingX5c), (NSNull(), .missingX5c), ([String](), .emptyX5c),
                                              (Array(s.x5c.prefix(1)), .chainLength), (s.x5c + [s.x5c[2]], .chainLength)]
        for (x5c, reason) in cases {
            var header: [String: Any] = ["alg": "ES256", "typ": "JWT"]
            if let x5c { header["x5c"] = x5c }
            let jws = try s.sign(TestSigner.transaction(), header: header)
            guard case .invalid(let f) = v.verifyAndDecodeTransaction(signedTransaction: jws) else {
                Issue.record("x5c \(String(describing: x5c)): accepted"); continue
            }
            #expect(f.reason == reason, "x5c \(String(describing: x5c)): \(f)")
            #expect(f.status == .INVALID_CHAIN_LENGTH, "x5c \(String(describing: x5c)): \(f)")
            #expect(f.statusCode == .invalidChainLength)
        }
    }

    /// An attacker-chosen alg is quoted only as a short printable prefix in the message.
    @Test func longOrControlCharacterAlgIsNotEchoed() throws {
        let s = try TestSigner()
        let v = try s.verifier()
        let alg = String(repeating: "A", count: 10_000) + "\u{1B}[31m"
        let jws = try s.sign(TestSigner.transaction(), header: ["alg": alg, "x5c": s.x5c])
        guard case .invalid(let f) = v.verifyAndDecodeTransaction(signedTransaction: jws) else { Issue.record("accepted"); return }
        #expect(f.reason == .unsupportedAlgorithm)
        #expect(f.message.count < 120)
        #expect(!f.message.contains("\u{1B}"))
    }
}
