import Foundation
import Testing
@testable import AppStoreServer
import AppStoreServerC

// App receipt verification: the three real sandbox receipts against Apple Inc. Root (and tampered copies), and the
// receipts Tests/support/receipts.py signs with the project's own CA, through the Swift API and the C ABI.

enum RealReceipts {
    struct Expected {
        let file: String
        let bundleId: String
        let created: String
        let inApp: Int
        let first: String
    }

    static let all = [
        Expected(file: "sandbox-app-receipt-2015-11-18", bundleId: "com.mbaasy.ios.demo", created: "2015-11-18T17:13:48Z",
                 inApp: 5, first: "1000000180842733"),
        Expected(file: "sandbox-app-receipt-2020-07-22", bundleId: "com.revenuecat.sampleapp",
                 created: "2020-07-22T17:39:08Z", inApp: 9, first: "1000000692879214"),
        Expected(file: "sandbox-app-receipt-2024-04-02", bundleId: "com.brave.ios.browser", created: "2024-04-02T21:56:15Z",
                 inApp: 5, first: "2000000561971563"),
    ]

    static func text(_ name: String) throws -> String {
        try Paths.text(Paths.conformance.appendingPathComponent("real/receipts/app/\(name).b64"))
    }
    static func der(_ name: String) throws -> [UInt8] { [UInt8](Data(base64Encoded: try text(name)) ?? Data()) }
    static func cert(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: Paths.conformance.appendingPathComponent("certs/\(name)")))
    }
    static func appleIncRoot() throws -> [UInt8] { try cert("apple-inc-root-ca.der") }

    static func ms(_ iso: String) -> Int64 {
        let f = ISO8601DateFormatter()
        return Int64((f.date(from: iso)?.timeIntervalSince1970 ?? -1) * 1000)
    }

    /// A minimal DER walker (definite lengths only: the real receipts are DER), independent of the library, to find
    /// where to tamper.
    struct Node {
        let tag: UInt8
        let start: Int
        let content: Range<Int>
        var end: Int { content.upperBound }
    }

    static func node(_ b: [UInt8], at i: Int, limit: Int) -> Node? {
        guard i + 2 <= limit else { return nil }
        var p = i + 1
        var len = Int(b[p])
        p += 1
        if len & 0x80 != 0 {
            let n = len & 0x7F
            guard (1...4).contains(n), p + n <= limit else { return nil }
            len = 0
            for _ in 0..<n { len = len << 8 | Int(b[p]); p += 1 }
        }
        guard p + len <= limit else { return nil }
        return Node(tag: b[i], start: i, content: p..<(p + len))
    }

    static func children(_ b: [UInt8], of n: Node) -> [Node] {
        var out: [Node] = []
        var i = n.content.lowerBound
        while i < n.content.upperBound, let c = node(b, at: i, limit: n.content.upperBound) {
            out.append(c)
            i = c.end
        }
        return out
    }

    /// Where to tamper in a real receipt (byte offsets into its DER).
    struct Layout {
        /// The 20 characters of attribute 12's IA5String date.
        let creationDate: Range<Int>
        /// Whole certificates (SEQUENCE, tag included).
        let signer: Node, intermediate: Node, root: Node
        /// The signer's subjectPublicKeyInfo BIT STRING and the certificates' signatureValue BIT STRINGs.
        let signerKey: Node, signerSignature: Node, intermediateKey: Node, intermediateSignature: Node
    }

    static func layout(_ der: [UInt8], appleRoot: [UInt8]) -> Layout? {
        // Attribute 12: SEQUENCE { INTEGER 12, INTEGER 1, OCTET STRING { IA5String (20) } }, exactly once.
        let attr12: [UInt8] = [0x02, 0x01, 0x0C, 0x02, 0x01, 0x01, 0x04, 0x16, 0x16, 0x14]
        let hits = (0...(der.count - attr12.count)).filter { der[$0..<($0 + attr12.count)].elementsEqual(attr12) }
        guard hits.count == 1, let at = hits.first else { return nil }
        guard let top = node(der, at: 0, limit: der.count), let explicit = children(der, of: top).last,
              let signed = children(der, of: explicit).first,
              let certSet = children(der, of: signed).first(where: { $0.tag == 0xA0 }) else { return nil }
        let certs = children(der, of: certSet)
        guard certs.count == 3 else { return nil }
        let text = { (n: Node) in String(decoding: der[n.start..<n.end], as: UTF8.self) }
        guard let root = certs.first(where: { der[$0.start..<$0.end].elementsEqual(appleRoot) }),
              let signer = certs.first(where: { text($0).contains("Receipt Signing") }),
              let intermediate = certs.first(where: { $0.start != root.start && $0.start != signer.start }) else { return nil }
        func parts(_ cert: Node) -> (key: Node, signature: Node)? {
            let c = children(der, of: cert)
            guard c.count == 3, c[2].tag == 0x03 else { return nil }
            let tbs = children(der, of: c[0])
            // [0] version, serial, signature algorithm, issuer, validity, subject, subjectPublicKeyInfo, ...
            guard tbs.count >= 7, tbs[0].tag == 0xA0, tbs[6].tag == 0x30,
                  let key = children(der, of: tbs[6]).last, key.tag == 0x03 else { return nil }
            return (key, c[2])
        }
        guard let s = parts(signer), let i = parts(intermediate) else { return nil }
        return Layout(creationDate: (at + attr12.count)..<(at + attr12.count + 20), signer: signer,
                      intermediate: intermediate, root: root, signerKey: s.key, signerSignature: s.signature,
                      intermediateKey: i.key, intermediateSignature: i.signature)
    }

    /// Tampered copies of a real receipt and the reason verification must give for each.
    static func tamperings(_ e: Expected, _ der: [UInt8], appleRoot: [UInt8]) -> [(what: String, bytes: [UInt8], reason: String?)]? {
        guard let l = layout(der, appleRoot: appleRoot),
              let content = flip(der, at: Array(e.bundleId.utf8), offset: 3),
              let subject = flip(der, at: Array("iTunes Store Receipt Signing".utf8), offset: 2) else { return nil }
        func at(_ i: Int, _ mask: UInt8 = 0x01) -> [UInt8] { var out = der; out[i] ^= mask; return out }
        let d = l.creationDate.lowerBound
        return [
            // Signed content: one bit of the bundle id.
            ("content byte", content, "bad_signature"),
            // attribute 12, "YYYY-MM-DDThh:mm:ssZ": the year's first digit ("3015": every certificate expired), the
            // month's first digit (month 17: unreadable, so it used to fall back to now), the last digit of the seconds.
            ("creation date year digit", at(d), "bad_signature"),
            ("creation date month digit", at(d + 5), "bad_signature"),
            ("creation date seconds digit", at(d + 18), "bad_signature"),
            // The RSA signature (the last bytes of the DER).
            ("signature byte", at(der.count - 7, 0x40), "bad_signature"),
            // Signer certificate: its subject (its key still verifies the signature; its issuer's signature on it
            // no longer does), its own signatureValue, and its public key (the receipt's signature fails first).
            ("signer certificate subject", subject, "untrusted_chain"),
            ("signer certificate signature", at(l.signerSignature.end - 20), "untrusted_chain"),
            ("signer certificate key", at(l.signerKey.content.lowerBound + 100), "bad_signature"),
            // Intermediate certificate: its key (the signer's certificate no longer verifies) and its signatureValue.
            ("intermediate certificate key", at(l.intermediateKey.content.lowerBound + 100), "untrusted_chain"),
            ("intermediate certificate signature", at(l.intermediateSignature.end - 20), "untrusted_chain"),
            // The copy of Apple Inc. Root the receipt carries is never trusted: corrupting its signature changes nothing.
            ("carried root certificate signature", at(l.root.end - 20), nil),
        ]
    }

    /// A copy of `bytes` with one bit flipped at the first occurrence of `needle` plus `offset`.
    static func flip(_ bytes: [UInt8], at needle: [UInt8], offset: Int = 0) -> [UInt8]? {
        guard needle.count <= bytes.count else { return nil }
        for i in 0...(bytes.count - needle.count) where bytes[i..<(i + needle.count)].elementsEqual(needle) {
            var out = bytes
            out[i + offset] ^= 0x01
            return out
        }
        return nil
    }
}

