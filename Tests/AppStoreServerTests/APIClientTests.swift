import Foundation
import Testing
@testable import AppStoreServer
import AppStoreServerHTTP

/// The request builder, against the canonical calls, without a server.
@Suite struct APIRequestBuilderTests {
    @Test func everyEndpointHasOneCanonicalCase() throws {
        #expect(APIFixtures.cases.count == AppStoreServerAPIEndpoint.allCases.count)
        let spec = try SpecEndpoints.all().map(\.name)
        #expect(AppStoreServerAPIEndpoint.allCases.map(\.name) == spec)
        #expect(Set(APIFixtures.cases.map(\.endpoint)) == Set(AppStoreServerAPIEndpoint.allCases))
    }

    /// The generated endpoint table says what spec/endpoints.json says (read here with Foundation, not the generator).
    @Test func endpointTableMatchesTheSpec() throws {
        for s in try SpecEndpoints.all() {
            let e = try #require(AppStoreServerAPIEndpoint(name: s.name), "\(s.name) is in the spec but not in Swift")
            #expect(e.method == s.method && e.pathTemplate == s.path, "\(s.name)")
            #expect(e.rateLimitPerSecond == s.rateLimit, "\(s.name)")
            #expect(e.isPaginated == s.paginated, "\(s.name)")
            #expect(e.isDeprecated == s.deprecated, "\(s.name)")
            let keys = e.parameterKeys
            #expect(Set(keys.required + keys.optional).isSuperset(of: s.parameterKeys), "\(s.name): \(keys)")
        }
    }

    /// For every endpoint: the typed Swift call and the C ABI's JSON params make the same request, and the built
    /// HTTP request is exactly the expected one (method, path, query pairs in order, JSON body incl. every key,
    /// content type only with a body, headers).
    @Test(arguments: AppStoreServerAPIEndpoint.allCases)
    func requestMatchesCanonicalCase(_ endpoint: AppStoreServerAPIEndpoint) throws {
        let c = try #require(APIFixtures.case(endpoint))
        let typed = TypedCalls.request(endpoint)
        let fromJSON = try AppStoreServerAPIRequest(endpoint: endpoint, parametersJSON: c.paramsJSON)
        #expect(typed == fromJSON)
        #expect(typed.endpoint == endpoint)
        let http = try APIFixtures.builder().build(typed)
        #expect(http.method == c.method)
        // Advanced Commerce endpoints go to the hosts Apple's Advanced Commerce pages show.
        let base = endpoint.isAdvancedCommerce ? AppStoreServerAPIBaseURL.advancedCommerceSandbox : AppStoreServerAPIBaseURL.sandbox
        #expect(http.url.hasPrefix(base + c.path))
        let rest = http.url.dropFirst((base + c.path).count)
        let query: [[String]] = rest.isEmpty ? [] : rest.dropFirst().split(separator: "&").map { pair in
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return [kv[0], kv.count > 1 ? kv[1] : ""].map { String($0).removingPercentEncoding ?? "?" }
        }
        #expect(query == c.query)
        let header = { (n: String) in http.headers.first { $0.name == n }?.value }
        #expect(header("Accept") == "application/json")
        #expect(header("User-Agent") == "appstoreserver/\(AppStoreServerVersion.string)")
        #expect(header("Authorization")?.hasPrefix("Bearer ey") == true)
        #expect(header("Content-Type") == c.contentType)
        #expect(http.timeoutMilliseconds == 30_000)
        switch c.body {
        case nil: #expect(http.body.isEmpty)
        case let b as [String: Any] where b.keys.sorted() == ["base64"]:
            #expect(http.body == [UInt8](Data(base64Encoded: b["base64"] as! String)!))
        case let b?:
            #expect(APIFixtures.canonical(bytes: http.body) == APIFixtures.canonical(b))
            let sent = try #require(try JSONSerialization.jsonObject(with: Data(http.body)) as? [String: Any])
            for key in (c.raw["requiredBodyKeys"] as? [String] ?? []) where !key.contains(".") && !key.contains("[") {
                #expect(sent[key] != nil, "required key \(key) missing from \(endpoint.name)")
            }
        }
    }

    @Test func pathSegmentsAndQueryValuesArePercentEncoded() throws {
        let b = try APIFixtures.builder()
        let r = try b.build(.getTransactionInfo(transactionId: "a/b?c#d%e f+g&h=i"))
        #expect(r.url == AppStoreServerAPIBaseURL.sandbox + "/inApps/v1/transactions/a%2Fb%3Fc%23d%25e%20f%2Bg%26h%3Di")
        let h = try b.build(.getRefundHistory(anyTransactionId: "1", revision: "r+1/=&"))
        #expect(h.url.hasSuffix("/inApps/v2/refund/lookup/1?revision=r%2B1%2F%3D%26"))
        let u = try b.build(.getTransactionInfo(transactionId: "ü"))
        #expect(u.url.hasSuffix("/%C3%BC"))
        #expect(throws: AppStoreServerAPIError.self) { try b.build(.getTransactionInfo(transactionId: "")) }
        // Dot segments are unreserved characters, so encoding alone would let them move the request elsewhere.
        for dots in [".", ".."] {
            #expect(throws: AppStoreServerAPIError.self) { try b.build(.getTransactionInfo(transactionId: dots)) }
            #expect(throws: AppStoreServerAPIError.self) { try b.build(.finishTransaction(transactionId: dots)) }
        }
        #expect(try b.build(.getTransactionInfo(transactionId: "...")).url.hasSuffix("/transactions/..."))
    }

