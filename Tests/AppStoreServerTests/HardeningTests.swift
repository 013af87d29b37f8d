import Foundation
import Testing
@testable import AppStoreServer

/// What an attacker (a hostile server, a forged input, a misused argument) must not get through the core. The
/// hostile-server exchanges themselves are tested per transport (TransportTests, the C, Python, Node and tool tests).
@Suite struct HardeningTests {
    static let ids = SigningFixtures.ids

    /// Apple's API never redirects: a 3xx is an error naming its status and Location, never a success.
    @Test func redirectsAreErrorsNamingTheLocation() {
        for status in [301, 302, 303, 307, 308] {
            let response = HTTPResponse(status: status, headers: [HTTPHeader("location", "http://127.0.0.1:9/caught\u{1B}[2J")])
            let error = AppStoreServerAPIResponseDecoder.error(endpoint: .getTransactionInfo, response: response)
            #expect(error.kind == .httpError)
            #expect(error.httpStatusCode == status)
            #expect(error.message.contains("HTTP \(status) redirect to \"http://127.0.0.1:9/caught [2J\" refused"), "\(error.message)")
            #expect(!error.message.unicodeScalars.contains { $0.value < 0x20 })
            #expect(throws: AppStoreServerAPIError.self) {
                _ = try AppStoreServerAPIResponseDecoder.json(endpoint: .getTransactionInfo, response: response)
            }
        }
        let bare = AppStoreServerAPIResponseDecoder.error(endpoint: .getTransactionInfo, response: HTTPResponse(status: 302))
        #expect(bare.message.contains("redirect without a Location refused"))
    }

    /// Apple's errorMessage is network text: control characters and escape sequences are removed, its length capped
    /// (in the message and in the errorMessage attribute alike).
    @Test func applesErrorMessageIsCleanedAndCapped() throws {
        let hostile = "\u{1B}[2J\u{1B}]0;pwned\u{07}\r\nX-Injected: 1\u{00}\u{08}\u{7F}\u{9B}\u{202E}" + String(repeating: "A", count: 15 << 20)
        let body = try JSONSerialization.data(withJSONObject: ["errorCode": 4000006, "errorMessage": hostile])
        let error = AppStoreServerAPIResponseDecoder.error(endpoint: .getTransactionInfo,
                                                          response: HTTPResponse(status: 400, body: [UInt8](body)))
        #expect(error.rawApiError == 4000006)
        for text in [error.message, try #require(error.errorMessage)] {
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x202E }, "\(text.prefix(80))")
            #expect(text.count < 2048, "\(text.count) characters")
            #expect(text.contains("X-Injected: 1"))
            #expect(text.contains("more characters not shown"))
        }
    }

    /// Key material pasted where a URL, an identifier or a nonce goes never reaches a message.
    @Test func keyMaterialIsNeverQuoted() throws {
        let pem = try SigningFixtures.pem("p256.p8")
        let bodyLines = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
        func clean(_ message: String, _ what: String) {
            #expect(!message.contains("PRIVATE KEY"), "\(what): \(message)")
            for line in bodyLines { #expect(!message.contains(line.prefix(24)), "\(what): key material in \(message)") }
        }
        let key = try SigningFixtures.key()
        do {
            _ = try AppStoreServerAPIRequestBuilder(signingKey: key, keyId: "k", issuerId: "i", bundleId: "b",
                                                    environment: .sandbox, baseURL: pem)
            Issue.record("a PEM base URL was accepted")
        } catch { clean(error.message, "base URL") }
        let v1 = try PromotionalOfferSignatureCreator(signingKey: key, keyId: "k", bundleId: "b")
        do {
            _ = try v1.createSignature(productIdentifier: "p", subscriptionOfferID: "o", nonce: pem)
            Issue.record("a PEM nonce was accepted")
        } catch { clean(error.message, "nonce") }
        do {
            _ = try SignedDataVerifier(rootCertificates: [[UInt8]](), bundleId: pem, appAppleId: nil, environment: .sandbox,
                                       enableOnlineChecks: false, transport: nil)
                .verifyAndDecodeTransaction(signedTransaction: "a.b.c")
        } catch { clean("\(error)", "bundle id") }
        #expect(QuotedText.quote(pem) == QuotedText.pemDescription)
        #expect(QuotedText.quote(String(bodyLines.joined())) == QuotedText.pemDescription)
        #expect(QuotedText.quote("com.example\u{1B}[2J") == "\"com.example[2J\"")
    }

    /// A .p8 whose private scalar was damaged still parses; it must be refused, not sign with a key Apple never saw.
    @Test func aCorruptedKeyIsRefused() throws {
        let corrupt = try SigningFixtures.pem("corrupt.p8")
        do {
            _ = try SigningKey(pem: corrupt)
            Issue.record("a key whose scalar does not match its public key was accepted")
        } catch {
            #expect(error.kind == .malformed)
            #expect(error.statusCode == .invalidKey)
            #expect(error.message.contains("does not match the public key"))
        }
        _ = try SigningFixtures.key()  // the intact key still loads
    }

    /// U+2063 separates the fields of a v1 promotional offer signature: inside a field it would make two different
    /// offers sign the same text (product "a\u{2063}b" + offer "c" == product "a" + offer "b\u{2063}c").
    @Test func theV1SeparatorIsRefusedInsideFields() throws {
        let v1 = try PromotionalOfferSignatureCreator(signingKey: try SigningFixtures.key(), keyId: "k", bundleId: "b")
        let nonce = "6f1f3a2e-8a4e-4f65-9d43-1f6d2b6f6f6f"
        let a = v1.payload(productIdentifier: "a\u{2063}b", subscriptionOfferID: "c", appAccountToken: "", nonce: nonce, timestamp: 1)
        let b = v1.payload(productIdentifier: "a", subscriptionOfferID: "b\u{2063}c", appAccountToken: "", nonce: nonce, timestamp: 1)
        #expect(a == b)  // why the check exists
        for (product, offer, token) in [("a\u{2063}b", "c", ""), ("a", "b\u{2063}c", ""), ("a", "c", "\u{2063}")] {
            do {
                _ = try v1.createSignature(productIdentifier: product, subscriptionOfferID: offer, appAccountToken: token, nonce: nonce)
                Issue.record("\(product.debugDescription)/\(offer.debugDescription)/\(token.debugDescription): signed")
            } catch {
                #expect(error.reason == .invalidArgument)
                #expect(error.message.contains("U+2063"))
            }
        }
        let withSeparator = try PromotionalOfferSignatureCreator(signingKey: try SigningFixtures.key(), keyId: "k\u{2063}", bundleId: "b")
        #expect(throws: SigningError.self) { try withSeparator.createSignature(productIdentifier: "p", subscriptionOfferID: "o") }
    }

    /// Duplicate detection is linear: 100k distinct keys parse, and a duplicate far into a large object is found.
    @Test func largeObjectsParseAndDuplicatesAreFoundAnywhere() throws {
        var text = "{" + (0..<100_000).map { "\"k\($0)\":0" }.joined(separator: ",") + "}"
        guard case .object(let members) = try JSONParser.parse(Array(text.utf8)) else { Issue.record("not an object"); return }
        #expect(members.count == 100_000)
        text.removeLast()
        text += ",\"k99999\":1}"
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array(text.utf8)) }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Array("{\"a\":1,\"b\":2,\"a\":3}".utf8)) }
    }
}

