import Foundation
import Testing
import AppStoreServer

// Hostile receipts: every input here must give a ReceiptError — never a trap, never a long run.

/// Minimal DER writing for hand-made hostile structures.
enum HostileDER {
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let n = content.count
        if n < 0x80 { return [tag, UInt8(n)] + content }
        var len: [UInt8] = []
        var v = n
        while v > 0 { len.insert(UInt8(v & 0xFF), at: 0); v >>= 8 }
        return [tag, 0x80 | UInt8(len.count)] + len + content
    }
    static let signedDataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
    static let dataOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]

    /// An unsigned PKCS#7 SignedData whose eContent OCTET STRING holds `payload` (or the raw `eContent` element).
    static func envelope(payload: [UInt8]? = nil, eContent: [UInt8]? = nil) -> [UInt8] {
        let content = eContent ?? tlv(0x04, payload ?? [])
        let encap = tlv(0x30, dataOID + tlv(0xA0, content))
        let signed = tlv(0x30, [0x02, 0x01, 0x01] + tlv(0x31, []) + encap + tlv(0x31, []))
        return tlv(0x30, signedDataOID + tlv(0xA0, signed))
    }
    static func attribute(_ type: UInt8, _ value: [UInt8]) -> [UInt8] {
        tlv(0x30, [0x02, 0x01, type, 0x02, 0x01, 0x01] + tlv(0x04, value))
    }
}

/// SplitMix64: deterministic pseudo-random bytes.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(1, n))) }
    mutating func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

@Suite struct ReceiptHostileTests {
    static let clock = ContinuousClock()
    /// The time bounds below are on cost, not a benchmark (benchmarks/run hostile measures that): >= 4x the slowest run
    /// seen with both cores of a 2-core machine busy and other suites running at once (12 s for the mutated receipts,
    /// under 3 s for the others), and far below what a parser super-linear in depth or length would take here.

    /// Verifier and extractor must both reject `der`, with a reason.
    static func rejects(_ der: [UInt8], verifier: ReceiptVerifier?, _ what: String) -> Bool {
        var ok = true
        do { _ = try AppReceipt(der: der); Issue.record("\(what): the parser accepted it"); ok = false } catch {}
        if let verifier {
            do { _ = try verifier.verify(appReceiptDER: der); Issue.record("\(what): the verifier accepted it"); ok = false } catch {}
        }
        return ok
    }

    static func appleVerifier() throws -> ReceiptVerifier? {
        guard Paths.conformanceAvailable else { return nil }
        return try ReceiptVerifier(rootCertificates: [try RealReceipts.appleIncRoot()])
    }

    @Test func ownReceiptsTruncatedAtEveryLength() throws {
        let base = Paths.receiptFixtures
        let verifier = try ReceiptVerifier(rootCertificates: [[UInt8](try Data(contentsOf: base.appendingPathComponent("root.der")))])
        let start = Self.clock.now
        for name in ["valid-full", "valid-ber-indefinite"] {
            let der = [UInt8](Data(base64Encoded: try Paths.text(base.appendingPathComponent("receipts/\(name).b64"))) ?? Data())
            #expect(try verifier.verify(appReceiptDER: der).receipt.bundleId == "com.example.receipts")
            for n in 0..<der.count where !Self.rejects(Array(der.prefix(n)), verifier: verifier, "\(name) truncated to \(n)") { break }
        }
        #expect(Self.clock.now - start < .seconds(120))
    }

    @Test func truncatedAtEveryLength() throws {
        guard Paths.conformanceAvailable else { print("receipts: SKIPPED truncation of real receipts (no ../shared)"); return }
        let verifier = try Self.appleVerifier()
        let start = Self.clock.now
        var checked = 0
        var inputs = try RealReceipts.all.map { try RealReceipts.der($0.file) }
        let xcodeText = try Paths.text(Paths.conformance.appendingPathComponent("xcode/receipts/xcode-app-receipt-with-transaction.b64"))
        inputs.append([UInt8](Data(base64Encoded: xcodeText) ?? Data()))
        for der in inputs {
            for n in 0..<der.count where !Self.rejects(Array(der.prefix(n)), verifier: verifier, "truncated to \(n)") { break }
            checked += der.count
        }
        // Truncated base64 text of the indefinite-length (Xcode) receipt.
        // (Stripping only '=' padding is tolerated, so the prefixes stop before it.)
        let unpadded = xcodeText.count - xcodeText.reversed().prefix { $0 == "=" }.count
        for n in 1..<unpadded {
            let prefix = String(xcodeText.prefix(n))
            #expect(ReceiptUtility.extractTransactionId(appReceipt: prefix) == nil, "base64 truncated to \(n)")
            checked += 1
        }
        let elapsed = Self.clock.now - start
        print("receipts: \(checked) truncated inputs rejected in \(elapsed)")
        #expect(elapsed < .seconds(120))
    }