    @Test func oversizedAndNULParametersAreRefusedBeforeSigning() throws {
        let b = try APIFixtures.builder()
        func reason(_ r: AppStoreServerAPIRequest) -> String? {
            do { _ = try b.build(r); return nil } catch { return "\(error.statusCode) \(error.reason): \(error.message)" }
        }
        let huge = String(repeating: "1", count: 5_000_000)
        #expect(reason(.getTransactionInfo(transactionId: huge))
                    == "invalidArgument invalidParameters: transactionId is 5000000 bytes; at most 8192 are accepted")
        #expect(reason(.getTransactionInfo(transactionId: "12\u{0}34")) == "invalidArgument invalidParameters: transactionId contains a NUL character")
        #expect(reason(.getRefundHistory(anyTransactionId: "1", revision: String(repeating: "r", count: 8193))) != nil)
        #expect(reason(.getRefundHistory(anyTransactionId: "1", revision: "r\u{0}")) != nil)
        #expect(reason(.getTransactionInfo(transactionId: String(repeating: "1", count: 8192))) == nil)  // the limit itself
        let many = (0...1000).map(String.init)
        #expect(reason(.getTransactionHistory(anyTransactionId: "1", revision: nil,
                                              transactionHistoryRequest: .init(productIds: many)))
                    == "invalidArgument invalidParameters: productId has 1001 values; at most 1000 are accepted")
    }

    @Test func queryDatesAreRoundedMillisecondsAndBodyDatesTruncated() throws {
        let b = try APIFixtures.builder()
        let h = try b.build(.getTransactionHistory(anyTransactionId: "1", revision: nil,
                                                   transactionHistoryRequest: .init(startDate: Date(timeIntervalSince1970: 123.4556))))
        #expect(h.url.hasSuffix("?startDate=123456"))
        // Booleans are the words true/false; repeated keys for lists.
        let t = try b.build(.getTransactionHistory(anyTransactionId: "1", revision: nil,
                                                   transactionHistoryRequest: .init(productIds: ["a", "b"], revoked: true)))
        #expect(t.url.hasSuffix("?productId=a&productId=b&revoked=true"))
        let n = try b.build(.getNotificationHistory(paginationToken: nil, notificationHistoryRequest: .init(
            startDate: Date(timeIntervalSince1970: 123.4559), endDate: Date(timeIntervalSince1970: 124.0001))))
        #expect(APIFixtures.canonical(bytes: n.body) == #"{"endDate":124000,"startDate":123455}"#)
    }

    @Test func consumptionV1AlwaysSendsAppAccountToken() throws {
        let b = try APIFixtures.builder()
        var body = ConsumptionRequestV1(customerConsented: true, consumptionStatus: .undeclared, platform: .apple, sampleContentProvided: true,
                                        deliveryStatus: .deliveredAndWorkingProperly, accountTenure: .undeclared, playTime: .undeclared,
                                        lifetimeDollarsRefunded: .undeclared, lifetimeDollarsPurchased: .undeclared, userStatus: .undeclared)
        var r = try b.build(.sendConsumptionData(transactionId: "1", consumptionRequest: body))
        var sent = try JSONSerialization.jsonObject(with: Data(r.body)) as! [String: Any]
        #expect(sent["appAccountToken"] as? String == "")
        #expect(sent["refundPreference"] == nil)
        #expect(sent.keys.count == 11)
        body.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        r = try b.build(.sendConsumptionData(transactionId: "1", consumptionRequest: body))
        sent = try JSONSerialization.jsonObject(with: Data(r.body)) as! [String: Any]
        #expect(sent["appAccountToken"] as? String == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        body.appAccountToken = "7E3FB20B-4CDB-47CC-936D-99D65F608138"  // lowercase on the wire
        r = try b.build(.sendConsumptionData(transactionId: "1", consumptionRequest: body))
        sent = try JSONSerialization.jsonObject(with: Data(r.body)) as! [String: Any]
        #expect(sent["appAccountToken"] as? String == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        body.appAccountToken = "not-a-uuid"
        #expect(throws: AppStoreServerAPIError.self) { try b.build(.sendConsumptionData(transactionId: "1", consumptionRequest: body)) }
    }

    @Test func paginationStopsOnARepeatedToken() throws {
        // A server answering A -> B -> A would otherwise be followed forever.
        final class Cycling: BlockingHTTPTransport, @unchecked Sendable {
            var calls = 0
            func send(_ request: HTTPRequest) throws(TransportError) -> HTTPResponse {
                calls += 1
                let next = request.url.contains("revision=A") ? "B" : "A"
                return HTTPResponse(status: 200, body: Array(#"{"revision":"\#(next)","hasMore":true,"signedTransactions":[]}"#.utf8))
            }
        }
        let t = Cycling()
        let caller = AppStoreServerAPICaller(builder: try APIFixtures.builder(), retryPolicy: .none)
        #expect(throws: AppStoreServerAPIError.self) {
            try AppStoreServerAPIPagination.allPages(.getRefundHistory(anyTransactionId: "1", revision: nil), caller: caller, transport: t)
        }
        #expect(t.calls == 3)  // nil -> A -> B, then A again is refused before it is sent
    }

    @Test func bearerTokenIsFreshAndIndependentlyVerified() throws {
        let b = try APIFixtures.builder()
        let r1 = try b.build(.getImageList, issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let r2 = try b.build(.getImageList)
        let t1 = String(r1.headers[0].value.dropFirst(7)), t2 = String(r2.headers[0].value.dropFirst(7))
        // Fresh means a new iat per request (signatures differ anyway: ECDSA is randomised).
        func iat(_ token: String) throws -> Int {
            let claims = token.split(separator: ".")[1]
            let padded = claims.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                + String(repeating: "=", count: (4 - claims.count % 4) % 4)
            let json = try JSONSerialization.jsonObject(with: try #require(Data(base64Encoded: padded))) as? [String: Any]
            return try #require(json?["iat"] as? Int)
        }
        #expect(try iat(t1) == 1_700_000_000)
        #expect(abs(try iat(t2) - Int(Date().timeIntervalSince1970)) < 60)
        let ids = SigningFixtures.ids
        #expect(try SigningFixtures.independentlyVerified([
            ["kind": "api_token", "name": "API request bearer token", "value": t2,
             "expect": ["kid": ids.keyId, "iss": ids.issuerId, "bid": ids.bundleId, "lifetime": 300]],
        ]))
    }

    @Test func environmentsAndBaseURLs() throws {
        let key = try SigningFixtures.key()
        let ids = SigningFixtures.ids
        func base(_ env: AppStoreEnvironment, _ url: String? = nil) throws(AppStoreServerAPIError) -> String {
            try AppStoreServerAPIRequestBuilder(signingKey: key, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId,
                                                environment: env, baseURL: url).baseURL
        }
        #expect(try base(.production) == "https://api.storekit.apple.com")
        #expect(try base(.sandbox) == "https://api.storekit-sandbox.apple.com")
        #expect(try base(.localTesting) == "https://local-testing-base-url")
        #expect(try base(.sandbox, "http://127.0.0.1:8080/") == "http://127.0.0.1:8080")
        do { _ = try base(.xcode); Issue.record("Xcode accepted") } catch {
            #expect(error.kind == .configuration(.unsupportedEnvironment))
            #expect(error.message.contains("Xcode"))
        }
        #expect(throws: AppStoreServerAPIError.self) { try base(.sandbox, "ftp://x") }
        #expect(throws: AppStoreServerAPIError.self) { try base(AppStoreEnvironment(rawValue: "Staging")) }
    }

    @Test func requestModelsAreValidatedWithApplesLimits() throws {
        let b = try APIFixtures.builder()
        func field(_ r: AppStoreServerAPIRequest) -> String? {
            do { _ = try b.build(r); return nil } catch {
                if case .invalidRequest(let v) = error.kind { return "\(v)" }
                return "other: \(error)"
            }
        }
        let img = TypedCalls.img
        let point = BulletPoint(text: "p", imageIdentifier: img, altText: "a")
        #expect(field(.uploadMessage(messageIdentifier: img, uploadMessageRequestBody: .init(
            header: "h", body: "b", bulletPoints: Array(repeating: point, count: 6)))) == "bulletPoints must have at most 5 elements")
        #expect(field(.uploadMessage(messageIdentifier: img, uploadMessageRequestBody: .init(
            header: "h", body: "b", bulletPoints: Array(repeating: point, count: 5)))) == nil)
        #expect(field(.uploadMessage(messageIdentifier: img, uploadMessageRequestBody: .init(
            header: String(repeating: "h", count: 67), body: "b"))) == "header is longer than 66 characters")
        #expect(field(.uploadMessage(messageIdentifier: img, uploadMessageRequestBody: .init(
            header: "h", body: String(repeating: "b", count: 145)))) == "body is longer than 144 characters")
        #expect(field(.uploadMessage(messageIdentifier: img, uploadMessageRequestBody: .init(
            header: "h", body: "b", bulletPoints: [BulletPoint(text: String(repeating: "t", count: 67), imageIdentifier: img, altText: "a")])))
                == "bulletPoints[0].text is longer than 66 characters")
        #expect(field(.uploadMessage(messageIdentifier: img, uploadMessageRequestBody: .init(
            header: "h", body: "b", image: UploadMessageImage(imageIdentifier: img, altText: String(repeating: "a", count: 151)))))
                == "image.altText is longer than 150 characters")
        #expect(field(.configureRealtimeURL(realtimeUrlRequest: .init(realtimeURL: "https://e.com/" + String(repeating: "x", count: 243))))
                == "realtimeURL is longer than 256 characters")
        #expect(field(.extendSubscriptionRenewalDate(originalTransactionId: "1", extendRenewalDateRequest: .init(
            extendByDays: 91, extendReasonCode: .other, requestIdentifier: "r"))) == "extendByDays must be between 1 and 90")
        #expect(field(.extendRenewalDateForAllActiveSubscribers(massExtendRenewalDateRequest: .init(
            extendByDays: 0, extendReasonCode: .other, requestIdentifier: "r", productId: "p"))) == "extendByDays must be between 1 and 90")
        #expect(field(.extendSubscriptionRenewalDate(originalTransactionId: "1", extendRenewalDateRequest: .init(
            extendByDays: 1, extendReasonCode: .other, requestIdentifier: String(repeating: "r", count: 129))))
                == "requestIdentifier is longer than 128 characters")
        #expect(field(.sendConsumptionInformation(transactionId: "1", consumptionRequest: .init(
            customerConsented: true, consumptionPercentage: 100_001, deliveryStatus: .delivered, sampleContentProvided: false)))
                == "consumptionPercentage must be between 0 and 100000")
        #expect(field(.changeSubscriptionPrice(transactionId: "1", request: .init(items: [], requestInfo: TypedCalls.rinfo)))
                == "items must not be empty")
        #expect(field(.migrateSubscription(transactionId: "1", request: .init(
            descriptors: .init(), items: [.init(description: String(repeating: "d", count: 46), displayName: "n", sku: "s")],
            requestInfo: TypedCalls.rinfo, targetProductId: "p", taxCode: "t"))) == "items[0].description is longer than 45 characters")
        #expect(field(.changeSubscriptionMetadata(transactionId: "1", request: .init(
            items: [.init(currentSku: String(repeating: "s", count: 129), effective: .immediately)], requestInfo: TypedCalls.rinfo)))
                == "items[0].currentSKU is longer than 128 characters")
    }

    @Test func jsonParametersAreCheckedAndNamed() throws {
        func message(_ e: AppStoreServerAPIEndpoint, _ json: String) -> String? {
            do { _ = try AppStoreServerAPIRequest(endpoint: e, parametersJSON: Array(json.utf8)); return nil } catch {
                #expect(error.kind == .invalidArgument)
                return error.message
            }
        }
        #expect(message(.getTransactionInfo, "{}")?.contains("missing required parameter \"transactionId\"") == true)
        #expect(message(.getTransactionInfo, #"{"transactionID":"1"}"#)?.contains("unknown parameter \"transactionID\"") == true)
        #expect(message(.getTransactionInfo, #"{"transactionId":1}"#)?.contains("transactionId") == true)
        #expect(message(.getTransactionInfo, "[1]")?.contains("JSON object") == true)
        #expect(message(.getTransactionInfo, "{nope")?.contains("not a JSON object") == true)
        #expect(message(.extendSubscriptionRenewalDate, #"{"originalTransactionId":"1","body":{"extendByDays":1,"requestIdentifier":"r"}}"#)?
                    .contains("missing required key \"extendReasonCode\"") == true)
        #expect(message(.sendConsumptionInformation, #"{"transactionId":"1","body":{"customerConsented":true,"sampleContentProvided":true}}"#)?
                    .contains("deliveryStatus") == true)
        // A misspelt key inside a body, at any depth, is refused by its path: it must never silently drop a filter
        // (an unfiltered notification history) or a field (a message without its image's alt text).
        let history = #"{"body":{"startDat":1698148900000,"endDate":1698148950000,"startDate":1698148800000}}"#
        #expect(message(.getNotificationHistory, history)?.contains(#"unknown key "body.startDat""#) == true, "\(message(.getNotificationHistory, history) ?? "accepted")")
        let upload = #"{"messageIdentifier":"b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e","body":{"header":"h","body":"b","image":{"imageIdentifier":"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","altTxt":"x"}}}"#
        #expect(message(.uploadMessage, upload)?.contains(#"unknown key "body.image.altTxt""#) == true, "\(message(.uploadMessage, upload) ?? "accepted")")
        // Duplicate keys are refused (two readers of the same JSON must not see different filters).
        #expect(message(.getTransactionInfo, #"{"transactionId":"1","transactionId":"2"}"#)?.contains("duplicate key") == true)
        // Nesting beyond the limit is refused by the parser, whatever the key.
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(message(.getTransactionInfo, #"{"transactionId":"1","x":"# + deep + "}")?.contains("nested deeper") == true)
        #expect(message(.deleteImage, #"{"imageIdentifier":"not-a-uuid"}"#)?.contains("is not a UUID") == true)
        #expect(message(.uploadImage, #"{"imageIdentifier":"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","image":"***"}"#)?.contains("base64") == true)
        #expect(message(.getImageList, #"{"x":1}"#)?.contains("parameters: none") == true)
        #expect(message(.getImageList, "") == nil)
    }
}