/// Notifications v2.17 (Apple's changelog of 2025-06-26): subtypes CREATED and ACTIVE_TOKEN_REMINDER; an external
/// purchase token's tokenType and tokenExpirationDate. Signed by the own PKI (Tests/support/testpki.py).
@Suite struct NotificationsV217Tests {
    func decode(_ id: String) throws -> ResponseBodyV2DecodedPayload {
        let root = [UInt8](try Paths.read(Paths.testPKI.appendingPathComponent("root.der")))
        let verifier = try SignedDataVerifier(rootCertificates: [root], bundleId: "com.example.testpki", appAppleId: nil,
                                              environment: .sandbox, enableOnlineChecks: false, transport: nil)
        let jws = try Paths.text(Paths.testPKI.appendingPathComponent("jws/\(id).jws")).trimmingCharacters(in: .whitespacesAndNewlines)
        return try verifier.verifyAndDecodeNotification(signedPayload: jws).get()
    }

    @Test func customLinkTokens() throws {
        let created = try decode("notif-valid-external-purchase-token-created")
        #expect(created.notificationType == .externalPurchaseToken)
        #expect(created.subtype == .created && created.subtype?.isKnown == true)
        #expect(created.externalPurchaseToken?.tokenType == .acquisition)
        #expect(created.externalPurchaseToken?.tokenExpirationDate == 1_764_493_200_000)  // 2025-11-30T09:00:00Z
        let reminder = try decode("notif-valid-external-purchase-token-active-token-reminder")
        #expect(reminder.subtype == .activeTokenReminder && reminder.subtype?.rawValue == "ACTIVE_TOKEN_REMINDER")
        #expect(reminder.externalPurchaseToken?.tokenType == .services)
        let unknown = try decode("notif-valid-external-purchase-token-unknown-token-type")
        #expect(unknown.externalPurchaseToken?.tokenType?.rawValue == "LINK_OUT")
        #expect(unknown.externalPurchaseToken?.tokenType?.isKnown == false)
    }
}
