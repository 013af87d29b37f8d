import Foundation
import Testing
import COpenSSL
@testable import AppStoreServer

/// The OCSP test PKI and its real `openssl ocsp` responders (Tests/support/ocsp_harness.py), started once per test
/// process. The harness stops its responders when our end of its standard input closes (this process exits) or
/// after 15 minutes, whichever comes first.
final class OCSPHarness: @unchecked Sendable {
    struct Case {
        let name: String
        let jws: [String]
        let status: String
        let reason: String?
        /// OCSP requests the first online call makes (at the transport) ...
        let requests: Int
        /// ... and how many of them reach a responder (not the `down` one).
        let responderRequests: Int
        let messageContains: [String]
        /// The outcome with online checks off.
        let offlineStatus: String
        let offlineReason: String?
        /// Serials (upper-case hex) of the leaf and its intermediate, as the responders' counts name them.
        let serial: String
        let intermediateSerial: String
    }
    let dir: URL
    let root: [UInt8]
    let bundleId: String
    let urls: [String: String]
    let controlURL: String
    let shortAnswerSeconds: Int
    let cases: [String: Case]
    private let process: Process
    private let stdin: Pipe

    static let shared: Result<OCSPHarness, HarnessError> = {
        do { return .success(try OCSPHarness()) } catch let e as HarnessError { return .failure(e) } catch {
            return .failure(HarnessError(message: "\(error)"))
        }
    }()
    struct HarnessError: Error, CustomStringConvertible { let message: String; var description: String { message } }

    static func get() throws -> OCSPHarness { try shared.get() }

    private init() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("appstore-ocsp-\(getpid())")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Paths.repo.appendingPathComponent("Tests/support/ocsp_harness.py").path, "serve",
                       dir.path, "--lifetime", "900"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        // One line: "READY <setup.json>" (or nothing, when the harness failed: its stderr says why).
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data([10]) { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("READY ") else {
            throw HarnessError(message: "ocsp_harness.py did not start (needs python3 + cryptography, openssl, faketime): \(text)")
        }
        let setup = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: String(text.dropFirst(6))))) as! [String: Any]
        self.process = p
        self.stdin = input
        self.dir = dir
        self.root = [UInt8](try Data(contentsOf: URL(fileURLWithPath: setup["root"] as! String)))
        self.bundleId = setup["bundleId"] as! String
        self.urls = setup["urls"] as! [String: String]
        self.controlURL = setup["controlUrl"] as! String
        self.shortAnswerSeconds = setup["shortAnswerSeconds"] as! Int
        var cases: [String: Case] = [:]
        for (name, value) in setup["cases"] as! [String: [String: Any]] {
            let e = value["expect"] as! [String: Any]
            let offline = e["offline"] as! [String: Any]
            cases[name] = Case(name: name,
                               jws: try (value["jws"] as! [String]).map { try Paths.text(URL(fileURLWithPath: $0)) },
                               status: e["status"] as! String, reason: e["reason"] as? String,
                               requests: e["requests"] as! Int, responderRequests: e["responderRequests"] as! Int,
                               messageContains: e["messageContains"] as? [String] ?? [],
                               offlineStatus: offline["status"] as! String, offlineReason: offline["reason"] as? String,
                               serial: value["serial"] as! String, intermediateSerial: value["intermediateSerial"] as! String)
        }
        self.cases = cases
    }

    func verifier(_ transport: any BlockingHTTPTransport, cache: ChainCacheConfiguration = .default,
                  timeoutMilliseconds: UInt32 = 60_000) throws -> SignedDataVerifier {
        try SignedDataVerifier(rootCertificates: [root], bundleId: bundleId, appAppleId: nil, environment: .sandbox,
                               enableOnlineChecks: true, chainCache: cache, transport: transport,
                               ocspTimeoutMilliseconds: timeoutMilliseconds)
    }

    func jws(_ name: String, _ i: Int = 0) -> String { cases[name]!.jws[i] }

    func offlineVerifier(_ transport: any BlockingHTTPTransport) throws -> SignedDataVerifier {
        try SignedDataVerifier(rootCertificates: [root], bundleId: bundleId, appAppleId: nil, environment: .sandbox,
                               enableOnlineChecks: false, transport: transport)
    }

    /// What the responders received so far, counted by the harness's relays (not by any transport of ours).
    func responderCounts() throws -> ResponderCounts {
        let response = try SocketTransport().send(HTTPRequest(method: "GET", url: controlURL, timeoutMilliseconds: 60_000))
        guard response.status == 200,
              let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw HarnessError(message: "GET \(controlURL): HTTP \(response.status)")
        }
        return ResponderCounts(total: json["total"] as? Int ?? -1,
                               byResponder: json["byResponder"] as? [String: Int] ?? [:],
                               bySerial: json["bySerial"] as? [String: Int] ?? [:])
    }

    /// A signer over one of the harness's leaves, for payloads of the tests' own.
    func signer(_ leaf: String = "good") throws -> TestSigner {
        try TestSigner(dir: dir, leaf: "leaf_\(leaf).der", keyFile: "leaf_\(leaf).key.pem")
    }
}