/// Decoding every response model, including unknown enum values and error payloads.
@Suite struct APIResponseDecoderTests {
    /// Every canned answer decodes into its endpoint's model and encodes back to the same JSON (nothing dropped,
    /// unknown enum values kept).
    @Test(arguments: AppStoreServerAPIEndpoint.allCases.filter { $0.responseType != nil })
    func everyResponseModelRoundTrips(_ endpoint: AppStoreServerAPIEndpoint) throws {
        let c = try #require(APIFixtures.case(endpoint))
        let bodies: [Any] = c.pages.map { $0 as [Any] } ?? c.response.map { [$0] } ?? []
        #expect(!bodies.isEmpty)
        for body in bodies {
            let bytes = [UInt8](try JSONSerialization.data(withJSONObject: body))
            let json = try AppStoreServerAPIResponseDecoder.json(endpoint: endpoint, response: HTTPResponse(status: 200, body: bytes))
            #expect(json == bytes)  // as sent
            let type = try #require(endpoint.responseType)
            func roundTrip<T: Decodable>(_ t: T.Type) throws -> String {
                let value = try APIFixtures.decode(T.self, body)
                guard let enc = value as? any Encodable else { return "?" }
                return APIFixtures.encodeSorted(enc)
            }
            let encoded = try roundTrip(type)
            #expect(encoded == APIFixtures.canonical(body))
        }
    }

