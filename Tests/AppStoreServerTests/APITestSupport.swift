import Foundation
import Testing
import AppStoreServer

/// The shared canonical calls (Tests/support/api_cases.json) and the mock App Store server
/// (Tests/support/mock_app_store.py), started once per test process on 127.0.0.1 and stopped when the process
/// exits (its stdin pipe closes).
enum APIFixtures {
    struct Case: @unchecked Sendable {
        let endpoint: AppStoreServerAPIEndpoint
        let raw: [String: Any]
        var params: [String: Any] { raw["params"] as? [String: Any] ?? [:] }
        var method: String { raw["method"] as? String ?? "" }
        var path: String { raw["path"] as? String ?? "" }
        var query: [[String]] { raw["query"] as? [[String]] ?? [] }
        var body: Any? { raw["body"] is NSNull ? nil : raw["body"] }
        var contentType: String? { raw["contentType"] as? String }
        var response: Any? { raw["response"] is NSNull ? nil : raw["response"] }
        var pages: [[String: Any]]? { raw["pages"] as? [[String: Any]] }
        var paramsJSON: [UInt8] { [UInt8]((try? JSONSerialization.data(withJSONObject: params)) ?? Data("{}".utf8)) }
    }

    static let cases: [Case] = {
        let url = Paths.repo.appendingPathComponent("Tests/support/api_cases.json")
        guard let data = try? Data(contentsOf: url),
              let doc = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let list = doc["cases"] as? [[String: Any]] else { return [] }
        return list.compactMap { raw in
            (raw["endpoint"] as? String).flatMap(AppStoreServerAPIEndpoint.init(name:)).map { Case(endpoint: $0, raw: raw) }
        }
    }()

    static func `case`(_ e: AppStoreServerAPIEndpoint) -> Case? { cases.first { $0.endpoint == e } }

    static let ids = SigningFixtures.ids

    /// The mock server's base URL ("http://127.0.0.1:PORT"), or nil when it could not start.
    static let mockBaseURL: String? = launchMock()

    /// A second mock server that plays a Production knowing none of the ids (every Sandbox-fallback lookup is
    /// answered transactionIdNotFound).
    static let notFoundMockBaseURL: String? = launchMock(["--not-found-lookups", Paths.repo.appendingPathComponent("spec/endpoints.json").path])

    /// A third one that plays Production for an app never released there: every Sandbox-fallback lookup is answered
    /// HTTP 401 with a plain-text body.
    static let unauthorizedMockBaseURL: String? = launchMock(["--unauthorized-lookups", Paths.repo.appendingPathComponent("spec/endpoints.json").path])

    static func launchMock(_ extra: [String] = []) -> String? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Paths.repo.appendingPathComponent("Tests/support/mock_app_store.py").path,
                       "--cases", Paths.repo.appendingPathComponent("Tests/support/api_cases.json").path,
                       "--public-key", SigningFixtures.dir.appendingPathComponent("p256_public.pem").path,
                       "--key-id", ids.keyId, "--issuer-id", ids.issuerId, "--bundle-id", ids.bundleId] + extra
        let out = Pipe()
        let input = Pipe()
        p.standardOutput = out
        p.standardInput = input
        do { try p.run() } catch { return nil }
        keepAliveLock.lock()
        keepAlive.append(input)  // the write end stays open for the process lifetime
        keepAliveLock.unlock()
        var line = Data()
        while let byte = try? out.fileHandleForReading.read(upToCount: 1), let b = byte.first, b != 10 { line.append(b) }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else { return nil }
        return "http://127.0.0.1:\(port)"
    }
    static let keepAliveLock = NSLock()
    nonisolated(unsafe) static var keepAlive: [Pipe] = []

    /// timeoutMs: 60 s by default, for calls due in milliseconds: only a failing call meets it, never a slow machine
    /// (a loaded 2-core run once held the cooperative threads for 28 s). Timeout tests pass their own.
    static func client(transport: any HTTPTransport = DefaultTransport.make(), retry: APIRetryPolicy = .none,
                       timeoutMs: UInt32 = 60_000, baseURL: String? = nil) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(signingKey: SigningFixtures.key(), keyId: ids.keyId, issuerId: ids.issuerId, bundleId: ids.bundleId,
                                    environment: .localTesting, transport: transport,
                                    configuration: .init(timeoutMilliseconds: timeoutMs, retryPolicy: retry,
                                                         baseURL: baseURL ?? mockBaseURL ?? "http://127.0.0.1:9"))
    }

    static func builder() throws -> AppStoreServerAPIRequestBuilder {
        try AppStoreServerAPIRequestBuilder(signingKey: SigningFixtures.key(), keyId: ids.keyId, issuerId: ids.issuerId,
                                            bundleId: ids.bundleId, environment: .sandbox)
    }

    static func json(_ value: Any?) -> Any? {
        guard let value else { return nil }
        return value
    }

    /// JSON text with sorted keys, for comparing documents.
    static func canonical(_ object: Any) -> String {
        guard let d = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed]) else { return "?" }
        return String(decoding: d, as: UTF8.self)
    }
    static func canonical(bytes: [UInt8]) -> String {
        guard let o = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else { return "not JSON" }
        return canonical(o)
    }

    static func encodeSorted<T: Encodable>(_ value: T) -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        e.dateEncodingStrategy = .millisecondsSince1970
        guard let d = try? e.encode(value) else { return "?" }
        return canonical(bytes: [UInt8](d))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ object: Any) throws -> T {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .millisecondsSince1970
        return try d.decode(T.self, from: JSONSerialization.data(withJSONObject: object))
    }
}