/// Requests the harness's responders received: in all, per responder, per requested certificate serial.
struct ResponderCounts {
    var total: Int
    var byResponder: [String: Int]
    var bySerial: [String: Int]

    /// What was received since `earlier`.
    func since(_ earlier: ResponderCounts) -> ResponderCounts {
        ResponderCounts(total: total - earlier.total,
                        byResponder: byResponder.merging(earlier.byResponder.mapValues { -$0 }, uniquingKeysWith: +)
                            .filter { $0.value != 0 },
                        bySerial: bySerial.merging(earlier.bySerial.mapValues { -$0 }, uniquingKeysWith: +).filter { $0.value != 0 })
    }
    func serial(_ s: String) -> Int { bySerial[s] ?? 0 }
}

/// A transport made of a closure, for rewriting or recording what a real transport does.
struct FunctionTransport: BlockingHTTPTransport {
    let body: @Sendable (HTTPRequest) throws(TransportError) -> HTTPResponse
    func send(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse { try body(request) }
}

/// Thread-safe list of what went through a transport.
final class Exchanges: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(HTTPRequest, HTTPResponse?)] = []
    func add(_ request: HTTPRequest, _ response: HTTPResponse?) { lock.lock(); items.append((request, response)); lock.unlock() }
    var all: [(HTTPRequest, HTTPResponse?)] { lock.lock(); defer { lock.unlock() }; return items }
}

/// Where the BasicOCSPResponse signature bytes sit in a DER OCSPResponse (the middle of them), or nil.
func signatureOffset(_ der: [UInt8]) -> Int? {
    let signature: [UInt8]? = der.withUnsafeBufferPointer { b in
        var p: UnsafePointer<UInt8>? = b.baseAddress
        guard let r = d2i_OCSP_RESPONSE(nil, &p, b.count) else { return nil }
        defer { OCSP_RESPONSE_free(r) }
        guard let bs = OCSP_response_get1_basic(r) else { return nil }
        defer { OCSP_BASICRESP_free(bs) }
        guard let sig = OCSP_resp_get0_signature(bs), let data = ASN1_STRING_get0_data(sig) else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(sig))))
    }
    guard let signature, signature.count > 8 else { return nil }
    for start in 0...(der.count - signature.count) where der[start..<start + signature.count].elementsEqual(signature) {
        return start + signature.count / 2
    }
    return nil
}

func failure<T>(_ result: VerificationResult<T>) -> VerificationFailure? {
    if case .invalid(let f) = result { return f }
    return nil
}

