// The `sign` group: bearer tokens and Apple's signature creators through the Swift API, one SigningKey and one
// creator per case (as a server keeps them), fresh issued-at / timestamp / nonce on every call (as in production).
//
// Every call's result is checked cheaply: a JWS must start with the same "header." segment as the first one and
// have a payload segment and exactly one more dot followed by 86 base64url characters (64-byte r||s); a v1
// signature must be 88-96 standard base64 characters with a 36-character nonce. The last result of every timed run
// is printed as `SAMPLE swift <case> ...`; benchmarks/run verifies every sample with OpenSSL afterwards
// (benchmarks/c/sign_check.c: signature, header and claims), independently of this library.
import AppStoreServer
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

enum SignBench {
    // The identifiers of benchmarks/c/sign_common.h: sign_check checks the claims against those.
    static let keyId = "BENCHKEY01"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let bundleId = "com.example.bench"
    static let productId = "com.example.bench.monthly"
    static let offerId = "WINBACK_50"
    static let appAccountToken = "7e3b0c44-98fc-4c14-9afb-f4c8996fb924"
    static let transactionId = "2000000123456789"

    /// SIGN_AC_REQUEST_JSON of sign_common.h (the input of advanced_commerce_in_app_json)...
    static let requestJSON = #"{"operation":"CREATE_SUBSCRIPTION","currency":"USD","taxCode":"C003-00-1","period":"P1M","#
        + #""descriptors":{"description":"Pro","displayName":"Pro"},"#
        + #""requestInfo":{"requestReferenceId":"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"},"#
        + #""items":[{"description":"Pro plan","displayName":"Pro monthly","price":1990,"SKU":"com.example.pro.monthly","#
        + #""offer":{"period":"P1M","periodCount":3,"price":990,"reason":"ACQUISITION"}}]}"#

    /// ...and the same request as the model (the input of advanced_commerce_in_app).
    static func subscriptionCreate() -> AdvancedCommerceSubscriptionCreateRequest {
        AdvancedCommerceSubscriptionCreateRequest(
            currency: "USD", descriptors: AdvancedCommerceDescriptors(description: "Pro", displayName: "Pro"),
            items: [AdvancedCommerceSubscriptionCreateItem(
                description: "Pro plan", displayName: "Pro monthly",
                offer: AdvancedCommerceOffer(period: .p1M, periodCount: 3, price: 990, reason: .acquisition),
                price: 1990, sku: "com.example.pro.monthly")],
            period: .p1M,
            requestInfo: AdvancedCommerceRequestInfo(requestReferenceId: UUID(uuidString: "3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11")!),
            taxCode: "C003-00-1")
    }

    /// The last JWS of a case and the header segment every JWS of that case must start with.
    final class LastJWS {
        let name: String
        var token = ""
        var prefix: [UInt8] = []  // "header." of the first result
        init(_ name: String) { self.name = name }

        func check(_ result: String) {
            var t = result
            let ok = t.withUTF8 { b -> Bool in
                let dot = UInt8(ascii: ".")
                if prefix.isEmpty {
                    guard let d1 = b.firstIndex(of: dot), d1 >= 16 else { return false }
                    prefix = Array(b[...d1])
                }
                guard b.count > prefix.count,
                      b[..<prefix.count].elementsEqual(prefix),
                      let d2 = b[prefix.count...].firstIndex(of: dot), d2 - prefix.count >= 16,
                      b.count - d2 - 1 == 86, !b[(d2 + 1)...].contains(dot)
                else { return false }
                return true
            }
            if !ok { Bench.fail("\(name): malformed JWS: \(result.prefix(120))") }
            token = result
        }
    }

    static func run(_ o: Options) {
        if o.key.isEmpty { AppStoreBench.usage("sign needs --key KEY.p8 (a P-256 PKCS#8 private key)") }
        guard let pem = try? Data(contentsOf: URL(fileURLWithPath: o.key)) else { Bench.fail("cannot read \(o.key)") }
        let key: SigningKey
        do { key = try SigningKey(pem: String(decoding: pem, as: UTF8.self)) } catch {
            Bench.fail("cannot load \(o.key): \(error)")
        }
        // Signing takes no per-call input: Bench.measure cycles over this one placeholder.
        let inputs = ["-"]

        func jwsCase(_ name: String, _ make: () throws(SigningError) -> String) {
            let last = LastJWS(name)
            Bench.measure(name, o, inputs, afterRun: { print("SAMPLE swift \(name) \(last.token)") }) { _, _ in
                do { last.check(try make()) } catch { Bench.fail("\(name): \(error)") }
                return 1
            }
        }

        jwsCase("api_token") { () throws(SigningError) -> String in
            try AppStoreServerAPIToken.create(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId)
        }

        if o.wants("promotional_offer_v1") {
            let v1: PromotionalOfferSignatureCreator
            do { v1 = try PromotionalOfferSignatureCreator(signingKey: key, keyId: keyId, bundleId: bundleId) } catch {
                Bench.fail("promotional_offer_v1: \(error)")
            }
            var last: PromotionalOfferV1Signature?
            Bench.measure("promotional_offer_v1", o, inputs, afterRun: {
                if let s = last { print("SAMPLE swift promotional_offer_v1 \(s.signature) \(s.nonce) \(s.timestamp)") }
            }) { _, _ in
                let s: PromotionalOfferV1Signature
                do {
                    s = try v1.createSignature(productIdentifier: productId, subscriptionOfferID: offerId,
                                               appAccountToken: appAccountToken)
                } catch { Bench.fail("promotional_offer_v1: \(error)") }
                guard (88...96).contains(s.signature.utf8.count), s.nonce.utf8.count == 36,
                      s.timestamp > 1_600_000_000_000
                else { Bench.fail("promotional_offer_v1: malformed result \(s)") }
                last = s
                return 1
            }
        }

        if o.wants("promotional_offer_v2") {
            let v2: PromotionalOfferV2SignatureCreator
            do { v2 = try PromotionalOfferV2SignatureCreator(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId) } catch {
                Bench.fail("promotional_offer_v2: \(error)")
            }
            jwsCase("promotional_offer_v2") { () throws(SigningError) -> String in
                try v2.createSignature(productId: productId, offerIdentifier: offerId, transactionId: transactionId)
            }
        }

        if o.wants("introductory_offer_eligibility") {
            let intro: IntroductoryOfferEligibilitySignatureCreator
            do { intro = try IntroductoryOfferEligibilitySignatureCreator(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId) } catch {
                Bench.fail("introductory_offer_eligibility: \(error)")
            }
            jwsCase("introductory_offer_eligibility") { () throws(SigningError) -> String in
                try intro.createSignature(productId: productId, allowIntroductoryOffer: true, transactionId: transactionId)
            }
        }

        if o.wants("advanced_commerce_in_app") || o.wants("advanced_commerce_in_app_json") {
            let ac: AdvancedCommerceInAppSignatureCreator
            do { ac = try AdvancedCommerceInAppSignatureCreator(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId) } catch {
                Bench.fail("advanced_commerce_in_app: \(error)")
            }
            let request = subscriptionCreate()
            jwsCase("advanced_commerce_in_app") { () throws(SigningError) -> String in
                try ac.createSignature(advancedCommerceInAppRequest: request)
            }
            let json = Array(requestJSON.utf8)
            jwsCase("advanced_commerce_in_app_json") { () throws(SigningError) -> String in
                try ac.createSignature(requestJSON: json)
            }
        }
    }
}