func b64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

/// The reason name of the ReceiptError `body` throws, nil when it succeeds.
func reasonOf(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch let e as ReceiptError {
        return e.reason.name
    } catch {
        return "not a ReceiptError: \(error)"
    }
}

@Suite struct RealReceiptVerificationTests {
    @Test func realSandboxReceiptsVerifyAgainstAppleIncRoot() throws {
        guard Paths.conformanceAvailable else {
            print("receipts: SKIPPED — \(Paths.conformance.path) not found; real receipts were NOT verified")
            return
        }
        let verifier = try ReceiptVerifier(rootCertificates: [try RealReceipts.appleIncRoot()])
        for e in RealReceipts.all {
            let v = try verifier.verify(appReceipt: try RealReceipts.text(e.file))
            #expect(v.receipt.bundleId == e.bundleId, "\(e.file)")
            #expect(v.receipt.inAppPurchases.count == e.inApp, "\(e.file)")
            #expect(v.receipt.inAppPurchases.first?.transactionId == e.first, "\(e.file)")
            #expect(v.effectiveDateSource == .receiptCreationDate)
            #expect(v.receipt.receiptCreationDate.map { Int64($0.timeIntervalSince1970 * 1000) } == RealReceipts.ms(e.created))
            #expect(v.signerSubject.contains("Mac App Store and iTunes Store Receipt Signing"))
            // With the bundle id configured, and the wrong one.
            let bound = try ReceiptVerifier(rootCertificates: [try RealReceipts.appleIncRoot()], bundleId: e.bundleId)
            #expect(throws: Never.self) { try bound.verify(appReceipt: try RealReceipts.text(e.file)) }
            let other = try ReceiptVerifier(rootCertificates: [try RealReceipts.appleIncRoot()], bundleId: "com.example.other")
            let text = try RealReceipts.text(e.file)
            #expect(reasonOf { _ = try other.verify(appReceipt: text) } == "wrong_bundle")
        }
    }