@Suite(.serialized) struct OCSPTests {
    /// Every case of the harness: status, reason, message details, and how many OCSP requests the first call makes
    /// (the intermediate is asked first, so a revoked intermediate costs one).
    @Test func everyCaseAgainstRealResponders() throws {
        let h = try OCSPHarness.get()
        #expect(Set(h.cases.keys).isSuperset(of: Self.requiredCases), "missing: \(Self.requiredCases.subtracting(h.cases.keys))")
        for c in h.cases.values.sorted(by: { $0.name < $1.name }) {
            let t = SocketTransport()
            let v = try h.verifier(t, timeoutMilliseconds: c.name == "responder_slow" ? 2500 : 60_000)
            let before = try h.responderCounts()
            let started = Date()
            let result = v.verifyAndDecodeTransaction(signedTransaction: c.jws[0])
            let elapsed = Date().timeIntervalSince(started)
            switch result {
            case .valid(let tx):
                #expect(c.status == "OK", "\(c.name): verified, expected \(c.status) \(c.reason ?? "")")
                #expect(tx.bundleId == h.bundleId)
            case .invalid(let f):
                if ProcessInfo.processInfo.environment["OCSP_TEST_VERBOSE"] != nil { print("\(c.name): \(f)") }
                #expect("\(f.status)" == c.status, "\(c.name): \(f)")
                #expect(f.reason.name == c.reason, "\(c.name): \(f)")
                for piece in c.messageContains {
                    #expect(f.message.contains(piece), "\(c.name): message lacks \"\(piece)\": \(f.message)")
                }
            }
            #expect(t.requests == c.requests, "\(c.name): \(t.requests) OCSP requests, expected \(c.requests)")
            // The same, counted where the requests arrive: the intermediate is asked about first, then the leaf.
            let got = try h.responderCounts().since(before)
            #expect(got.total == c.responderRequests, "\(c.name): the responders got \(got.bySerial), expected \(c.responderRequests) requests")
            if c.requests >= 1 { #expect(got.serial(c.intermediateSerial) == 1, "\(c.name): \(got.bySerial)") }
            if c.responderRequests == 2 { #expect(got.serial(c.serial) == 1, "\(c.name): \(got.bySerial)") }
            if c.name == "responder_slow" {
                // The reason (ocspTimeout, above) shows the deadline fired; 30 s is 12x the timeout (>= 4x the
                // slowest loaded run) and far below the relay's 600 s wait.
                #expect(elapsed < 30, "the slow responder case took \(elapsed) s; the timeout is 2.5 s, the relay waits 600 s")
            }
        }
    }

    static let requiredCases: Set<String> = [
        "good", "leaf_revoked", "leaf_unknown", "responder_down", "responder_slow", "wrong_responder",
        "foreign_responder", "responder_without_eku", "stale_response", "future_response", "short_lived_answer",
        "no_ocsp_url", "intermediate_revoked", "leaf_expired_now", "leaf_not_valid_at_signed_date",
        "aia_http_after_ldap", "aia_no_http", "no_nonce", "no_next_update", "no_next_update_edge",
        "no_next_update_old", "next_update_30s_ago", "next_update_90s_ago",
    ]

    /// Every case with online checks off: validated at the payload's signedDate, the transport never used, nothing
    /// reaching a responder.
    @Test func everyCaseOffline() throws {
        let h = try OCSPHarness.get()
        let t = SocketTransport()
        let v = try h.offlineVerifier(t)
        let before = try h.responderCounts()
        for c in h.cases.values.sorted(by: { $0.name < $1.name }) {
            let f = failure(v.verifyAndDecodeTransaction(signedTransaction: c.jws[0]))
            #expect(f.map { "\($0.status)" } ?? "OK" == c.offlineStatus, "\(c.name): \(f.map { "\($0)" } ?? "verified")")
            #expect(f?.reason.name == c.offlineReason, "\(c.name): \(f.map { "\($0)" } ?? "verified")")
        }
        #expect(t.requests == 0)
        #expect(try h.responderCounts().since(before).total == 0)
    }

    /// Online checks validate the chain at the current time, not at the payload's signedDate (Apple's rule): a leaf
    /// valid at signedDate but expired now fails online and passes offline; a leaf not yet valid at signedDate but
    /// valid now passes online (with good OCSP answers) and fails offline.
    @Test func onlineChecksValidateAtTheCurrentTime() throws {
        let h = try OCSPHarness.get()
        let t = SocketTransport()
        let online = try h.verifier(t)
        let offline = try h.offlineVerifier(t)
        let before = try h.responderCounts()

        let expiredNow = h.cases["leaf_expired_now"]!
        let f = failure(online.verifyAndDecodeTransaction(signedTransaction: expiredNow.jws[0]))
        #expect(f?.reason == .expired, "\(f.map { "\($0)" } ?? "verified")")
        #expect(f?.status == .VERIFICATION_FAILURE)
        #expect(f?.message.contains("leaf") == true)
        #expect(t.requests == 0)  // the chain fails before any responder is asked
        let tx = try offline.verifyAndDecodeTransaction(signedTransaction: expiredNow.jws[0]).get()
        #expect(tx.signedDate.map { $0 < Date().addingTimeInterval(-9 * 86_400) } == true)

        let notYet = h.cases["leaf_not_valid_at_signed_date"]!
        #expect(throws: Never.self) { try online.verifyAndDecodeTransaction(signedTransaction: notYet.jws[0]).get() }
        #expect(t.requests == 2)
        let g = failure(offline.verifyAndDecodeTransaction(signedTransaction: notYet.jws[0]))
        #expect(g?.reason == .expired, "\(g.map { "\($0)" } ?? "verified")")
        #expect(g?.message.contains("leaf") == true)
        // Offline never asks; online asked once about each certificate of the second chain.
        #expect(t.requests == 2)
        let got = try h.responderCounts().since(before)
        #expect(got.total == 2 && got.serial(notYet.serial) == 1 && got.serial(notYet.intermediateSerial) == 1, "\(got.bySerial)")
    }

    /// A burst of payloads under one chain costs one OCSP exchange per certificate within the TTL, counted both at
    /// the transport and at the responders.
    @Test func oneExchangePerCertificateWithinTheTTL() throws {
        let h = try OCSPHarness.get()
        let t = SocketTransport()
        let v = try h.verifier(t)
        let good = h.cases["good"]!
        let before = try h.responderCounts()
        for round in 0..<5 {
            for i in 0..<good.jws.count {
                let tx = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good", i)).get()
                #expect(tx.transactionId == String(format: "30000000000000%02d", i), "round \(round)")
            }
        }
        #expect(t.requests == 2)
        #expect(v.chainCacheStatistics.misses == 1)
        #expect(v.chainCacheStatistics.hits == UInt64(5 * good.jws.count - 1))
        let got = try h.responderCounts().since(before)
        #expect(got.total == 2, "\(got.bySerial)")
        #expect(got.serial(good.intermediateSerial) == 1, "the root's responder: \(got.bySerial)")
        #expect(got.serial(good.serial) == 1, "the intermediate's responder: \(got.bySerial)")
        #expect(got.byResponder == ["root": 1, "inter": 1])
    }

    /// A deep notification (notification + nested transaction + renewal info, one chain) costs two exchanges.
    @Test func deepNotificationAsksOnce() throws {
        let h = try OCSPHarness.get()
        let s = try h.signer()
        let now = Date().timeIntervalSince1970 * 1000
        var tx = TestSigner.transaction(signedDate: now)
        tx["bundleId"] = h.bundleId
        let ri: [String: Any] = ["originalTransactionId": "2000000000000001", "productId": "p", "autoRenewStatus": 1,
                                 "signedDate": now, "environment": "Sandbox"]
        let n: [String: Any] = ["notificationType": "DID_RENEW", "notificationUUID": UUID().uuidString.lowercased(),
                                "version": "2.0", "signedDate": now,
                                "data": ["bundleId": h.bundleId, "environment": "Sandbox",
                                         "signedTransactionInfo": try s.sign(tx), "signedRenewalInfo": try s.sign(ri)]]
        let t = SocketTransport()
        let v = try h.verifier(t)
        let deep = try v.verifyAndDecodeNotificationDeep(signedPayload: try s.sign(n)).get()
        #expect(deep.transaction?.bundleId == h.bundleId)
        #expect(deep.renewalInfo?.autoRenewStatus == .on)
        #expect(t.requests == 2)
    }

    /// Failures are never cached: the next call asks again (counted at the transport and at the responders).
    @Test func failuresAreNotCached() throws {
        let h = try OCSPHarness.get()
        for (name, perCall) in [("responder_down", 2), ("leaf_revoked", 2), ("intermediate_revoked", 1), ("leaf_unknown", 2)] {
            let t = SocketTransport()
            let v = try h.verifier(t)
            let c = h.cases[name]!
            let before = try h.responderCounts()
            for call in 1...3 {
                #expect(failure(v.verifyAndDecodeTransaction(signedTransaction: h.jws(name))) != nil, "\(name)")
                #expect(t.requests == perCall * call, "\(name): call \(call) made \(t.requests) requests in all")
                let got = try h.responderCounts().since(before)
                #expect(got.serial(c.intermediateSerial) == call, "\(name): call \(call): \(got.bySerial)")
                // The leaf's responder, when there is one to count at (the `down` one refuses connections).
                #expect(got.serial(c.serial) == (perCall == 2 && name != "responder_down" ? call : 0), "\(name): \(got.bySerial)")
            }
            #expect(v.chainCacheStatistics.entries == 0)
        }
        // A retryable failure followed by success: the good answer is then cached.
        let flaky = Exchanges()
        let real = SocketTransport()
        let first = FunctionTransport { r throws(TransportError) in
            flaky.add(r, nil)
            if flaky.all.count == 2 { throw TransportError(.unreachable, "simulated outage") }
            return try real.send(r)
        }
        let v = try h.verifier(first)
        #expect(failure(v.verifyAndDecodeTransaction(signedTransaction: h.jws("good")))?.status == .RETRYABLE_VERIFICATION_FAILURE)
        #expect(throws: Never.self) { try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good")).get() }
        #expect(throws: Never.self) { try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good", 1)).get() }
        #expect(flaky.all.count == 4)
    }

    /// After the cache TTL the responders are asked again; with the cache off, on every call.
    @Test func ttlAndDisabledCache() throws {
        let h = try OCSPHarness.get()
        let t = SocketTransport()
        let v = try h.verifier(t, cache: ChainCacheConfiguration(maxEntries: 32, timeToLive: 1))
        _ = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good")).get()
        _ = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good", 1)).get()
        #expect(t.requests <= 4)  // 2, unless the second boundary passed in between
        Thread.sleep(forTimeInterval: 2.2)
        let before = t.requests
        _ = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good", 2)).get()
        #expect(t.requests == before + 2)

        let t0 = SocketTransport()
        let v0 = try h.verifier(t0, cache: .disabled)
        for i in 0..<3 { _ = try v0.verifyAndDecodeTransaction(signedTransaction: h.jws("good", i)).get() }
        #expect(t0.requests == 6)
    }

    /// A cached chain lives no longer than its OCSP answers: the `short` responder's answers expire after a few
    /// seconds (nextUpdate), long before the 15-minute TTL, and the next call then asks again.
    @Test func cachedAnswersEndAtNextUpdate() throws {
        let h = try OCSPHarness.get()
        let t = SocketTransport()
        let v = try h.verifier(t)
        _ = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("short_lived_answer", 0)).get()
        _ = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("short_lived_answer", 1)).get()
        #expect(t.requests == 2)  // still within nextUpdate: cached
        Thread.sleep(forTimeInterval: Double(h.shortAnswerSeconds) + 1.5)
        _ = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("short_lived_answer", 0)).get()
        #expect(t.requests == 4)
        #expect(v.chainCacheStatistics.hits == 1)
    }

    /// What goes on the wire: POST to the certificate's URL, intermediate first, OCSP content type, the timeout,
    /// and a DER OCSP request with one certificate id and a nonce.
    @Test func requestShape() throws {
        let h = try OCSPHarness.get()
        let log = Exchanges()
        let real = SocketTransport()
        let v = try h.verifier(FunctionTransport { r throws(TransportError) in
            let response = try real.send(r)
            log.add(r, response)
            return response
        }, timeoutMilliseconds: 4321)
        _ = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good")).get()
        let requests = log.all.map(\.0)
        #expect(requests.map(\.url) == [h.urls["root"]!, h.urls["inter"]!])
        for r in requests {
            #expect(r.method == "POST")
            #expect(r.timeoutMilliseconds == 4321)
            #expect(r.headers.first { $0.name.lowercased() == "content-type" }?.value == "application/ocsp-request")
            let parsed: OpaquePointer? = r.body.withUnsafeBufferPointer { b in
                var p: UnsafePointer<UInt8>? = b.baseAddress
                return d2i_OCSP_REQUEST(nil, &p, b.count)
            }
            #expect(parsed != nil)
            if let parsed {
                #expect(OCSP_request_onereq_count(parsed) == 1)
                #expect(OCSP_REQUEST_get_ext_by_NID(parsed, NID_id_pkix_OCSP_Nonce, -1) >= 0)
                OCSP_REQUEST_free(parsed)
            }
        }
        #expect(Set(requests.map(\.body)).count == 2)
    }

    /// Answers that are not what was asked for, or not answers at all.
    @Test func badAnswers() throws {
        let h = try OCSPHarness.get()
        let real = SocketTransport()
        // Keep real answers to replay: the leaf's, and the intermediate's.
        let log = Exchanges()
        _ = try h.verifier(FunctionTransport { r throws(TransportError) in
            let response = try real.send(r)
            log.add(r, response)
            return response
        }).verifyAndDecodeTransaction(signedTransaction: h.jws("good")).get()
        let intermediateAnswer = log.all[0].1!, leafAnswer = log.all[1].1!

        func leafAnswered(with make: @escaping @Sendable (HTTPRequest) throws(TransportError) -> HTTPResponse) throws -> VerificationFailure? {
            let v = try h.verifier(FunctionTransport { r throws(TransportError) in
                r.url == h.urls["inter"]! ? try make(r) : try real.send(r)
            })
            return failure(v.verifyAndDecodeTransaction(signedTransaction: h.jws("good")))
        }
        func expectFailure(_ f: VerificationFailure?, _ reason: FailureReason, _ status: VerificationError,
                           sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(f?.reason == reason, "\(f.map { "\($0)" } ?? "verified")", sourceLocation: sourceLocation)
            #expect(f?.status == status, sourceLocation: sourceLocation)
        }
        // A real, correctly signed earlier answer for this very certificate, but to another request: its nonce differs.
        expectFailure(try leafAnswered { _ in leafAnswer }, .ocspNonceMismatch, .VERIFICATION_FAILURE)
        // A real answer about another certificate (the intermediate).
        expectFailure(try leafAnswered { _ in intermediateAnswer }, .ocspCertIdMismatch, .VERIFICATION_FAILURE)
        expectFailure(try leafAnswered { _ in HTTPResponse(status: 200, body: Array("not DER".utf8)) }, .ocspMalformed, .VERIFICATION_FAILURE)
        expectFailure(try leafAnswered { _ in HTTPResponse(status: 200) }, .ocspMalformed, .VERIFICATION_FAILURE)
        expectFailure(try leafAnswered { _ in HTTPResponse(status: 200, body: leafAnswer.body + [0]) }, .ocspMalformed, .VERIFICATION_FAILURE)
        // OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED } without responseBytes.
        expectFailure(try leafAnswered { _ in HTTPResponse(status: 200, body: [0x30, 0x03, 0x0a, 0x01, 0x03]) }, .ocspTryLater, .RETRYABLE_VERIFICATION_FAILURE)
        expectFailure(try leafAnswered { _ in HTTPResponse(status: 200, body: [0x30, 0x03, 0x0a, 0x01, 0x02]) }, .ocspTryLater, .RETRYABLE_VERIFICATION_FAILURE)
        expectFailure(try leafAnswered { _ in HTTPResponse(status: 200, body: [0x30, 0x03, 0x0a, 0x01, 0x06]) }, .ocspRefused, .VERIFICATION_FAILURE)
        expectFailure(try leafAnswered { _ in HTTPResponse(status: 200, body: [0x30, 0x03, 0x0a, 0x01, 0x01]) }, .ocspRefused, .VERIFICATION_FAILURE)
        // "successful" without responseBytes is not a response.
        expectFailure(try leafAnswered { _ in HTTPResponse(status: 200, body: [0x30, 0x03, 0x0a, 0x01, 0x00]) }, .ocspMalformed, .VERIFICATION_FAILURE)
        // A bit flipped in the signature of a real answer.
        expectFailure(try leafAnswered { r throws(TransportError) in
            var answer = try real.send(r)
            if let at = signatureOffset(answer.body) { answer.body[at] ^= 0x01 }
            return answer
        }, .ocspBadSignature, .VERIFICATION_FAILURE)
        // HTTP and transport trouble: retryable.
        expectFailure(try leafAnswered { _ in HTTPResponse(status: 503, body: Array("busy".utf8)) }, .ocspHTTPError, .RETRYABLE_VERIFICATION_FAILURE)
        expectFailure(try leafAnswered { _ throws(TransportError) in throw TransportError(.timeout, "t") }, .ocspTimeout, .RETRYABLE_VERIFICATION_FAILURE)
        expectFailure(try leafAnswered { _ throws(TransportError) in throw TransportError(.failed, "f") }, .ocspUnreachable, .RETRYABLE_VERIFICATION_FAILURE)
    }

    /// A forged signature under a genuine, uncached header: the signature is checked before the chain, the cache and
    /// OCSP, so nothing is asked at the responders (counted where they receive requests), nothing is cached, and the
    /// answer is the forgery's (bad_signature), not "try later" from a responder that is down.
    @Test func forgedSignaturesCostNoExchangeAndNoCacheEntry() throws {
        let h = try OCSPHarness.get()
        func forged(_ name: String, _ i: Int = 0) throws -> String {
            var chars = Array(try h.jws(name, i))
            let at = chars.count - 20  // inside the signature segment: a different signature, still 64 bytes
            chars[at] = chars[at] == "A" ? "B" : "A"
            return String(chars)
        }
        let before = try h.responderCounts()
        let t = SocketTransport()
        let v = try h.verifier(t)
        for i in 0..<3 {
            for name in ["good", "responder_down", "leaf_revoked"] {
                let f = failure(v.verifyAndDecodeTransaction(signedTransaction: try forged(name, i % max(1, h.cases[name]!.jws.count))))
                #expect(f?.reason == .badSignature && f?.status == .VERIFICATION_FAILURE, "\(name): \(f.map { "\($0)" } ?? "accepted")")
            }
        }
        #expect(t.requests == 0)
        #expect(v.chainCacheStatistics.insertions == 0 && v.chainCacheStatistics.entries == 0)
        #expect(try h.responderCounts().since(before).total == 0)
        // The genuine payloads still verify afterwards, at two exchanges.
        _ = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good")).get()
        #expect(t.requests == 2 && v.chainCacheStatistics.insertions == 1)
    }

    /// Online checks validate at the current time, and offline verifiers never touch the transport.
    @Test func offlineNeverUsesTheTransport() throws {
        let h = try OCSPHarness.get()
        let t = SocketTransport()
        let v = try SignedDataVerifier(rootCertificates: [h.root], bundleId: h.bundleId, appAppleId: nil,
                                       environment: .sandbox, enableOnlineChecks: false, transport: t)
        for name in ["good", "leaf_revoked", "responder_down"] {
            #expect(throws: Never.self) { try v.verifyAndDecodeTransaction(signedTransaction: h.jws(name)).get() }
        }
        #expect(t.requests == 0)
    }

    @Test func configuration() throws {
        let h = try OCSPHarness.get()
        do {
            // The core initializer (AppStoreServerHTTP, when imported, supplies a transport when none is named).
            _ = try SignedDataVerifier(rootCertificates: [h.root], bundleId: "b", appAppleId: nil, environment: .sandbox,
                                       enableOnlineChecks: true, transport: nil)
            Issue.record("online checks without a transport were accepted")
        } catch {
            #expect(error.reason == .onlineChecksUnavailable)
            #expect(error.message.contains("transport"))
        }
        #expect(throws: ConfigurationError.self) {
            try h.verifier(SocketTransport(), timeoutMilliseconds: 0)
        }
        let v = try h.verifier(SocketTransport(), timeoutMilliseconds: 1234)
        #expect(v.ocspTimeoutMilliseconds == 1234)
        #expect(v.enableOnlineChecks)
    }

    /// Eight threads share one online verifier and start at once: concurrent first sightings of the chain wait for
    /// one round of exchanges, so the responders see exactly one request per certificate.
    @Test func threadsShareOneOnlineVerifier() throws {
        let h = try OCSPHarness.get()
        let t = SocketTransport()
        // 50 ms per exchange: the other threads surely arrive while the first one is asking.
        let v = try h.verifier(FunctionTransport { r throws(TransportError) in
            Thread.sleep(forTimeInterval: 0.05)
            return try t.send(r)
        })
        let jws = h.cases["good"]!.jws
        let before = try h.responderCounts()
        #expect(runThreads(8) { thread in
            (0..<25).filter { i in failure(v.verifyAndDecodeTransaction(signedTransaction: jws[(thread + i) % jws.count])) != nil }.count
        } == 0)
        #expect(t.requests == 2)
        #expect(v.chainCacheStatistics.entries == 1)
        let got = try h.responderCounts().since(before)
        #expect(got.total == 2 && got.serial(h.cases["good"]!.serial) == 1, "\(got.bySerial)")
    }

    /// A leader whose transport ignores its timeout (here: blocks until released, 300 s at most) holds the callers
    /// waiting for the same chain no longer than 2 x timeout + 1 s; they then check for themselves.
    @Test func aStuckLeaderDoesNotHoldItsFollowers() throws {
        let h = try OCSPHarness.get()
        final class Gate: @unchecked Sendable {
            let lock = NSCondition()
            var calls = 0, entered = false, released = false, leaderDone = false
            var leaderResult: VerificationFailure?
        }
        let gate = Gate()
        let real = SocketTransport()
        let v = try h.verifier(FunctionTransport { r throws(TransportError) in
            gate.lock.lock()
            gate.calls += 1
            let first = gate.calls == 1
            if first {
                gate.entered = true
                gate.lock.broadcast()
                let limit = Date().addingTimeInterval(300)  // far beyond the follower's bound below
                while !gate.released && gate.lock.wait(until: limit) {}
            }
            gate.lock.unlock()
            if first { throw TransportError(.timeout, "ignored its \(r.timeoutMilliseconds) ms timeout") }
            return try real.send(r)
        }, timeoutMilliseconds: 500)
        let bound = Double(try #require(v.online).followerWaitMilliseconds) / 1000
        #expect(bound == 2.0)

        Thread {
            let f = failure(v.verifyAndDecodeTransaction(signedTransaction: h.jws("good", 0)))
            gate.lock.lock()
            gate.leaderResult = f
            gate.leaderDone = true
            gate.lock.broadcast()
            gate.lock.unlock()
        }.start()
        gate.lock.lock()
        let limit = Date().addingTimeInterval(120)  // a wait for an event, generous for a loaded machine
        while !gate.entered && gate.lock.wait(until: limit) {}
        let entered = gate.entered
        gate.lock.unlock()
        try #require(entered, "the leader never reached its transport")

        let started = Date()
        let result = v.verifyAndDecodeTransaction(signedTransaction: h.jws("good", 1))
        let elapsed = Date().timeIntervalSince(started)
        #expect(failure(result) == nil, "\(failure(result).map { "\($0)" } ?? "")")
        #expect(elapsed >= bound - 0.05, "the follower did not wait for the leader (\(elapsed) s)")
        // At most 30 s: >= 4x a loaded run (the bound, then the follower's own exchanges) and far below the 300 s the
        // leader stays stuck, which a follower waiting for it would take.
        #expect(elapsed < 30, "the follower waited \(elapsed) s; the bound is \(bound) s")

        gate.lock.lock()
        let leaderStillBlocked = !gate.leaderDone
        gate.released = true
        gate.lock.broadcast()
        let doneBy = Date().addingTimeInterval(60)
        while !gate.leaderDone && gate.lock.wait(until: doneBy) {}
        let leaderResult = gate.leaderResult
        gate.lock.unlock()
        #expect(leaderStillBlocked)
        #expect(leaderResult?.reason == .ocspTimeout)
        // The follower's own check was cached; the leader's failure did not replace it.
        #expect(throws: Never.self) { try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good", 2)).get() }
        #expect(gate.calls == 3)
    }

    /// Canned answers (no nonce echoed) around the skew: an answer whose end (nextUpdate, or thisUpdate + 1 h) is
    /// up to 60 s past is accepted but not cached (it is already over), a current one is cached.
    @Test func answersAcceptedWithinTheSkewAreNotCached() throws {
        let h = try OCSPHarness.get()
        for (name, perCall) in [("next_update_30s_ago", 2), ("no_next_update_edge", 2), ("no_nonce", 0), ("no_next_update", 0)] {
            let t = SocketTransport()
            let v = try h.verifier(t)
            let before = try h.responderCounts()
            for i in 0..<2 {
                #expect(throws: Never.self, "\(name)") { try v.verifyAndDecodeTransaction(signedTransaction: h.jws(name, i)).get() }
            }
            #expect(t.requests == 2 + perCall, "\(name): \(t.requests) requests")
            #expect(try h.responderCounts().since(before).total == 2 + perCall, "\(name)")
        }
    }

    /// When the first caller's check fails, the callers that waited for it check for themselves (a failure is not
    /// handed on): every thread's call asks both responders.
    @Test func waitersOfAFailedCheckAskThemselves() throws {
        let h = try OCSPHarness.get()
        let t = SocketTransport()
        let v = try h.verifier(t)
        let reasons = Exchanges()
        #expect(runThreads(6) { _ in
            let f = failure(v.verifyAndDecodeTransaction(signedTransaction: h.jws("responder_down")))
            reasons.add(HTTPRequest(method: f?.reason.name ?? "verified", url: ""), nil)
            return f?.status == .RETRYABLE_VERIFICATION_FAILURE ? 0 : 1
        } == 0)
        #expect(Set(reasons.all.map(\.0.method)) == ["ocsp_unreachable"])
        #expect(t.requests == 12)
    }
}

