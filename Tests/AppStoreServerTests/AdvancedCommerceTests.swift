import Foundation
import Testing
@testable import AppStoreServer

enum AdvancedCommerceFixtures {
    static let requestInfo = AdvancedCommerceRequestInfo(requestReferenceId: UUID(uuidString: "3E9C1F5B-5A4E-4F0A-9C2E-1D7C1F2B6A11")!)

    static func subscriptionCreate(description: String = "Pro plan", periodCount: Int32 = 3,
                                   items: [AdvancedCommerceSubscriptionCreateItem]? = nil) -> AdvancedCommerceSubscriptionCreateRequest {
        AdvancedCommerceSubscriptionCreateRequest(
            currency: "USD", descriptors: AdvancedCommerceDescriptors(description: "Pro", displayName: "Pro"),
            items: items ?? [AdvancedCommerceSubscriptionCreateItem(
                description: description, displayName: "Pro monthly",
                offer: AdvancedCommerceOffer(period: .p1M, periodCount: periodCount, price: 990, reason: .acquisition),
                price: 1990, sku: "com.example.pro.monthly")],
            period: .p1M, requestInfo: requestInfo, taxCode: "C003-00-1")
    }

    static let fullRequestInfo = AdvancedCommerceRequestInfo(
        appAccountToken: UUID(uuidString: "7F3B2A10-8C4D-4E5F-9A6B-0C1D2E3F4A5B")!, consistencyToken: "ct-1",
        requestReferenceId: UUID(uuidString: "3E9C1F5B-5A4E-4F0A-9C2E-1D7C1F2B6A11")!)
    static let fullRequestInfoJSON = #"{"requestReferenceId":"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11","appAccountToken":"7f3b2a10-8c4d-4e5f-9a6b-0c1d2e3f4a5b","consistencyToken":"ct-1"}"#
    static let minimalRequestInfoJSON = #"{"requestReferenceId":"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"}"#