    /// Every documented field of the 2020 receipt's first record, as decoded (values read with openssl asn1parse).
    @Test func realReceiptFields() throws {
        guard Paths.conformanceAvailable else { return }
        let v = try ReceiptVerifier(rootCertificates: [try RealReceipts.appleIncRoot()])
            .verify(appReceipt: try RealReceipts.text("sandbox-app-receipt-2020-07-22"))
        #expect(v.receipt.applicationVersion == "4")
        #expect(v.receipt.originalApplicationVersion == "1.0")
        #expect(v.receipt.receiptExpirationDate == nil)
        let p = try #require(v.receipt.inAppPurchases.first)
        #expect(p.quantity == 1)
        #expect(p.productId == "com.revenuecat.monthly_4.99.1_week_intro")
        #expect(p.transactionId == "1000000692879214")
        #expect(p.originalTransactionId == "1000000692878476")
        #expect(p.webOrderLineItemId == "1000000054042695")
        #expect(p.isInIntroOfferPeriod == false)
        #expect(p.cancellationDate == nil)  // an empty IA5String in the receipt
        let json = try #require(try JSONSerialization.jsonObject(with: Data(try v.json())) as? [String: Any])
        let first = try #require((json["inApp"] as? [[String: Any]])?.first)
        #expect(first["purchaseDate"] as? Int64 == RealReceipts.ms("2020-07-14T19:36:40Z"))
        #expect(first["originalPurchaseDate"] as? Int64 == RealReceipts.ms("2020-07-14T19:33:27Z"))
        #expect(first["expiresDate"] as? Int64 == RealReceipts.ms("2020-07-14T19:41:40Z"))
        #expect(first["webOrderLineItemId"] as? String == "1000000054042695")
        #expect((json["verification"] as? [String: Any])?["effectiveDateSource"] as? String == "receiptCreationDate")
    }

    /// The signature is checked before anything read from the content is used: tampering is `bad_signature`,
    /// wherever it is in the signed content (also in the creation date the chain is validated at).
    @Test func tamperedRealReceiptsAreRejected() throws {
        guard Paths.conformanceAvailable else { return }
        let root = try RealReceipts.appleIncRoot()
        let verifier = try ReceiptVerifier(rootCertificates: [root])
        for e in RealReceipts.all {
            let der = try RealReceipts.der(e.file)
            let cases = try #require(RealReceipts.tamperings(e, der, appleRoot: root), "\(e.file): layout not found")
            for (what, bytes, reason) in cases {
                #expect(bytes != der, "\(e.file) \(what): nothing changed")
                #expect(reasonOf { _ = try verifier.verify(appReceiptDER: bytes) } == reason, "\(e.file) \(what)")
            }
            // The unverified parse reads tampered content: that is why extraction alone proves nothing.
            #expect(try AppReceipt(der: cases[0].bytes).firstTransactionId == e.first)
        }
        // 2024: a byte inside the carried WWDR G5 intermediate's key, found by its DER.
        let g5 = try RealReceipts.cert("apple-wwdr-ca-g5.der")
        let der2024 = try RealReceipts.der("sandbox-app-receipt-2024-04-02")
        let intermediate = try #require(RealReceipts.flip(der2024, at: g5, offset: 300))
        #expect(reasonOf { _ = try verifier.verify(appReceiptDER: intermediate) } == "untrusted_chain")
    }