/// Runs `body` on `count` threads released together; returns the sum of their results.
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Int) -> Int {
    final class Box: @unchecked Sendable {
        let lock = NSCondition()
        var ready = 0, go = false, total = 0, done = 0
    }
    let box = Box()
    for i in 0..<count {
        Thread {
            box.lock.lock()
            box.ready += 1
            box.lock.broadcast()
            while !box.go { box.lock.wait() }
            box.lock.unlock()
            let r = body(i)
            box.lock.lock()
            box.total += r
            box.done += 1
            box.lock.broadcast()
            box.lock.unlock()
        }.start()
    }
    box.lock.lock()
    while box.ready < count { box.lock.wait() }
    box.go = true
    box.lock.broadcast()
    while box.done < count { box.lock.wait() }
    let total = box.total
    box.lock.unlock()
    return total
}

@Suite struct ChainCacheValidityTests {
    /// An entry lives until the earlier of TTL and the OCSP answers' validity.
    @Test func entryExpiresAtTheEarlierOfTTLAndValidUntil() throws {
        let s = try TestSigner()
        let v = try s.verifier(cache: .disabled)
        guard let leaf = Certificate(der: [UInt8](Data(base64Encoded: s.x5c[0])!)),
              let inter = Certificate(der: [UInt8](Data(base64Encoded: s.x5c[1])!)),
              case .success(let chain) = ChainVerifier.verify(leaf: leaf, intermediate: inter, trust: v.trust, at: 1_748_736_000)
        else { Issue.record("chain did not verify"); return }
        let c = ChainCache(configuration: ChainCacheConfiguration(maxEntries: 4, timeToLive: 900))
        let a = ChainCache.Key(header: Array("a".utf8)), b = ChainCache.Key(header: Array("b".utf8))
        c.insert(a, chain, now: 1000, validUntil: 1100)   // OCSP answer current until 1100
        c.insert(b, chain, now: 1000, validUntil: 5000)   // answer outlives the TTL
        #expect(c.lookup(a, now: 1100) != nil)
        #expect(c.lookup(a, now: 1101) == nil)
        #expect(c.lookup(b, now: 1900) != nil)
        #expect(c.lookup(b, now: 1901) == nil)
        c.insert(a, chain, now: 1000, validUntil: 999)    // already past: not stored
        #expect(c.lookup(a, now: 1000) == nil)
        // A TTL at the top of Int64 does not overflow.
        let big = ChainCache(configuration: ChainCacheConfiguration(maxEntries: 1, timeToLive: .max))
        big.insert(a, chain, now: 1000)
        #expect(big.lookup(a, now: 2_000_000_000) != nil)
    }
}