enum DefaultTransport {
    static func make() -> any HTTPTransport { AsyncHTTPClientTransportFactory.make() }
}

/// The typed Swift calls equal to the canonical JSON params of api_cases.json.
enum TypedCalls {
    static let tx = "2000000000000001"
    static let otx = "1000000000000001"
    static let img = UUID(uuidString: "A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D")!
    static let msg = UUID(uuidString: "B2C3D4E5-F6A7-4B8C-9D0E-1F2A3B4C5D6E")!
    static let rinfo = AdvancedCommerceRequestInfo(requestReferenceId: UUID(uuidString: "3E9C1F5B-5A4E-4F0A-9C2E-1D7C1F2B6A11")!)
    static let png = [UInt8](Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg==")!)
    static let history = TransactionHistoryRequest(
        startDate: Date(timeIntervalSince1970: 1_698_148_800), endDate: Date(timeIntervalSince1970: 1_698_148_900),
        productIds: ["com.example.a", "com.example.b"], productTypes: [.autoRenewable, .consumable], sort: .descending,
        subscriptionGroupIdentifiers: ["sub_group_1", "sub_group_2"], inAppOwnershipType: .familyShared, revoked: false)

    /// The typed call of the endpoint; endpoints added to the spec later fall back to their canonical JSON params (a
    /// new endpoint needs only the spec and its case in api_cases.json).
    static func request(_ e: AppStoreServerAPIEndpoint) -> AppStoreServerAPIRequest {
        switch e {
        case .getTransactionInfo: return .getTransactionInfo(transactionId: tx)
        case .getTransactionHistory:
            return .getTransactionHistory(anyTransactionId: tx, revision: nil, transactionHistoryRequest: history)
        case .getTransactionHistoryV1:
            return .getTransactionHistoryV1(anyTransactionId: tx, revision: nil, transactionHistoryRequest: history)
        case .getAllSubscriptionStatuses: return .getAllSubscriptionStatuses(anyTransactionId: tx, status: [.expired, .active])
        case .getRefundHistory: return .getRefundHistory(anyTransactionId: tx, revision: nil)
        case .lookUpOrderId: return .lookUpOrderId(orderId: "MQ12/ab cd?#%")
        case .getAppTransactionInfo: return .getAppTransactionInfo(anyTransactionId: tx)
        case .finishTransaction: return .finishTransaction(transactionId: tx)
        case .sendConsumptionData:
            return .sendConsumptionData(transactionId: tx, consumptionRequest: ConsumptionRequestV1(
                customerConsented: true, consumptionStatus: .notConsumed, platform: .nonApple, sampleContentProvided: false,
                deliveryStatus: .didNotDeliverDueToServerOutage, accountTenure: .thirtyDaysToNinetyDays, playTime: .oneDayToFourDays,
                lifetimeDollarsRefunded: .oneThousandDollarsToOneThousandNineHundredNinetyNineDollarsAndNinetyNineCents,
                lifetimeDollarsPurchased: .twoThousandDollarsOrGreater, userStatus: .limitedAccess, refundPreference: .noPreference))
        case .sendConsumptionInformation:
            return .sendConsumptionInformation(transactionId: tx, consumptionRequest: ConsumptionRequest(
                customerConsented: true, consumptionPercentage: 50000, deliveryStatus: .delivered, refundPreference: .grantProrated,
                sampleContentProvided: true))
        case .setAppAccountToken:
            return .setAppAccountToken(originalTransactionId: otx, updateAppAccountTokenRequest: UpdateAppAccountTokenRequest(
                appAccountToken: UUID(uuidString: "7E3FB20B-4CDB-47CC-936D-99D65F608138")!))
        case .extendSubscriptionRenewalDate:
            return .extendSubscriptionRenewalDate(originalTransactionId: otx, extendRenewalDateRequest: ExtendRenewalDateRequest(
                extendByDays: 45, extendReasonCode: .customerSatisfaction, requestIdentifier: "fdf964a4-233b-486c-aac1-97d8d52688ac"))
        case .extendRenewalDateForAllActiveSubscribers:
            return .extendRenewalDateForAllActiveSubscribers(massExtendRenewalDateRequest: MassExtendRenewalDateRequest(
                extendByDays: 45, extendReasonCode: .customerSatisfaction, requestIdentifier: "fdf964a4-233b-486c-aac1-97d8d52688ac",
                storefrontCountryCodes: ["USA", "MEX"], productId: "com.example.productId"))
        case .getStatusOfSubscriptionRenewalDateExtensions:
            return .getStatusOfSubscriptionRenewalDateExtensions(requestIdentifier: "20fba8a0-2b80-4a7d-a17f-85c1854727f8",
                                                                 productId: "com.example.product")
        case .requestTestNotification: return .requestTestNotification
        case .getTestNotificationStatus:
            return .getTestNotificationStatus(testNotificationToken: "8cd2974c-f905-492a-bf9a-b2f47c791d19_1700000000000")
        case .getNotificationHistory:
            return .getNotificationHistory(paginationToken: nil, notificationHistoryRequest: NotificationHistoryRequest(
                startDate: Date(timeIntervalSince1970: 1_698_148_900), endDate: Date(timeIntervalSince1970: 1_698_148_950),
                notificationType: .subscribed, notificationSubtype: .initialBuy, transactionId: "999733843", onlyFailures: true))
        case .uploadImage: return .uploadImage(imageIdentifier: img, image: png, imageSize: .fullSize)
        case .deleteImage: return .deleteImage(imageIdentifier: img)
        case .getImageList: return .getImageList
        case .uploadMessage:
            return .uploadMessage(messageIdentifier: msg, uploadMessageRequestBody: UploadMessageRequestBody(
                header: "Header text", body: "Body text", image: UploadMessageImage(imageIdentifier: img, altText: "Alt text"),
                headerPosition: .aboveImage, bulletPoints: [BulletPoint(text: "Point one", imageIdentifier: img, altText: "Bullet image")]))
        case .deleteMessage: return .deleteMessage(messageIdentifier: msg)
        case .getMessageList: return .getMessageList
        case .configureDefaultMessage:
            return .configureDefaultMessage(productId: "com.example.product", locale: "en-US",
                                            defaultConfigurationRequest: DefaultConfigurationRequest(messageIdentifier: msg))
        case .deleteDefaultMessage: return .deleteDefaultMessage(productId: "com.example.product", locale: "en-US")
        case .getDefaultMessage: return .getDefaultMessage(productId: "com.example.product", locale: "en-US")
        case .configureRealtimeURL:
            return .configureRealtimeURL(realtimeUrlRequest: RealtimeUrlRequest(realtimeURL: "https://example.com/realtime?x=1"))
        case .deleteRealtimeURL: return .deleteRealtimeURL
        case .getRealtimeURL: return .getRealtimeURL
        case .initiatePerformanceTest:
            return .initiatePerformanceTest(performanceTestRequest: PerformanceTestRequest(originalTransactionId: otx))
        case .getPerformanceTestResults: return .getPerformanceTestResults(requestId: "perf-test-1")
        case .cancelSubscription:
            return .cancelSubscription(transactionId: tx, request: AdvancedCommerceSubscriptionCancelRequest(requestInfo: rinfo, storefront: "USA"))
        case .changeSubscriptionMetadata:
            return .changeSubscriptionMetadata(transactionId: tx, request: AdvancedCommerceSubscriptionChangeMetadataRequest(
                descriptors: AdvancedCommerceSubscriptionChangeMetadataDescriptors(description: "New description", displayName: "New name",
                                                                                   effective: .nextBillCycle),
                items: [AdvancedCommerceSubscriptionChangeMetadataItem(currentSku: "com.example.sku.1", description: "Item",
                                                                       displayName: "Item name", effective: .immediately,
                                                                       sku: "com.example.sku.2")],
                requestInfo: rinfo, taxCode: "C003-00-1"))
        case .changeSubscriptionPrice:
            return .changeSubscriptionPrice(transactionId: tx, request: AdvancedCommerceSubscriptionPriceChangeRequest(
                currency: "USD", items: [AdvancedCommerceSubscriptionPriceChangeItem(sku: "com.example.sku.1", price: 4990,
                                                                                     dependentSKUs: ["com.example.sku.2"])],
                requestInfo: rinfo))
        case .migrateSubscription:
            return .migrateSubscription(transactionId: tx, request: AdvancedCommerceSubscriptionMigrateRequest(
                descriptors: AdvancedCommerceSubscriptionMigrateDescriptors(description: "Pro", displayName: "Pro"),
                items: [AdvancedCommerceSubscriptionMigrateItem(description: "Item", displayName: "Item", sku: "com.example.sku.1")],
                requestInfo: rinfo, targetProductId: "com.example.ac.product", taxCode: "C003-00-1"))
        case .revokeSubscription:
            return .revokeSubscription(transactionId: tx, request: AdvancedCommerceSubscriptionRevokeRequest(
                refundReason: .legal, refundRiskingPreference: true, refundType: .prorated, requestInfo: rinfo))
        case .requestTransactionRefund:
            return .requestTransactionRefund(transactionId: tx, request: AdvancedCommerceRequestRefundRequest(
                currency: "USD", items: [AdvancedCommerceRequestRefundItem(sku: "com.example.sku.1", refundAmount: 990, refundReason: .other,
                                                                           refundType: .custom, revoke: false)],
                refundRiskingPreference: false, requestInfo: rinfo))
        }
    }

    /// Calls the client method of the endpoint (Apple's method names) with the request's arguments and returns the
    /// decoded answer (nil for endpoints without one).
    static func call(_ c: AppStoreServerAPIClient, _ r: AppStoreServerAPIRequest) async throws(AppStoreServerAPIError) -> (any Encodable)? {
        switch r {
        case .getTransactionInfo(let t): return try await c.getTransactionInfo(transactionId: t)
        case .getTransactionHistory(let t, let rev, let f):
            return try await c.getTransactionHistory(anyTransactionId: t, revision: rev, transactionHistoryRequest: f, version: .v2)
        case .getTransactionHistoryV1(let t, let rev, let f):
            return try await c.getTransactionHistory(anyTransactionId: t, revision: rev, transactionHistoryRequest: f, version: .v1)
        case .getAllSubscriptionStatuses(let t, let s): return try await c.getAllSubscriptionStatuses(anyTransactionId: t, status: s)
        case .getRefundHistory(let t, let rev): return try await c.getRefundHistory(anyTransactionId: t, revision: rev)
        case .lookUpOrderId(let o): return try await c.lookUpOrderId(orderId: o)
        case .getAppTransactionInfo(let t): return try await c.getAppTransactionInfo(anyTransactionId: t)
        case .finishTransaction(let t): try await c.finishTransaction(transactionId: t); return nil
        case .sendConsumptionData(let t, let b): try await c.sendConsumptionData(transactionId: t, consumptionRequest: b); return nil
        case .sendConsumptionInformation(let t, let b): try await c.sendConsumptionInformation(transactionId: t, consumptionRequest: b); return nil
        case .setAppAccountToken(let t, let b): try await c.setAppAccountToken(originalTransactionId: t, updateAppAccountTokenRequest: b); return nil
        case .extendSubscriptionRenewalDate(let t, let b):
            return try await c.extendSubscriptionRenewalDate(originalTransactionId: t, extendRenewalDateRequest: b)
        case .extendRenewalDateForAllActiveSubscribers(let b):
            return try await c.extendRenewalDateForAllActiveSubscribers(massExtendRenewalDateRequest: b)
        case .getStatusOfSubscriptionRenewalDateExtensions(let rid, let p):
            return try await c.getStatusOfSubscriptionRenewalDateExtensions(requestIdentifier: rid, productId: p)
        case .requestTestNotification: return try await c.requestTestNotification()
        case .getTestNotificationStatus(let t): return try await c.getTestNotificationStatus(testNotificationToken: t)
        case .getNotificationHistory(let t, let b): return try await c.getNotificationHistory(paginationToken: t, notificationHistoryRequest: b)
        case .uploadImage(let i, let png, let size): try await c.uploadImage(imageIdentifier: i, image: png, imageSize: size); return nil
        case .deleteImage(let i): try await c.deleteImage(imageIdentifier: i); return nil
        case .getImageList: return try await c.getImageList()
        case .uploadMessage(let m, let b): try await c.uploadMessage(messageIdentifier: m, uploadMessageRequestBody: b); return nil
        case .deleteMessage(let m): try await c.deleteMessage(messageIdentifier: m); return nil
        case .getMessageList: return try await c.getMessageList()
        case .configureDefaultMessage(let p, let l, let b):
            try await c.configureDefaultMessage(productId: p, locale: l, defaultConfigurationRequest: b); return nil
        case .deleteDefaultMessage(let p, let l): try await c.deleteDefaultMessage(productId: p, locale: l); return nil
        case .getDefaultMessage(let p, let l): return try await c.getDefaultMessage(productId: p, locale: l)
        case .configureRealtimeURL(let b): try await c.configureRealtimeURL(realtimeUrlRequest: b); return nil
        case .deleteRealtimeURL: try await c.deleteRealtimeURL(); return nil
        case .getRealtimeURL: return try await c.getRealtimeURL()
        case .initiatePerformanceTest(let b): return try await c.initiatePerformanceTest(performanceTestRequest: b)
        case .getPerformanceTestResults(let id): return try await c.getPerformanceTestResults(requestId: id)
        case .cancelSubscription(let t, let b): return try await c.cancelSubscription(transactionId: t, request: b)
        case .changeSubscriptionMetadata(let t, let b): return try await c.changeSubscriptionMetadata(transactionId: t, request: b)
        case .changeSubscriptionPrice(let t, let b): return try await c.changeSubscriptionPrice(transactionId: t, request: b)
        case .migrateSubscription(let t, let b): return try await c.migrateSubscription(transactionId: t, request: b)
        case .revokeSubscription(let t, let b): return try await c.revokeSubscription(transactionId: t, request: b)
        case .requestTransactionRefund(let t, let b): return try await c.requestTransactionRefund(transactionId: t, request: b)
        }
    }
}

/// spec/endpoints.json as the tests read it (independently of scripts/generate).
struct SpecEndpoints {
    let name: String
    let method: String
    let path: String
    let rateLimit: Int?
    let paginated: Bool
    let deprecated: Bool
    /// Path and scalar query parameter names, and "body" for a model body (flattened query models are not listed).
    let parameterKeys: Set<String>

    static func all() throws -> [SpecEndpoints] {
        let data = try Data(contentsOf: Paths.repo.appendingPathComponent("spec/endpoints.json"))
        let doc = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let list = try #require(doc["endpoints"] as? [[String: Any]])
        return list.map { e in
            let params = e["parameters"] as? [[String: Any]] ?? []
            var keys = Set<String>()
            for p in params {
                let type = p["type"] as? String
                switch p["in"] as? String {
                case "body": keys.insert(type == "Bytes" ? p["name"] as? String ?? "" : "body")
                case "query" where type?.first?.isUppercase == true && type != "String" && type != "Bool" && type != "Date" && type != "UUID":
                    break  // a model or enum: flattened model fields are checked by requestMatchesCanonicalCase
                default: keys.insert(p["name"] as? String ?? "")
                }
            }
            return SpecEndpoints(name: e["name"] as? String ?? "", method: e["method"] as? String ?? "",
                                 path: e["path"] as? String ?? "", rateLimit: e["rateLimitPerSecond"] as? Int,
                                 paginated: e["pagination"] != nil, deprecated: e["deprecated"] as? Bool ?? false,
                                 parameterKeys: keys)
        }
    }
}