    @Test func wrongRootsAndXcodeReceiptsAreRejected() throws {
        guard Paths.conformanceAvailable else { return }
        let r2024 = try RealReceipts.text("sandbox-app-receipt-2024-04-02")
        let g3 = try ReceiptVerifier(rootCertificates: [try RealReceipts.cert("apple-root-ca-g3.der")])
        #expect(reasonOf { _ = try g3.verify(appReceipt: r2024) } == "untrusted_chain")
        // The intermediate as the only trust anchor gives a 2-certificate chain: not Apple's shape.
        let g5 = try ReceiptVerifier(rootCertificates: [try RealReceipts.cert("apple-wwdr-ca-g5.der")])
        #expect(reasonOf { _ = try g5.verify(appReceipt: r2024) } == "untrusted_chain")
        let apple = try ReceiptVerifier(rootCertificates: [try RealReceipts.appleIncRoot()])
        for name in ["xcode-app-receipt-with-transaction", "xcode-app-receipt-empty"] {
            let text = try Paths.text(Paths.conformance.appendingPathComponent("xcode/receipts/\(name).b64"))
            #expect(reasonOf { _ = try apple.verify(appReceipt: text) } == "untrusted_chain", "\(name)")
        }
        let tx = try Paths.text(Paths.conformance.appendingPathComponent(
            "real/receipts/transaction/sandbox-transaction-receipt-2015-11-18.b64"))
        #expect(reasonOf { _ = try apple.verify(appReceipt: tx) } == "wrong_kind")
    }

    @Test func configurationErrors() throws {
        #expect(throws: ConfigurationError.self) { try ReceiptVerifier(rootCertificates: [[UInt8]]()) }
        #expect(throws: ConfigurationError.self) { try ReceiptVerifier(rootCertificates: [[1, 2, 3]]) }
        #expect(throws: ConfigurationError.self) {
            try ReceiptVerifier(rootCertificates: [try Data(contentsOf: Paths.receiptFixtures.appendingPathComponent("root.der"))],
                                bundleId: "")
        }
    }
}

/// Tests/support/receipts.py: every case through the Swift API and the C ABI, exact JSON, status and reason.
struct OwnReceiptRunner {
    let base = Paths.receiptFixtures
    var passed = 0, failed = 0
    var failures: [String] = []

    struct Outcome: Equatable, CustomStringConvertible {
        var json: String?          // canonical (sorted keys), on success
        var status = "OK"
        var reason = ""
        var description: String { json ?? "\(status)/\(reason)" }
    }

    static func canonical(_ bytes: [UInt8]) -> String? {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(bytes)),
              let data = try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    static let receiptStatus: [String: String] = [
        "receipt_malformed": "INVALID_RECEIPT", "wrong_kind": "INVALID_RECEIPT", "undecodable_payload": "INVALID_RECEIPT",
        "wrong_bundle": "INVALID_APP_IDENTIFIER", "bad_certificate": "INVALID_CERTIFICATE",
    ]

    func roots(_ c: [String: Any]) throws -> [[UInt8]] {
        let v = c["verifier"] as? [String: Any] ?? [:]
        return try (v["roots"] as? [String] ?? []).map { [UInt8](try Data(contentsOf: base.appendingPathComponent($0))) }
    }

    func viaSwift(_ c: [String: Any], _ text: String) throws -> Outcome {
        let v = c["verifier"] as? [String: Any] ?? [:]
        let verifier = try ReceiptVerifier(rootCertificates: try roots(c), bundleId: v["bundleId"] as? String)
        do throws(ReceiptError) {
            return Outcome(json: Self.canonical(try verifier.verify(appReceipt: text).json()))
        } catch {
            return Outcome(json: nil, status: Self.receiptStatus[error.reason.name] ?? "VERIFICATION_FAILURE",
                           reason: error.reason.name)
        }
    }