    @Test func unknownEnumValuesArePreserved() throws {
        let hist = try APIFixtures.decode(HistoryResponse.self, APIFixtures.case(.getTransactionHistory)!.pages![0])
        #expect(hist.environment?.rawValue == "LocalTestingxxx")
        #expect(hist.environment?.isKnown == false)
        #expect(hist.hasMore == true)
        let statuses = try APIFixtures.decode(StatusResponse.self, APIFixtures.case(.getAllSubscriptionStatuses)!.response!)
        #expect(statuses.data?[0].lastTransactions?[1].status == Status(rawValue: 99))
        #expect(statuses.data?[0].lastTransactions?[0].status == .active)
        let images = try APIFixtures.decode(GetImageListResponse.self, APIFixtures.case(.getImageList)!.response!)
        #expect(images.imageIdentifiers?[1].imageState?.rawValue == "ARCHIVED")
        #expect(images.imageIdentifiers?[1].imageSize?.isKnown == false)
        #expect(images.imageIdentifiers?[0].imageIdentifier == TypedCalls.img)
        let perf = try APIFixtures.decode(PerformanceTestResultResponse.self, APIFixtures.case(.getPerformanceTestResults)!.response!)
        #expect(perf.failures == ["TIMED_OUT": 2, "SOMETHING_NEW": 1])
        #expect(perf.result == .pass)
        let notes = try APIFixtures.decode(NotificationHistoryResponse.self, APIFixtures.case(.getNotificationHistory)!.pages![0])
        #expect(notes.notificationHistory?[0].sendAttempts?[1].sendAttemptResult?.rawValue == "CARRIER_PIGEON")
        #expect(notes.notificationHistory?[0].sendAttempts?[0].attemptDate == Date(timeIntervalSince1970: 1_698_148_900))
        let order = try APIFixtures.decode(OrderLookupResponse.self, APIFixtures.case(.lookUpOrderId)!.response!)
        #expect(order.status == .invalid)
    }