    @Test func randomBytes() throws {
        var rng = SplitMix64(state: 0x5EED)
        let verifier = try Self.appleVerifier()
        let start = Self.clock.now
        for i in 0..<3000 {
            var bytes = rng.bytes(rng.below(600))
            // Half of them look like a receipt's start, to get past the first checks.
            if i % 2 == 0 { bytes = [0x30, i % 4 == 0 ? 0x80 : 0x82, 0x10, 0x00] + HostileDER.signedDataOID + [0xA0, 0x80] + bytes }
            if !Self.rejects(bytes, verifier: verifier, "random input \(i)") { break }
            _ = try? TransactionReceipt(base64: Data(bytes).base64EncodedString())
        }
        #expect(Self.clock.now - start < .seconds(120))
    }

    /// Bytes flipped anywhere in a real receipt: the parser may read it or not, but whatever the verifier accepts must
    /// decode to exactly what the genuine receipt does (no flip in signed data can get through).
    @Test func mutatedRealReceipt() throws {
        guard let verifier = try Self.appleVerifier() else { return }
        let der = try RealReceipts.der("sandbox-app-receipt-2020-07-22")
        let genuine = try verifier.verify(appReceiptDER: der).json()
        var rng = SplitMix64(state: 2020)
        var accepted = 0
        let start = Self.clock.now
        for i in 0..<1500 {
            var m = der
            for _ in 0...(i % 3) { m[rng.below(m.count)] ^= UInt8(truncatingIfNeeded: rng.next() | 1) }
            _ = try? AppReceipt(der: m)
            if let v = try? verifier.verify(appReceiptDER: m) {
                accepted += 1
                #expect(try v.json() == genuine, "mutation \(i) verified with different content")
            }
        }
        print("receipts: 1500 mutated copies, \(accepted) still verified (flips in unsigned parts), all with genuine content")
        #expect(Self.clock.now - start < .seconds(120))
    }

    @Test func deepNesting() throws {
        let start = Self.clock.now
        // Indefinite-length SEQUENCEs, 100,000 deep.
        let indefinite: [UInt8] = (0..<200_000).map { $0 % 2 == 0 ? 0x30 : 0x80 }
        #expect(Self.rejects(indefinite, verifier: try Self.appleVerifier(), "100,000 nested indefinite SEQUENCEs"))
        do throws(ReceiptError) {
            _ = try AppReceipt(der: indefinite)
        } catch {
            #expect(error.reason == .receiptMalformed)
            #expect(error.message.contains("nesting deeper"))
        }
        // Definite-length nesting, 20,000 deep, as the whole input and as the receipt payload.
        var nested: [UInt8] = [0x05, 0x00]
        for _ in 0..<20_000 { nested = HostileDER.tlv(0x31, nested) }
        #expect(Self.rejects(nested, verifier: nil, "20,000 nested SETs"))
        #expect(Self.rejects(HostileDER.envelope(payload: nested), verifier: nil, "nested SETs as payload"))
        // Nested in-app records: attribute 17 holding attribute 17 holding ...
        var record = HostileDER.tlv(0x31, [])
        for _ in 0..<2000 { record = HostileDER.tlv(0x31, HostileDER.attribute(17, record)) }
        _ = try? AppReceipt(der: HostileDER.envelope(payload: record))  // one level is read; deeper ones are not attributes of interest
        // Constructed OCTET STRINGs inside constructed OCTET STRINGs as eContent.
        let octets: [UInt8] = (0..<100_000).map { $0 % 2 == 0 ? 0x24 : 0x80 }
        #expect(Self.rejects(HostileDER.envelope(eContent: octets), verifier: nil, "nested constructed OCTET STRINGs"))
        #expect(Self.clock.now - start < .seconds(60))
    }

