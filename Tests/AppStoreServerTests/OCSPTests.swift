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
        let requests: Int
        let messageContains: [String]
    }
    let dir: URL
    let root: [UInt8]
    let bundleId: String
    let urls: [String: String]
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
        self.shortAnswerSeconds = setup["shortAnswerSeconds"] as! Int
        var cases: [String: Case] = [:]
        for (name, value) in setup["cases"] as! [String: [String: Any]] {
            let e = value["expect"] as! [String: Any]
            cases[name] = Case(name: name,
                               jws: try (value["jws"] as! [String]).map { try Paths.text(URL(fileURLWithPath: $0)) },
                               status: e["status"] as! String, reason: e["reason"] as? String,
                               requests: e["requests"] as! Int, messageContains: e["messageContains"] as? [String] ?? [])
        }
        self.cases = cases
    }

    func verifier(_ transport: any BlockingHTTPTransport, cache: ChainCacheConfiguration = .default,
                  timeoutMilliseconds: UInt32 = 10_000) throws -> SignedDataVerifier {
        try SignedDataVerifier(rootCertificates: [root], bundleId: bundleId, appAppleId: nil, environment: .sandbox,
                               enableOnlineChecks: true, chainCache: cache, transport: transport,
                               ocspTimeoutMilliseconds: timeoutMilliseconds)
    }

    func jws(_ name: String, _ i: Int = 0) -> String { cases[name]!.jws[i] }

    /// A signer over one of the harness's leaves, for payloads of the tests' own.
    func signer(_ leaf: String = "good") throws -> TestSigner {
        try TestSigner(dir: dir, leaf: "leaf_\(leaf).der", keyFile: "leaf_\(leaf).key.pem")
    }
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
        #expect(h.cases.count >= 12)
        for c in h.cases.values.sorted(by: { $0.name < $1.name }) {
            let t = SocketTransport()
            let v = try h.verifier(t, timeoutMilliseconds: c.name == "responder_slow" ? 2500 : 10_000)
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
            if c.name == "responder_slow" {
                #expect(elapsed < 5.5, "the slow responder case took \(elapsed) s; the timeout is 2.5 s, the relay waits 6 s")
            }
        }
    }

    /// A burst of payloads under one chain costs one OCSP exchange per certificate within the TTL.
    @Test func oneExchangePerCertificateWithinTheTTL() throws {
        let h = try OCSPHarness.get()
        let t = SocketTransport()
        let v = try h.verifier(t)
        for round in 0..<5 {
            for i in 0..<h.cases["good"]!.jws.count {
                let tx = try v.verifyAndDecodeTransaction(signedTransaction: h.jws("good", i)).get()
                #expect(tx.transactionId == String(format: "30000000000000%02d", i), "round \(round)")
            }
        }
        #expect(t.requests == 2)
        #expect(v.chainCacheStatistics.misses == 1)
        #expect(v.chainCacheStatistics.hits == UInt64(5 * h.cases["good"]!.jws.count - 1))
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

    /// Failures are never cached: the next call asks again.
    @Test func failuresAreNotCached() throws {
        let h = try OCSPHarness.get()
        for (name, perCall) in [("responder_down", 2), ("leaf_revoked", 2), ("intermediate_revoked", 1)] {
            let t = SocketTransport()
            let v = try h.verifier(t)
            for call in 1...3 {
                #expect(failure(v.verifyAndDecodeTransaction(signedTransaction: h.jws(name))) != nil, "\(name)")
                #expect(t.requests == perCall * call, "\(name): call \(call) made \(t.requests) requests in all")
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
            _ = try SignedDataVerifier(rootCertificates: [h.root], bundleId: "b", appAppleId: nil, environment: .sandbox,
                                       enableOnlineChecks: true)
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
        #expect(runThreads(8) { thread in
            (0..<25).filter { i in failure(v.verifyAndDecodeTransaction(signedTransaction: jws[(thread + i) % jws.count])) != nil }.count
        } == 0)
        #expect(t.requests == 2)
        #expect(v.chainCacheStatistics.entries == 1)
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