    func failure(_ status: Int, _ body: String, headers: [HTTPHeader] = []) -> AppStoreServerAPIError? {
        failure(.getTransactionInfo, status, body, headers: headers)
    }

    func failure(_ e: AppStoreServerAPIEndpoint, _ status: Int, _ body: String,
                 headers: [HTTPHeader] = []) -> AppStoreServerAPIError? {
        do {
            _ = try AppStoreServerAPIResponseDecoder.json(endpoint: e, response: HTTPResponse(status: status, headers: headers, body: Array(body.utf8)))
            return nil
        } catch { return error }
    }

    @Test func errorPayloadsKeepStatusCodeNameMessageAndRetryAfter() throws {
        let known = try #require(failure(404, #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#))
        #expect(known.kind == .apiError)
        #expect(known.httpStatusCode == 404)
        #expect(known.rawApiError == 4040010)
        #expect(known.apiError == .transactionIdNotFound)
        #expect(known.apiErrorName == "transactionIdNotFound")
        #expect(known.errorMessage == "Transaction id not found.")
        #expect(known.retryAfterSeconds == nil)
        #expect(known.message == "getTransactionInfo: HTTP 404, error 4040010 (transactionIdNotFound): Transaction id not found.")
        let unknown = try #require(failure(400, #"{"errorCode":9990000,"errorMessage":"Testing error."}"#))
        #expect(unknown.rawApiError == 9990000)
        #expect(unknown.apiError == nil)
        #expect(unknown.apiErrorName == nil)
        #expect(unknown.message.contains("unknown error code"))
        let limited = try #require(failure(429, #"{"errorCode":4290000,"errorMessage":"Rate limit exceeded."}"#,
                                           headers: [HTTPHeader("retry-after", " 12 ")]))
        #expect(limited.apiError == .rateLimitExceeded)
        #expect(limited.retryAfterSeconds == 12)
        #expect(limited.isRetryable)
        let dated = try #require(failure(429, "{}", headers: [HTTPHeader("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")]))
        #expect(dated.retryAfter == RetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", nowMilliseconds: 0))
        #expect(dated.retryAfterSeconds == 0)  // long past
        #expect(dated.kind == .httpError)
        let plain = try #require(failure(500, "oops"))
        #expect(plain.kind == .httpError)
        #expect(plain.httpStatusCode == 500)
        #expect(plain.rawApiError == nil)
        let ac = try #require(failure(.cancelSubscription, 400, #"{"errorCode":4000028,"errorMessage":"Invalid storefront."}"#))
        #expect(ac.apiErrorName == "invalidStorefront")
        #expect(ac.advancedCommerceAPIError == .invalidStorefront)
        #expect(ac.apiError == .invalidStorefrontCountryCode)
        let acOnly = try #require(failure(.revokeSubscription, 403, #"{"errorCode":4030021,"errorMessage":"Already refunded."}"#))
        #expect(acOnly.apiErrorName == "alreadyRefunded")
        // Codes Apple added to the Advanced Commerce API in 1.2 and later server updates.
        for (endpoint, status, code, name, known) in [
            (AppStoreServerAPIEndpoint.changeSubscriptionPrice, 400, Int64(4000221), "acaPriceIncreaseIsNotCurrentlySupportedInIndia",
             AdvancedCommerceAPIError.acaPriceIncreaseIsNotCurrentlySupportedInIndia),
            (.changeSubscriptionPrice, 400, 4000222, "invalidProratedPriceForChangeItemWithEffectiveLater",
             .invalidProratedPriceForChangeItemWithEffectiveLater),
            (.changeSubscriptionPrice, 400, 4000192, "dependentSKUsCannotBeShared", .dependentSKUsCannotBeShared),
            (.changeSubscriptionPrice, 400, 4000193, "dependentSKUsCannotBeChained", .dependentSKUsCannotBeChained),
            (.changeSubscriptionMetadata, 400, 4000170, "currentSKULengthExceeded", .currentSKULengthExceeded),
            (.migrateSubscription, 403, 4030027, "migrationNotAllowedWhenPriceIncreaseCommunicated",
             .migrationNotAllowedWhenPriceIncreaseCommunicated),
            (.changeSubscriptionPrice, 400, 4000223, "freeTrialOfferMustUsePeriodCountOfOne", .freeTrialOfferMustUsePeriodCountOfOne),
        ] {
            let e = try #require(failure(endpoint, status, #"{"errorCode":\#(code),"errorMessage":"x"}"#))
            #expect(e.apiErrorName == name)
            #expect(e.advancedCommerceAPIError == known)
            #expect(e.message.contains("(\(name))"))
        }
        for code: Int64 in [4040002, 4040004, 4040006, 5000001] {
            #expect(failure(500, #"{"errorCode":\#(code),"errorMessage":"x"}"#)?.isRetryable == true)
        }
        #expect(failure(404, #"{"errorCode":4040010,"errorMessage":"x"}"#)?.isRetryable == false)
    }

    @Test func undecodableBodiesKeepTheStatusAndSayWhat() throws {
        let bad = try #require(failure(200, #"{"signedTransactionInfo":5}"#))
        #expect(bad.kind == .undecodableResponse)
        #expect(bad.httpStatusCode == 200)
        #expect(bad.message.contains("signedTransactionInfo"))
        let history = failure(.getTransactionHistory, 200, #"{"appAppleId":"1234"}"#)
        #expect(history?.message.contains("appAppleId") == true)
        let notJSON = try #require(failure(200, "{not json"))
        #expect(notJSON.kind == .undecodableResponse)
        let missing = failure(.getRealtimeURL, 200, "{}")
        #expect(missing?.message.contains("realtimeURL") == true)
        // Endpoints without a response model ignore the body.
        #expect(failure(.finishTransaction, 200, "") == nil)
        #expect(try AppStoreServerAPIResponseDecoder.json(endpoint: .finishTransaction, response: HTTPResponse(status: 200, body: Array("x".utf8))) == Array("{}".utf8))
    }

    /// Retry-After in Apple's form (UNIX milliseconds), delta-seconds and the three HTTP-date forms; junk is ignored.
    @Test func retryAfterForms() {
        let now: Int64 = 1_700_000_000_000
        let ms = RetryAfter("1700000004321", nowMilliseconds: now)
        #expect(ms?.form == .unixMilliseconds && ms?.atMilliseconds == 1_700_000_004_321 && ms?.seconds(from: now) == 5)
        let delta = RetryAfter(" 7 ", nowMilliseconds: now)
        #expect(delta?.form == .deltaSeconds && delta?.atMilliseconds == now + 7_000 && delta?.seconds(from: now) == 7)
        #expect(RetryAfter("99999999999", nowMilliseconds: now)?.form == .deltaSeconds)
        #expect(RetryAfter("100000000000", nowMilliseconds: now)?.form == .unixMilliseconds)
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            let d = RetryAfter(text, nowMilliseconds: now)
            #expect(d?.form == .httpDate && d?.atMilliseconds == 784_111_777_000, "\(text)")
        }
        for junk in ["", "soon", "-5", "1.5", "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
                     "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 PST", String(repeating: "9", count: 30)] {
            #expect(RetryAfter(junk, nowMilliseconds: now) == nil, "\(junk)")
        }
    }

    @Test func retryPolicyBackoffAndRetryAfter() {
        let p = APIRetryPolicy(maxRetries: 3, initialBackoffMilliseconds: 100, maxBackoffMilliseconds: 250)
        let e429 = AppStoreServerAPIError(kind: .apiError, message: "", httpStatusCode: 429, rawApiError: 4290000)
        #expect(p.delayMilliseconds(beforeRetry: 1, after: e429) == 100)
        #expect(p.delayMilliseconds(beforeRetry: 2, after: e429) == 200)
        #expect(p.delayMilliseconds(beforeRetry: 3, after: e429) == 250)
        #expect(p.delayMilliseconds(beforeRetry: 4, after: e429) == nil)
        let now: Int64 = 1_700_000_000_000
        func limited(_ header: String) -> AppStoreServerAPIError {
            AppStoreServerAPIError(kind: .apiError, message: "", httpStatusCode: 429,
                                   retryAfter: RetryAfter(header, nowMilliseconds: now), receivedAtMilliseconds: now)
        }
        let after = limited("0")
        #expect(p.delayMilliseconds(beforeRetry: 1, after: after, nowMilliseconds: now) == 100)
        let longAfter = limited("1")
        #expect(p.delayMilliseconds(beforeRetry: 1, after: longAfter, nowMilliseconds: now) == nil)
        #expect(APIRetryPolicy(maxRetries: 2, maxBackoffMilliseconds: 5000).delayMilliseconds(beforeRetry: 1, after: longAfter, nowMilliseconds: now) == 1000)
        // Apple's form, a UNIX time in milliseconds: the retry waits until it (measured when the decision is made).
        let appleForm = limited(String(now + 1_234))
        #expect(appleForm.retryAfterSeconds == 2)
        let wide = APIRetryPolicy(maxRetries: 2, initialBackoffMilliseconds: 100, maxBackoffMilliseconds: 5000)
        #expect(wide.delayMilliseconds(beforeRetry: 1, after: appleForm, nowMilliseconds: now) == 1_234)
        #expect(wide.delayMilliseconds(beforeRetry: 1, after: appleForm, nowMilliseconds: now + 1_000) == 234)
        #expect(wide.delayMilliseconds(beforeRetry: 1, after: appleForm, nowMilliseconds: now + 9_000) == 100)  // passed: backoff
        #expect(p.delayMilliseconds(beforeRetry: 1, after: appleForm, nowMilliseconds: now) == nil)  // beyond 250 ms
        let notFound = AppStoreServerAPIError(kind: .apiError, message: "", httpStatusCode: 404, rawApiError: 4040010)
        #expect(p.delayMilliseconds(beforeRetry: 1, after: notFound) == nil)
        #expect(APIRetryPolicy.none.delayMilliseconds(beforeRetry: 1, after: e429) == nil)
        // Apple's retryable codes are retried whatever the status; 4290000 only comes with (and is retried as) 429.
        for code: Int64 in [4040002, 4040004, 4040006, 5000001] {
            #expect(p.delayMilliseconds(beforeRetry: 1, after: AppStoreServerAPIError(kind: .apiError, message: "", httpStatusCode: 404, rawApiError: code)) == 100)
        }
        #expect(p.delayMilliseconds(beforeRetry: 1, after: AppStoreServerAPIError(kind: .apiError, message: "", httpStatusCode: 400, rawApiError: 4290000)) == nil)
    }
}