    func viaC(_ c: [String: Any], _ text: String) throws -> Outcome {
        let v = c["verifier"] as? [String: Any] ?? [:]
        let ders = try roots(c)
        let pointers = ders.map { d -> UnsafeMutablePointer<UInt8> in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: d.count)
            p.initialize(from: d, count: d.count)
            return p
        }
        defer { pointers.forEach { $0.deallocate() } }
        var rootPtrs: [UnsafePointer<UInt8>?] = pointers.map { UnsafePointer($0) }
        var lens: [UInt] = ders.map { UInt($0.count) }
        var verifier: OpaquePointer?
        var err: OpaquePointer?
        let st: Int32 = {
            if let bundle = v["bundleId"] as? String {
                return bundle.withCString { appstoreReceiptVerifierNew(&rootPtrs, &lens, UInt(ders.count), $0, &verifier, &err) }
            }
            return appstoreReceiptVerifierNew(&rootPtrs, &lens, UInt(ders.count), nil, &verifier, &err)
        }()
        guard st == 0 else {
            defer { appstoreErrorFree(err) }
            return Outcome(json: nil, status: "config " + String(cString: appstoreStatusName(st)),
                           reason: String(cString: appstoreReasonName(appstoreErrorReason(err))))
        }
        defer { appstoreReceiptVerifierFree(verifier) }
        var json: UnsafeMutablePointer<CChar>?
        let status = text.utf8CString.withUnsafeBufferPointer {
            appstoreReceiptVerifierVerify(verifier, $0.baseAddress, UInt($0.count - 1), &json, &err)
        }
        guard status == 0 else {
            defer { appstoreErrorFree(err) }
            return Outcome(json: json == nil ? nil : "json_out written on failure",
                           status: String(cString: appstoreStatusName(status)),
                           reason: String(cString: appstoreReasonName(appstoreErrorReason(err))))
        }
        defer { appstoreStringFree(json) }
        return Outcome(json: json.flatMap { Self.canonical(Array(UnsafeRawBufferPointer(start: $0, count: strlen($0)))) })
    }

    /// nil when the outcome matches the expectation.
    func check(_ c: [String: Any], _ o: Outcome) -> String? {
        let expect = c["expect"] as? [String: Any] ?? [:]
        if expect["result"] as? String == "valid" {
            guard let json = o.json, var got = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else {
                return "expected valid, got \(o)"
            }
            let verification = got.removeValue(forKey: "verification") as? [String: Any] ?? [:]
            let want = Self.canonical(Array((try? JSONSerialization.data(withJSONObject: expect["json"] ?? [:])) ?? Data()))
            let have = Self.canonical(Array((try? JSONSerialization.data(withJSONObject: got)) ?? Data()))
            guard want == have else { return "decoded JSON differs:\n  want \(want ?? "?")\n  got  \(have ?? "?")" }
            guard verification["effectiveDateSource"] as? String == expect["effectiveDateSource"] as? String else {
                return "effectiveDateSource \(verification["effectiveDateSource"] ?? "-"), expected \(expect["effectiveDateSource"] ?? "-")"
            }
            if let date = expect["effectiveDate"] as? Int64, verification["effectiveDate"] as? Int64 != date {
                return "effectiveDate \(verification["effectiveDate"] ?? "-"), expected \(date)"
            }
            return nil
        }
        let want = "\(expect["status"] ?? "?")/\(expect["reason"] ?? "?")"
        return o.json == nil && "\(o.status)/\(o.reason)" == want ? nil : "expected \(want), got \(o)"
    }

    /// The unverified extraction of the same receipt, Swift and C.
    func checkExtraction(_ c: [String: Any], _ text: String) -> String? {
        guard let want = c["extract"] as? [String: Any] else { return nil }
        let r: AppReceipt
        do { r = try AppReceipt(base64: text) } catch { return "extraction failed: \(error)" }
        guard r.firstTransactionId == want["first"] as? String,
              r.transactionIds == want["transactionIds"] as? [String] ?? [],
              r.originalTransactionIds == want["originalTransactionIds"] as? [String] ?? [] else {
            return "extraction gave \(r.firstTransactionId ?? "nil") \(r.transactionIds) \(r.originalTransactionIds), expected \(want)"
        }
        var out: UnsafeMutablePointer<CChar>?
        var err: OpaquePointer?
        let st = text.utf8CString.withUnsafeBufferPointer {
            appstoreReceiptExtractTransactionIds($0.baseAddress, UInt($0.count - 1), &out, &err)
        }
        defer { appstoreStringFree(out); appstoreErrorFree(err) }
        guard st == 0, let out, Self.canonical(Array(UnsafeRawBufferPointer(start: out, count: strlen(out)))) == Self.canonical(r.json) else {
            return "C extract_transaction_ids differs from the Swift result (status \(st))"
        }
        return checkCFirstId(want, text)
    }

    /// appstore_receipt_extract_transaction_id: the first id byte for byte (a C string cannot hold a NUL, so an id
    /// with one must fail as `cIdError` says), NOT_FOUND without one.
    func checkCFirstId(_ want: [String: Any], _ text: String) -> String? {
        var id: UnsafeMutablePointer<CChar>?
        var err: OpaquePointer?
        let st = text.utf8CString.withUnsafeBufferPointer {
            appstoreReceiptExtractTransactionId($0.baseAddress, UInt($0.count - 1), &id, &err)
        }
        defer { appstoreErrorFree(err) }
        let got = id.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: strlen($0))) }
        if st == 0 { appstoreStringFree(id) }
        let status = String(cString: appstoreStatusName(st))
        let reason = String(cString: appstoreReasonName(appstoreErrorReason(err)))
        if let fail = want["cIdError"] as? [String: Any] {
            let expected = "\(fail["status"] ?? "?")/\(fail["reason"] ?? "?")"
            return st != 0 && got == nil && "\(status)/\(reason)" == expected ? nil
                : "C extract_transaction_id gave \(status)/\(reason) \(got.map { "id of \($0.count) bytes" } ?? ""), expected \(expected)"
        }
        guard let first = want["first"] as? String else {
            return status == "NOT_FOUND" && reason == "no_transaction_id" && got == nil ? nil
                : "C extract_transaction_id gave \(status)/\(reason), expected NOT_FOUND/no_transaction_id"
        }
        return st == 0 && got == Array(first.utf8) ? nil
            : "C extract_transaction_id gave \(status)/\(reason) \(got.map { String(decoding: $0, as: UTF8.self) } ?? "-"), expected \(first)"
    }

    mutating func run() throws {
        let root = try JSONSerialization.jsonObject(with: Data(contentsOf: base.appendingPathComponent("manifest.json"))) as? [String: Any]
        for c in root?["cases"] as? [[String: Any]] ?? [] {
            let id = c["id"] as? String ?? "?"
            let text = try Paths.text(base.appendingPathComponent(c["path"] as? String ?? ""))
            let s = try viaSwift(c, text)
            let cabi = try viaC(c, text)
            if let p = check(c, s) {
                failed += 1; failures.append("\(id) [Swift]: \(p)")
            } else if s != cabi {
                failed += 1; failures.append("\(id): Swift gave \(s), the C ABI \(cabi)")
            } else if let p = checkExtraction(c, text) {
                failed += 1; failures.append("\(id): \(p)")
            } else {
                passed += 1
            }
        }
    }
}

