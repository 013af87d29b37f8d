import FoundationEssentials

/// One of the four Advanced Commerce in-app request models. Each encodes its `operation` and `version: "1"`.
public protocol AdvancedCommerceInAppRequest: Codable, Sendable {
    static var operation: String { get }
    static var version: String { get }
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

    /// The request as JSON (for the C ABI and bindings): its `operation` key picks the model. Keys the model does
    /// not know are rejected at every level (the error names the key path, e.g. `items[0].descripton`), so a
    /// misspelt optional field never silently drops out of the signed request; `version`, when given, must be "1".
    public func createSignature(requestJSON: [UInt8]) throws(SigningError) -> String {
        let operations = Self.requestTypes.map { $0.operation }.joined(separator: ", ")
        guard let tree = try? JSONDecoder().decode(JSONTree.self, from: Data(requestJSON)), case .object(let top) = tree else {
            throw .argument("request_json is not a JSON object")
        }
        guard case .string(let operation)? = top["operation"] else {
            throw .argument("request_json has no \"operation\" string (one of \(operations))")
        }
        guard let type = Self.requestTypes.first(where: { $0.operation == operation }) else {
            throw .argument("unknown operation \"\(operation)\"; expected one of \(operations)")
        }
        if let version = top["version"], version != .null, version != .string(type.version) {
            throw .argument("request_json: \"version\" must be \"\(type.version)\" (the only version of \(operation)), or be left out")
        }
        return try sign(type, requestJSON, tree)
    }

    private func sign<T: AdvancedCommerceInAppRequest>(_ type: T.Type, _ json: [UInt8], _ tree: JSONTree) throws(SigningError) -> String {
        // Unknown keys first: a misspelt required key is named as such rather than reported as missing.
        let unknown: StrictJSONKeys.UnknownKey?
        let walked: Bool
        do {
            unknown = try StrictJSONKeys.firstUnknownKey(in: tree, as: T.self, alsoAllowedAtTop: ["operation", "version"])
            walked = true
        } catch {
            (unknown, walked) = (nil, false)
        }
        if let unknown {
            throw .argument("request_json: unknown key \"\(unknown.path)\" in \(T.operation); keys there: "
                            + unknown.known.map { "\"\($0)\"" }.joined(separator: ", "))
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        let request: T
        do { request = try decoder.decode(T.self, from: Data(json)) } catch {
            throw .argument("request_json does not decode as \(T.self): \(DecodingErrorText.describe(error))")
        }
        // A model that decodes but could not be walked for its keys: refuse rather than risk dropping a field.
        guard walked else { throw SigningError(.signingFailed, "internal: request_json could not be checked for unknown keys") }
        return try createSignature(advancedCommerceInAppRequest: request)
    }
}