    /// Known answers: a request model and, written out by hand, the exact JSON its `request` claim must decode to
    /// (every key Apple requires, every optional key given, nothing else). The "full" variants use every key of the
    /// model at every level; the "minimal" ones only the required keys (absent optionals must stay absent).
    static let knownAnswers: [(name: String, request: any AdvancedCommerceInAppRequest, json: String)] = [
        ("one-time charge (full)",
         AdvancedCommerceOneTimeChargeCreateRequest(
            currency: "EUR", item: AdvancedCommerceOneTimeChargeItem(description: "Gems", displayName: "500 gems", sku: "gems.500", price: 4990),
            requestInfo: fullRequestInfo, storefront: "FRA", taxCode: "C003-00-2"),
         #"{"operation":"CREATE_ONE_TIME_CHARGE","version":"1","currency":"EUR","taxCode":"C003-00-2","storefront":"FRA","requestInfo":\#(fullRequestInfoJSON),"item":{"description":"Gems","displayName":"500 gems","SKU":"gems.500","price":4990}}"#),
        ("one-time charge (minimal)",
         AdvancedCommerceOneTimeChargeCreateRequest(
            currency: "USD", item: AdvancedCommerceOneTimeChargeItem(description: "d", displayName: "n", sku: "s", price: 1),
            requestInfo: requestInfo, taxCode: "C003"),
         #"{"operation":"CREATE_ONE_TIME_CHARGE","version":"1","currency":"USD","taxCode":"C003","requestInfo":\#(minimalRequestInfoJSON),"item":{"description":"d","displayName":"n","SKU":"s","price":1}}"#),
        ("modify subscription (full)",
         AdvancedCommerceSubscriptionModifyInAppRequest(
            addItems: [AdvancedCommerceSubscriptionModifyAddItem(
                description: "Extra storage", displayName: "Storage", offer: AdvancedCommerceOffer(period: .p1W, periodCount: 2, price: 0, reason: .retention),
                price: 990, proratedPrice: 330, sku: "storage.1tb")],
            changeItems: [AdvancedCommerceSubscriptionModifyChangeItem(
                currentSku: "pro.monthly", description: "Pro yearly", displayName: "Pro", effective: .nextBillCycle,
                offer: AdvancedCommerceOffer(period: .p1M, periodCount: 1, price: 500, reason: .winBack),
                price: 19990, proratedPrice: 12000, reason: .upgrade, sku: "pro.yearly")],
            currency: "USD",
            descriptors: AdvancedCommerceSubscriptionModifyDescriptors(description: "Pro+", displayName: "Pro plus", effective: .immediately),
            periodChange: AdvancedCommerceSubscriptionModifyPeriodChange(effective: .nextBillCycle, period: .p1Y),
            removeItems: [AdvancedCommerceSubscriptionModifyRemoveItem(sku: "legacy.addon")],
            requestInfo: fullRequestInfo, retainBillingCycle: true, storefront: "USA", taxCode: "C003-00-1",
            transactionId: "2000000000000001"),
         #"""
         {"operation":"MODIFY_SUBSCRIPTION","version":"1","currency":"USD","storefront":"USA","taxCode":"C003-00-1",
          "retainBillingCycle":true,"transactionId":"2000000000000001","requestInfo":\#(fullRequestInfoJSON),
          "addItems":[{"description":"Extra storage","displayName":"Storage","price":990,"proratedPrice":330,"SKU":"storage.1tb",
                       "offer":{"period":"P1W","periodCount":2,"price":0,"reason":"RETENTION"}}],
          "changeItems":[{"currentSKU":"pro.monthly","description":"Pro yearly","displayName":"Pro","effective":"NEXT_BILL_CYCLE",
                          "price":19990,"proratedPrice":12000,"reason":"UPGRADE","SKU":"pro.yearly",
                          "offer":{"period":"P1M","periodCount":1,"price":500,"reason":"WIN_BACK"}}],
          "descriptors":{"description":"Pro+","displayName":"Pro plus","effective":"IMMEDIATELY"},
          "periodChange":{"effective":"NEXT_BILL_CYCLE","period":"P1Y"},
          "removeItems":[{"SKU":"legacy.addon"}]}
         """#),
        ("modify subscription (minimal)",
         AdvancedCommerceSubscriptionModifyInAppRequest(requestInfo: requestInfo, retainBillingCycle: false, transactionId: "2000000000000002"),
         #"{"operation":"MODIFY_SUBSCRIPTION","version":"1","retainBillingCycle":false,"transactionId":"2000000000000002","requestInfo":\#(minimalRequestInfoJSON)}"#),
        ("reactivate subscription (full)",
         AdvancedCommerceSubscriptionReactivateInAppRequest(
            items: [AdvancedCommerceSubscriptionReactivateItem(sku: "pro.monthly"), AdvancedCommerceSubscriptionReactivateItem(sku: "storage.1tb")],
            requestInfo: fullRequestInfo, storefront: "GBR", transactionId: "2000000000000003"),
         #"{"operation":"REACTIVATE_SUBSCRIPTION","version":"1","storefront":"GBR","transactionId":"2000000000000003","requestInfo":\#(fullRequestInfoJSON),"items":[{"SKU":"pro.monthly"},{"SKU":"storage.1tb"}]}"#),
        ("reactivate subscription (minimal)",
         AdvancedCommerceSubscriptionReactivateInAppRequest(requestInfo: requestInfo, transactionId: "2000000000000004"),
         #"{"operation":"REACTIVATE_SUBSCRIPTION","version":"1","transactionId":"2000000000000004","requestInfo":\#(minimalRequestInfoJSON)}"#),
    ]

    /// JSON text as an object (for expectations).
    static func object(_ json: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] ?? [:]
    }

    /// Canonical text (sorted keys) of a JSON value: equal only when keys, values and JSON types are all equal.
    static func canonical(_ value: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]) else { return "<not JSON>" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Signed items for the independent checker; `request` is what the claim must decode to (JSON keys as Apple's).
    static func items(key: SigningKey, base: [String: Any]) -> [[String: Any]] {
        guard let creator = try? AdvancedCommerceInAppSignatureCreator(
            signingKey: key, keyId: base["kid"] as? String ?? "", issuerId: base["iss"] as? String ?? "", bundleId: base["bid"] as? String ?? "")
        else { return [] }
        let request: [String: Any] = [
            "operation": "CREATE_SUBSCRIPTION", "version": "1", "currency": "USD", "taxCode": "C003-00-1", "period": "P1M",
            "descriptors": ["description": "Pro", "displayName": "Pro"],
            "requestInfo": ["requestReferenceId": "3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"],  // lowercase on the wire
            "items": [["description": "Pro plan", "displayName": "Pro monthly", "price": 1990, "SKU": "com.example.pro.monthly",
                       "offer": ["period": "P1M", "periodCount": 3, "price": 990, "reason": "ACQUISITION"]]],
        ]
        var out: [[String: Any]] = []
        if let jws = try? creator.createSignature(advancedCommerceInAppRequest: subscriptionCreate()) {
            out.append(["kind": "advanced_commerce", "name": "subscription create (model)", "value": jws,
                        "expect": base.merging(["request": request]) { $1 }])
        }
        // The JSON entry point (C ABI): the same request without operation-derived fields supplied by the caller.
        if let json = try? JSONSerialization.data(withJSONObject: request),
           let jws = try? creator.createSignature(requestJSON: [UInt8](json)) {
            out.append(["kind": "advanced_commerce", "name": "subscription create (JSON)", "value": jws,
                        "expect": base.merging(["request": request]) { $1 }])
        }
        // Exact shapes (the checker compares the whole decoded claim, JSON types included), from the model and
        // from the same JSON through the JSON entry point.
        for answer in knownAnswers {
            if let jws = try? creator.createSignature(advancedCommerceInAppRequest: answer.request) {
                out.append(["kind": "advanced_commerce", "name": "\(answer.name) (model)", "value": jws,
                            "expect": base.merging(["request": object(answer.json)]) { $1 }])
            }
            if let jws = try? creator.createSignature(requestJSON: Array(answer.json.utf8)) {
                out.append(["kind": "advanced_commerce", "name": "\(answer.name) (JSON)", "value": jws,
                            "expect": base.merging(["request": object(answer.json)]) { $1 }])
            }
        }
        return out
    }
}

@Suite struct AdvancedCommerceTests {
    func creator() throws -> AdvancedCommerceInAppSignatureCreator {
        try AdvancedCommerceInAppSignatureCreator(signingKey: SigningFixtures.key(), keyId: "K", issuerId: "I", bundleId: "B")
    }

    func requestClaim(_ jws: String) throws -> [String: Any] {
        let claims = try JSONSerialization.jsonObject(with: Data(base64Encoded: jws.split(separator: ".")[1]
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/").padding(toLength: ((jws.split(separator: ".")[1].count + 3) / 4) * 4, withPad: "=", startingAt: 0))!) as! [String: Any]
        return try JSONSerialization.jsonObject(with: Data(base64Encoded: claims["request"] as! String)!) as! [String: Any]
    }

    @Test func everyRequestCarriesOperationAndVersion() throws {
        let c = try creator()
        let info = AdvancedCommerceFixtures.requestInfo
        let requests: [(any AdvancedCommerceInAppRequest, String)] = [
            (AdvancedCommerceOneTimeChargeCreateRequest(currency: "EUR", item: AdvancedCommerceOneTimeChargeItem(
                description: "Gems", displayName: "500 gems", sku: "gems.500", price: 499), requestInfo: info, taxCode: "C003"), "CREATE_ONE_TIME_CHARGE"),
            (AdvancedCommerceFixtures.subscriptionCreate(), "CREATE_SUBSCRIPTION"),
            (AdvancedCommerceSubscriptionModifyInAppRequest(requestInfo: info, retainBillingCycle: true, transactionId: "2000000000000001"), "MODIFY_SUBSCRIPTION"),
            (AdvancedCommerceSubscriptionReactivateInAppRequest(requestInfo: info, transactionId: "2000000000000001"), "REACTIVATE_SUBSCRIPTION"),
        ]
        for (r, op) in requests {
            let claim = try requestClaim(try c.createSignature(advancedCommerceInAppRequest: r))
            #expect(claim["operation"] as? String == op)
            #expect(claim["version"] as? String == "1")
            #expect((claim["requestInfo"] as? [String: Any])?["requestReferenceId"] != nil)
        }
    }

    @Test func limitsAreEnforcedWithTheFieldNamed() throws {
        let c = try creator()
        func failure(_ r: some AdvancedCommerceInAppRequest) -> ModelValidationError? {
            do { _ = try c.createSignature(advancedCommerceInAppRequest: r); return nil }
            catch { if case .invalidRequest(let e) = error.kind { return e }; return nil }
        }
        #expect(failure(AdvancedCommerceFixtures.subscriptionCreate()) == nil)
        #expect(failure(AdvancedCommerceFixtures.subscriptionCreate(description: String(repeating: "x", count: 45))) == nil)
        #expect(failure(AdvancedCommerceFixtures.subscriptionCreate(description: String(repeating: "x", count: 46)))
                == ModelValidationError(field: "items[0].description", kind: .stringTooLong(maxLength: 45)))
        #expect(failure(AdvancedCommerceFixtures.subscriptionCreate(periodCount: 13))
                == ModelValidationError(field: "items[0].offer.periodCount", kind: .outOfRange(min: 1, max: 12)))
        #expect(failure(AdvancedCommerceFixtures.subscriptionCreate(periodCount: 0))?.field == "items[0].offer.periodCount")
        #expect(failure(AdvancedCommerceFixtures.subscriptionCreate(items: [])) == ModelValidationError(field: "items", kind: .emptyList))
        let longSKU = AdvancedCommerceOneTimeChargeCreateRequest(currency: "EUR", item: AdvancedCommerceOneTimeChargeItem(
            description: "d", displayName: String(repeating: "n", count: 31), sku: "s", price: 1), requestInfo: AdvancedCommerceFixtures.requestInfo, taxCode: "t")
        #expect(failure(longSKU) == ModelValidationError(field: "item.displayName", kind: .stringTooLong(maxLength: 30)))
    }

    @Test func jsonEntryPointPicksTheModelByOperation() throws {
        let c = try creator()
        func reason(_ json: String) -> SigningError.Kind? {
            do { _ = try c.createSignature(requestJSON: Array(json.utf8)); return nil } catch { return error.kind }
        }
        #expect(reason(#"{"operation":"REACTIVATE_SUBSCRIPTION","requestInfo":{"requestReferenceId":"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"},"transactionId":"1"}"#) == nil)
        #expect(reason(#"{"operation":"DELETE_EVERYTHING"}"#) == .invalidArgument)
        #expect(reason(#"{"requestInfo":{}}"#) == .invalidArgument)
        #expect(reason("[1,2]") == .invalidArgument)
        #expect(reason(#"{"operation":"REACTIVATE_SUBSCRIPTION","transactionId":"1"}"#) == .invalidArgument)  // requestInfo missing
        guard case .invalidRequest(let e)? = reason(#"{"operation":"REACTIVATE_SUBSCRIPTION","requestInfo":{"requestReferenceId":"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"},"transactionId":"1","items":[{"SKU":"\#(String(repeating: "s", count: 129))"}]}"#) else {
            Issue.record("a 129-character SKU was accepted"); return
        }
        #expect(e.field == "items[0].SKU")
    }

    /// Known answers: the `request` claim decodes to exactly the expected JSON (every key, nothing extra, JSON
    /// types included), whether signed from the model or from the same JSON through the JSON entry point.
    @Test func requestClaimHasExactlyTheExpectedShape() throws {
        let c = try creator()
        #expect(AdvancedCommerceFixtures.knownAnswers.count == 6)
        for answer in AdvancedCommerceFixtures.knownAnswers {
            let expectedObject = AdvancedCommerceFixtures.object(answer.json)
            #expect(expectedObject["operation"] as? String == type(of: answer.request).operation, "\(answer.name): expectation is not JSON")
            let expected = AdvancedCommerceFixtures.canonical(expectedObject)
            let fromModel = try requestClaim(try c.createSignature(advancedCommerceInAppRequest: answer.request))
            #expect(AdvancedCommerceFixtures.canonical(fromModel) == expected, "\(answer.name) (model)")
            let fromJSON = try requestClaim(try c.createSignature(requestJSON: Array(answer.json.utf8)))
            #expect(AdvancedCommerceFixtures.canonical(fromJSON) == expected, "\(answer.name) (JSON)")
        }
        // The comparison itself tells a missing key, an extra key and a changed JSON type apart from a match.
        let canonical = { (json: String) in AdvancedCommerceFixtures.canonical(AdvancedCommerceFixtures.object(json)) }
        #expect(canonical(#"{"a":true,"b":{"c":1}}"#) == canonical(#"{"b":{"c":1},"a":true}"#))
        #expect(canonical(#"{"a":true,"b":{"c":1}}"#) != canonical(#"{"a":true,"b":{}}"#))
        #expect(canonical(#"{"a":true,"b":{"c":1}}"#) != canonical(#"{"a":true,"b":{"c":1,"d":null}}"#))
        #expect(canonical(#"{"a":true}"#) != canonical(#"{"a":1}"#))
        #expect(canonical(#"{"a":"1"}"#) != canonical(#"{"a":1}"#))
    }

    /// A key the model does not read is an error naming its path, at every level, whatever its value (null too);
    /// known optional keys with null stay accepted.
    @Test func jsonEntryPointRejectsUnknownKeysAtEveryLevel() throws {
        let c = try creator()
        func failure(_ json: String) -> SigningError? {
            do { _ = try c.createSignature(requestJSON: Array(json.utf8)); return nil } catch { return error }
        }
        let info = #""requestInfo":{"requestReferenceId":"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"}"#
        let reactivate = #"{"operation":"REACTIVATE_SUBSCRIPTION","transactionId":"1",\#(info)"#
        let create = #"{"operation":"CREATE_SUBSCRIPTION","currency":"USD","taxCode":"C003","period":"P1M",\#(info),"descriptors":{"description":"d","displayName":"n"}"#
        let item = #""displayName":"n","price":1,"SKU":"s""#
        let cases: [(json: String, path: String)] = [
            (reactivate + #","storefornt":"USA"}"#, "storefornt"),
            (reactivate + #","storefornt":null}"#, "storefornt"),
            (reactivate + #","Storefront":"USA"}"#, "Storefront"),
            (reactivate + #","items":[{"SKU":"a"},{"sku":"b"}]}"#, "items[1].sku"),
            (#"{"operation":"REACTIVATE_SUBSCRIPTION","transactionId":"1","requestInfo":{"requestReferenceId":"3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11","appAccountTokn":"x"}}"#,
             "requestInfo.appAccountTokn"),
            // A misspelt required key is named as unknown (not only reported as missing).
            (create + #","items":[{"descripton":"d",\#(item)}]}"#, "items[0].descripton"),
            (create + #","items":[{"description":"d",\#(item),"offer":{"period":"P1M","periodCount":1,"price":1,"reason":"ACQUISITION","periodcount":2}}]}"#,
             "items[0].offer.periodcount"),
            (create + #","items":[{"description":"d",\#(item)}],"descriptors2":{}}"#, "descriptors2"),
            (#"{"operation":"MODIFY_SUBSCRIPTION","transactionId":"1","retainBillingCycle":true,\#(info),"descriptors":{"effective":"IMMEDIATELY","displayname":"x"}}"#,
             "descriptors.displayname"),
            (#"{"operation":"MODIFY_SUBSCRIPTION","transactionId":"1","retainBillingCycle":true,\#(info),"periodChange":{"effective":"IMMEDIATELY","period":"P1Y","when":"now"}}"#,
             "periodChange.when"),
            (#"{"operation":"CREATE_ONE_TIME_CHARGE","currency":"EUR","taxCode":"C003",\#(info),"item":{"description":"d",\#(item),"quantity":2}}"#,
             "item.quantity"),
        ]
        for (json, path) in cases {
            let e = failure(json)
            #expect(e?.reason == .invalidArgument, "\(path): \(e?.message ?? "accepted")")
            #expect(e?.message.contains("unknown key \"\(path)\"") == true, "\(path): \(e?.message ?? "accepted")")
        }
        // The message lists the keys the model reads there.
        let listed = failure(reactivate + #","items":[{"sku":"b"}]}"#)?.message ?? ""
        #expect(listed.contains(#"keys there: "SKU""#), "\(listed)")
        // Known optional keys given as null are fine (as absent); so is version "1" (or null); other versions are not.
        #expect(failure(reactivate + #","storefront":null,"items":null}"#) == nil)
        #expect(failure(reactivate + #","version":"1"}"#) == nil)
        #expect(failure(reactivate + #","version":null}"#) == nil)
        for bad in [#""2""#, "1", #""""#, "{}"] {
            let e = failure(reactivate + #","version":\#(bad)}"#)
            #expect(e?.reason == .invalidArgument && e?.message.contains("\"version\" must be \"1\"") == true, "version \(bad): \(e?.message ?? "accepted")")
        }
        #expect(failure(#"{"operation":5}"#)?.message.contains("no \"operation\" string") == true)
    }
}