@Suite struct OwnReceiptTests {
    @Test func ownCAReceipts() throws {
        var runner = OwnReceiptRunner()
        try runner.run()
        for f in runner.failures { print("receipts FAIL \(f)") }
        print("receipts: \(runner.passed) passed, \(runner.failed) failed")
        #expect(runner.passed >= 32)
        #expect(runner.failed == 0)
    }
}

@Suite struct ReceiptParsingTests {
    @Test func rfc3339Dates() {
        let cases: [(String, Int64?)] = [
            ("1970-01-01T00:00:00Z", 0), ("2020-07-22T17:39:08Z", 1_595_439_548_000),
            ("2020-07-22T17:39:08.5Z", 1_595_439_548_500), ("2020-07-22T17:39:08.123456789Z", 1_595_439_548_123),
            ("2020-07-22T19:39:08+02:00", 1_595_439_548_000), ("2020-07-22T19:39:08+0200", 1_595_439_548_000),
            ("2020-07-22T12:39:08-05:00", 1_595_439_548_000), ("4001-01-01T00:00:00Z", 64_092_211_200_000),
            ("2024-02-29T00:00:00Z", 1_709_164_800_000),
            ("2023-02-29T00:00:00Z", nil), ("2020-13-01T00:00:00Z", nil), ("2020-07-22T24:00:00Z", nil),
            ("2020-07-22T17:39:08", nil), ("2020-07-22 17:39:08Z", 1_595_439_548_000), ("", nil), ("2020-07-22", nil),
            ("2020-07-22T17:39:08.Z", nil), ("2020-07-22T17:39:08Zjunk", nil), ("June 1st, 2025", nil),
        ]
        for (text, want) in cases {
            let got = ReceiptDate.milliseconds(text)
            #expect(got == want, "\(text)")
        }
    }