    @Test func indefiniteLengthsWithoutEnd() throws {
        let start = Self.clock.now
        let inputs: [[UInt8]] = [
            [0x30, 0x80],
            [0x30, 0x80, 0x02, 0x01, 0x00],
            [0x30, 0x80, 0x02, 0x01, 0x00, 0x00],
            [0x30, 0x80] + HostileDER.signedDataOID + [0xA0, 0x80, 0x30, 0x80, 0x02, 0x01, 0x01],
            [0x30, 0x80, 0x04, 0x80, 0x00, 0x00],  // indefinite length on a primitive element
            HostileDER.envelope(payload: [0x31, 0x80, 0x30, 0x03, 0x02, 0x01, 0x11]),
            HostileDER.envelope(eContent: [0x24, 0x80, 0x04, 0x01, 0x31]),
        ]
        for (i, der) in inputs.enumerated() { #expect(Self.rejects(der, verifier: try Self.appleVerifier(), "input \(i)")) }
        #expect(Self.clock.now - start < .seconds(60))
    }

    @Test func absurdLengths() throws {
        let headers: [[UInt8]] = [
            [0x30, 0x88, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],  // 2^63 - 1
            [0x30, 0x88, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],  // 2^63
            [0x30, 0x88, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],  // 2^64 - 1
            [0x30, 0x89, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],  // 9 length bytes
            [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x30, 0xFF],
            [0x30, 0x82],
            [0x1F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x00],  // tag number too long
        ]
        var inputs = headers.map { $0 + [0x06, 0x09, 0x2A, 0x86] }
        // The same lengths inside an otherwise well-formed receipt: on the payload SET, on an attribute's value.
        for h in headers where h.first == 0x30 {
            inputs.append(HostileDER.envelope(payload: [0x31] + h.dropFirst() + [0x30, 0x00]))
            inputs.append(HostileDER.envelope(payload: HostileDER.tlv(0x31, HostileDER.tlv(0x30,
                [0x02, 0x01, 0x11, 0x02, 0x01, 0x01, 0x04] + h.dropFirst()))))
        }
        // An attribute type INTEGER of 100 bytes.
        inputs.append(HostileDER.envelope(payload: HostileDER.tlv(0x31, HostileDER.tlv(0x30,
            HostileDER.tlv(0x02, [0x01] + [UInt8](repeating: 0, count: 99)) + [0x02, 0x01, 0x01, 0x04, 0x00]))))
        let start = Self.clock.now
        for (i, der) in inputs.enumerated() { #expect(Self.rejects(der, verifier: try Self.appleVerifier(), "input \(i)")) }
        #expect(Self.clock.now - start < .seconds(60))
    }

    @Test func sizeLimitAndEmptyInputs() throws {
        let huge = String(repeating: "A", count: 16 * 1024 * 1024 + 4)
        do throws(ReceiptError) { _ = try AppReceipt(base64: huge); Issue.record("a 16 MiB+ receipt was accepted") } catch {
            #expect(error.message.contains("more than"))
        }
        for text in ["", "   \n", "====", "A", "AA==x"] {
            #expect(throws: ReceiptError.self) { try AppReceipt(base64: text) }
            #expect(throws: ReceiptError.self) { try TransactionReceipt(base64: text) }
        }
        // Structures that parse as BER but are not a receipt.
        let notReceipts: [[UInt8]] = [
            HostileDER.tlv(0x30, [0x06, 0x03, 0x2A, 0x03, 0x04] + HostileDER.tlv(0xA0, [])),  // other content type
            HostileDER.envelope(payload: HostileDER.tlv(0x30, [])),                           // payload not a SET
            HostileDER.envelope(payload: HostileDER.tlv(0x31, [0x05, 0x00])),                 // attribute not a SEQUENCE
            HostileDER.envelope(payload: HostileDER.tlv(0x31, HostileDER.attribute(17, [0x05, 0x00]))),  // in-app not a SET
            HostileDER.envelope(payload: HostileDER.tlv(0x31, HostileDER.attribute(17, HostileDER.tlv(0x31,
                HostileDER.attribute(0xB3, [0x02, 0x01, 0x05]))))) + [0x00],               // trailing byte
        ]
        for (i, der) in notReceipts.enumerated() { #expect(Self.rejects(der, verifier: nil, "not a receipt \(i)")) }
        // And one that is: an unsigned envelope parses (extraction checks no signature), but never verifies.
        let unsigned = HostileDER.envelope(payload: HostileDER.tlv(0x31, HostileDER.attribute(17, HostileDER.tlv(0x31,
            HostileDER.tlv(0x30, [0x02, 0x02, 0x06, 0xA7, 0x02, 0x01, 0x01] + HostileDER.tlv(0x04, [0x0C, 0x02, 0x34, 0x32]))))))
        #expect(try AppReceipt(der: unsigned).firstTransactionId == "42")
        if let verifier = try Self.appleVerifier() {
            #expect(reasonOf { _ = try verifier.verify(appReceiptDER: unsigned) } == "signer_missing")
        }
    }
}
