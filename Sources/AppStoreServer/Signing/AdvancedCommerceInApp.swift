import FoundationEssentials

/// One of the four Advanced Commerce in-app request models. Each encodes its `operation` and `version: "1"`.
public protocol AdvancedCommerceInAppRequest: Codable, Sendable {
    static var operation: String { get }
    func validate() throws(ModelValidationError)
}

extension AdvancedCommerceOneTimeChargeCreateRequest: AdvancedCommerceInAppRequest {}
extension AdvancedCommerceSubscriptionCreateRequest: AdvancedCommerceInAppRequest {}
extension AdvancedCommerceSubscriptionModifyInAppRequest: AdvancedCommerceInAppRequest {}
extension AdvancedCommerceSubscriptionReactivateInAppRequest: AdvancedCommerceInAppRequest {}

/// Advanced Commerce in-app request signatures, `aud: advanced-commerce-api`, claim `request` = standard base64
/// of the request JSON.
public struct AdvancedCommerceInAppSignatureCreator: Sendable {
    let base: JWSSignatureCreator

    static let requestTypes: [any AdvancedCommerceInAppRequest.Type] = [
        AdvancedCommerceOneTimeChargeCreateRequest.self, AdvancedCommerceSubscriptionCreateRequest.self,
        AdvancedCommerceSubscriptionModifyInAppRequest.self, AdvancedCommerceSubscriptionReactivateInAppRequest.self,
    ]

    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String) throws(SigningError) {
        base = try JWSSignatureCreator(key: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }
    public init(signingKey: String, keyId: String, issuerId: String, bundleId: String) throws(SigningError) {
        try self.init(signingKey: try loadKey(signingKey), keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }

    /// Validates the request against Apple's limits, then signs it.
    public func createSignature(advancedCommerceInAppRequest request: some AdvancedCommerceInAppRequest) throws(SigningError) -> String {
        do throws(ModelValidationError) { try request.validate() } catch {
            throw SigningError(.invalidRequest(error), "invalid \(type(of: request)): \(error)")
        }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        let json: Data
        do { json = try encoder.encode(request) } catch {
            throw SigningError(.signingFailed, "the request could not be encoded as JSON: \(error)")
        }
        let encoded = Base64.encode(json, alphabet: .standard)
        return try base.create(audience: "advanced-commerce-api") { c in c.add("request", encoded) }
    }

    /// The request as JSON (for the C ABI and bindings): its `operation` key picks the model.
    public func createSignature(requestJSON: [UInt8]) throws(SigningError) -> String {
        struct Operation: Decodable { let operation: String? }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        let data = Data(requestJSON)
        guard let op = try? decoder.decode(Operation.self, from: data) else {
            throw .argument("request_json is not a JSON object")
        }
        guard let operation = op.operation else {
            throw .argument("request_json has no \"operation\" (one of \(Self.requestTypes.map { $0.operation }.joined(separator: ", ")))")
        }
        guard let type = Self.requestTypes.first(where: { $0.operation == operation }) else {
            throw .argument("unknown operation \"\(operation)\"; expected one of \(Self.requestTypes.map { $0.operation }.joined(separator: ", "))")
        }
        return try sign(type, data, decoder)
    }

    private func sign<T: AdvancedCommerceInAppRequest>(_ type: T.Type, _ data: Data, _ decoder: JSONDecoder) throws(SigningError) -> String {
        let request: T
        do { request = try decoder.decode(T.self, from: data) } catch {
            throw .argument("request_json does not decode as \(T.self): \(DecodingErrorText.describe(error))")
        }
        return try createSignature(advancedCommerceInAppRequest: request)
    }
}