    @Test func transactionReceiptMatchingFollowsApple() throws {
        func receipt(_ outer: String) -> String { Data(outer.utf8).base64EncodedString() }
        func info(_ inner: String) -> String { Data(inner.utf8).base64EncodedString() }
        let good = receipt("{\n\t\"purchase-info\" = \"\(info("{\n\t\"original-transaction-id\" = \"1\";\n\t\"transaction-id\" = \"42\";\n}"))\";\n}")
        #expect(try TransactionReceipt(base64: good).transactionId == "42")
        // "original-transaction-id" alone is not "transaction-id".
        let onlyOriginal = receipt("{ \"purchase-info\" = \"\(info("{ \"original-transaction-id\" = \"1\"; }"))\"; }")
        #expect(try TransactionReceipt(base64: onlyOriginal).transactionId == nil)
        // Apple's pattern needs whitespace around '='.
        let noSpace = receipt("{ \"purchase-info\"=\"\(info("{ \"transaction-id\" = \"7\"; }"))\"; }")
        #expect(try TransactionReceipt(base64: noSpace).transactionId == nil)
        // The first complete match wins; an incomplete earlier one is skipped.
        let twice = receipt("{ \"purchase-info\" = \"!!\"; \"purchase-info\" = \"\(info("{ \"transaction-id\" = \"8\"; }"))\"; }")
        #expect(try TransactionReceipt(base64: twice).transactionId == "8")
        // Line-wrapped base64 and a missing '=' are tolerated.
        let wrapped = stride(from: 0, to: good.count, by: 76).map { i -> String in
            let s = good.index(good.startIndex, offsetBy: i)
            return String(good[s..<good.index(s, offsetBy: min(76, good.count - i))])
        }.joined(separator: "\r\n")
        #expect(try TransactionReceipt(base64: wrapped).transactionId == "42")
        var unpadded = good
        while unpadded.hasSuffix("=") { unpadded.removeLast() }
        #expect(ReceiptUtility.extractTransactionId(transactionReceipt: unpadded) == "42")
        // Not text, not base64, purchase-info not base64.
        #expect(reasonOf { _ = try TransactionReceipt(base64: Data([0xFF, 0xFE, 0x00]).base64EncodedString()) } == "receipt_malformed")
        #expect(reasonOf { _ = try TransactionReceipt(base64: "not base64!") } == "receipt_malformed")
        #expect(reasonOf { _ = try TransactionReceipt(base64: receipt("{ \"purchase-info\" = \"abc\"; }")) } == "receipt_malformed")
    }

    @Test func appleUtilityNeverThrows() {
        for garbage in ["", "!!!!", "AAAA", "MIAGCSqGSIb3DQEHAqCAMIACAQEx", String(repeating: "A", count: 10_000)] {
            #expect(ReceiptUtility.extractTransactionId(appReceipt: garbage) == nil)
            #expect(ReceiptUtility.extractTransactionId(transactionReceipt: garbage) == nil)
        }
    }

    @Test func realReceiptIdsAndAppleSwiftDifference() throws {
        guard Paths.conformanceAvailable else { return }
        let r = try AppReceipt(base64: try RealReceipts.text("sandbox-app-receipt-2020-07-22"))
        #expect(r.firstTransactionId == "1000000692879214")           // Apple Python / Node / Java
        #expect(r.inApp.last?.originalTransactionId == "1000000692878476")  // what Apple's Swift library returns
        #expect(r.transactionIds.count == 9)
        #expect(r.originalTransactionIds == ["1000000692878476"])
        let xcode = try AppReceipt(base64: try Paths.text(Paths.conformance.appendingPathComponent(
            "xcode/receipts/xcode-app-receipt-with-transaction.b64")))
        #expect(xcode.firstTransactionId == "0")
        #expect(xcode.inApp == [AppReceipt.InAppIdentifiers(transactionId: "0", originalTransactionId: nil)])
    }
}