/// End to end: the async client and the default transport (AsyncHTTPClient) against the mock App Store server,
/// which verifies the bearer token with Python joserfc and checks every request.
@Suite(.serialized) struct APIClientEndToEndTests {
    func baseURL() throws -> String { try #require(APIFixtures.mockBaseURL, "mock_app_store.py did not start") }

    @Test(arguments: AppStoreServerAPIEndpoint.allCases)
    func everyEndpointThroughTheDefaultTransport(_ endpoint: AppStoreServerAPIEndpoint) async throws {
        _ = try baseURL()
        let c = try #require(APIFixtures.case(endpoint))
        let client = try APIFixtures.client()
        let result: (any Encodable)?
        do { result = try await TypedCalls.call(client, TypedCalls.request(endpoint)) } catch {
            Issue.record("\(endpoint.name): \(error.message)")
            return
        }
        let expected: Any? = c.pages?.first ?? c.response
        if let expected {
            let got = try #require(result)
            #expect(APIFixtures.encodeSorted(got) == APIFixtures.canonical(expected))
        } else {
            #expect(result == nil)
        }
    }

    @Test func everyEndpointThroughABlockingTransport() async throws {
        _ = try baseURL()
        let client = try APIFixtures.client(transport: BlockingTransportAdapter(SocketTransport()))
        for endpoint in AppStoreServerAPIEndpoint.allCases {
            do { _ = try await TypedCalls.call(client, TypedCalls.request(endpoint)) } catch {
                Issue.record("\(endpoint.name): \(error.message)")
            }
        }
    }

    @Test func paginationFollowsEveryPage() async throws {
        _ = try baseURL()
        let client = try APIFixtures.client()
        let v2 = try await client.getAllTransactionHistory(anyTransactionId: TypedCalls.tx, transactionHistoryRequest: TypedCalls.history)
        #expect(v2.count == 2)
        #expect(v2.flatMap { $0.signedTransactions ?? [] } == ["v2-1", "v2-2", "v2-3"])
        let v1 = try await client.getAllTransactionHistory(anyTransactionId: TypedCalls.tx, transactionHistoryRequest: TypedCalls.history,
                                                           version: .v1)
        #expect(v1.flatMap { $0.signedTransactions ?? [] } == ["v1-1", "v1-2", "v1-3"])
        let refunds = try await client.getAllRefundHistory(anyTransactionId: TypedCalls.tx)
        #expect(refunds.flatMap { $0.signedTransactions ?? [] } == ["refund-1", "refund-2", "refund-3"])
        guard case .getNotificationHistory(_, let body) = TypedCalls.request(.getNotificationHistory) else { return }
        let notes = try await client.getAllNotificationHistory(notificationHistoryRequest: body)
        #expect(notes.compactMap { $0.notificationHistory?.first?.signedPayload } == ["signed-notification-1", "signed-notification-2"])
        // The second page alone, by its token.
        let page2 = try await client.getRefundHistory(anyTransactionId: TypedCalls.tx, revision: "revision-page-2")
        #expect(page2.hasMore == false)
    }

    func error(_ transactionId: String, retry: APIRetryPolicy = .none, timeoutMs: UInt32 = 60_000) async throws -> AppStoreServerAPIError? {
        let client = try APIFixtures.client(retry: retry, timeoutMs: timeoutMs)
        do { _ = try await client.getTransactionInfo(transactionId: transactionId); return nil } catch { return error }
    }

    @Test func everyErrorShape() async throws {
        _ = try baseURL()
        for (status, code, name) in [(400, 4000006, "invalidTransactionId"), (404, 4040010, "transactionIdNotFound"),
                                     (404, 4040019, "appTransactionDoesNotExistError"), (400, 4000183, "invalidAppAccountTokenUUID"),
                                     (500, 5000000, "generalInternal"), (400, 9990000, nil)] as [(Int, Int64, String?)] {
            let e = try #require(try await error("error-\(status)-\(code)"))
            #expect(e.kind == .apiError)
            #expect(e.httpStatusCode == status)
            #expect(e.rawApiError == code)
            #expect(e.apiErrorName == name)
            #expect(e.errorMessage == "mock error \(code)")
        }
        let limited = try #require(try await error("ratelimit"))
        #expect(limited.httpStatusCode == 429)
        #expect(limited.apiError == .rateLimitExceeded)
        #expect(limited.retryAfterSeconds == 7)
        #expect(limited.retryAfter?.form == .deltaSeconds)
        // Apple's form (UNIX milliseconds) and an HTTP-date, as a server sends them.
        let appleForm = try #require(try await error("ratelimit-ms-5000"))
        #expect(appleForm.retryAfter?.form == .unixMilliseconds)
        #expect(appleForm.retryAfterSeconds.map { (4...5).contains($0) } == true, "\(appleForm.retryAfterSeconds ?? -1)")
        let dated = try #require(try await error("ratelimit-date-30"))
        #expect(dated.retryAfter?.form == .httpDate)
        #expect(dated.retryAfterSeconds.map { (29...31).contains($0) } == true, "\(dated.retryAfterSeconds ?? -1)")
        let plain = try #require(try await error("plain500"))
        #expect(plain.kind == .httpError)
        #expect(plain.httpStatusCode == 500)
        let malformed = try #require(try await error("malformed"))
        #expect(malformed.kind == .undecodableResponse)
        #expect(malformed.httpStatusCode == 200)
        let badType = try #require(try await error("badtype"))
        #expect(badType.kind == .undecodableResponse)
        #expect(badType.message.contains("signedTransactionInfo"))
    }

    /// A retry waits until the time Retry-After names, in each of its forms (the server counts the wait it saw).
    @Test func retriesWaitUntilRetryAfter() async throws {
        _ = try baseURL()
        let policy = APIRetryPolicy(maxRetries: 2, initialBackoffMilliseconds: 10, maxBackoffMilliseconds: 5000)
        let tag = UUID().uuidString.prefix(8)
        for (id, atLeast) in [("flakyms700-1-m\(tag)", 650), ("flakydate1-1-d\(tag)", 900)] {
            let r = try await APIFixtures.client(retry: policy).getTransactionInfo(transactionId: id)
            let text = try #require(r.signedTransactionInfo)
            let waited = Int(text.split(separator: " ").last ?? "") ?? -1
            #expect(text.hasPrefix("attempt-2 after ") && waited >= atLeast, "\(id): \(text)")
        }
    }

    @Test func retriesHonourApplesRetryableAnswers() async throws {
        _ = try baseURL()
        let policy = APIRetryPolicy(maxRetries: 3, initialBackoffMilliseconds: 10, maxBackoffMilliseconds: 1000)
        let tag = UUID().uuidString.prefix(8)
        for code in ["429", "5000001", "4040002", "4040004", "4040006"] {
            let client = try APIFixtures.client(retry: policy)
            let r = try await client.getTransactionInfo(transactionId: "flaky\(code)-2-s\(tag)")
            #expect(r.signedTransactionInfo == "attempt-3", "code \(code)")
        }
        // Without retries the first failure is returned.
        let once = try #require(try await error("flaky429-1-n\(tag)"))
        #expect(once.httpStatusCode == 429)
        // More failures than retries.
        let exhausted = try #require(try await error("flaky5000001-5-x\(tag)", retry: policy))
        #expect(exhausted.rawApiError == 5000001)
        // A Retry-After longer than the policy's longest wait is not waited for: the one request is all the mock saw
        // (the mechanism, not a clock load can stretch; no other test asks for this id).
        let url = try baseURL()
        let sentBefore = try MockArrivals.count(url, path: "GET /inApps/v1/transactions/ratelimit-long")
        let long = try #require(try await error("ratelimit-long", retry: policy))
        #expect(long.retryAfterSeconds == 3600)
        #expect(try MockArrivals.count(url, path: "GET /inApps/v1/transactions/ratelimit-long") - sentBefore == 1)
        // Non-retryable answers are not retried.
        let notFound = try #require(try await error("error-404-4040010", retry: policy))
        #expect(notFound.rawApiError == 4040010)
    }

    @Test func slowAnswersTimeOut() async throws {
        _ = try baseURL()
        // The mock answers after 600 s: the timeout error shows the deadline fired, and 30 s (75x the timeout, >= 4x
        // a loaded run) is far below a client that waited for the answer.
        let start = Date()
        let e = try #require(try await error("slow-600000", timeoutMs: 400))
        #expect(e.kind == .transport(.timeout))
        #expect(Date().timeIntervalSince(start) < 30)
        // Due in 100 ms; the timeout is only there to fail a call that never ends.
        let ok = try await APIFixtures.client(timeoutMs: 30_000).getTransactionInfo(transactionId: "slow-100")
        #expect(ok.signedTransactionInfo == "slow")
    }

    @Test func unreachableServerIsATransportError() async throws {
        let client = try APIFixtures.client(timeoutMs: 1000, baseURL: "http://127.0.0.1:9")
        do { _ = try await client.getTransactionInfo(transactionId: "1"); Issue.record("no error") } catch {
            guard case .transport = error.kind else { Issue.record("\(error)"); return }
        }
    }

    @Test func validationFailsBeforeAnythingIsSent() async throws {
        let client = try APIFixtures.client(baseURL: "http://127.0.0.1:9")
        do {
            try await client.configureRealtimeURL(realtimeUrlRequest: .init(realtimeURL: String(repeating: "x", count: 257)))
            Issue.record("accepted")
        } catch {
            guard case .invalidRequest(let v) = error.kind else { Issue.record("\(error)"); return }
            #expect(v.field == "realtimeURL")
        }
    }

    @Test func appleShapedInitializerUsesTheDefaultTransport() throws {
        let pem = try SigningFixtures.pem("p256.p8")
        let ids = SigningFixtures.ids
        let c = try AppStoreServerAPIClient(signingKey: pem, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId,
                                            environment: .production)
        #expect(c.transport is AsyncHTTPClientTransport)
        #expect(c.caller.builder.baseURL == AppStoreServerAPIBaseURL.production)
        #expect(throws: AppStoreServerAPIError.self) {
            try AppStoreServerAPIClient(signingKey: pem, keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId, environment: .xcode)
        }
        #expect(throws: AppStoreServerAPIError.self) {
            try AppStoreServerAPIClient(signingKey: "not a key", keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId,
                                        environment: .sandbox)
        }
    }
}
