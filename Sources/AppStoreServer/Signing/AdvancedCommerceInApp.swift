import FoundationEssentials

/// One of the four Advanced Commerce in-app request models. Each encodes its `operation` and `version: "1"`.
public protocol AdvancedCommerceInAppRequest: Sendable {
    /// The request's `operation` value, e.g. `CREATE_SUBSCRIPTION`.
    static var operation: String { get }
    /// The request's `version` value (`1`).
    static var version: String { get }
    /// Checks Apple's documented limits (the generated `validate()` of the model).
    func validate() throws(ModelValidationError)
}

/// What the signature creator needs of a request model beyond Apple's protocol: the library's own JSON.
typealias AdvancedCommerceInAppRequestModel = AdvancedCommerceInAppRequest & JSONDecodable & JSONEncodable

extension AdvancedCommerceOneTimeChargeCreateRequest: AdvancedCommerceInAppRequest {}
extension AdvancedCommerceSubscriptionCreateRequest: AdvancedCommerceInAppRequest {}
extension AdvancedCommerceSubscriptionModifyInAppRequest: AdvancedCommerceInAppRequest {}
extension AdvancedCommerceSubscriptionReactivateInAppRequest: AdvancedCommerceInAppRequest {}

/// Advanced Commerce in-app request signatures, `aud: advanced-commerce-api`, claim `request` = standard base64
/// of the request JSON.
public struct AdvancedCommerceInAppSignatureCreator: Sendable {
    let base: JWSSignatureCreator

    static let requestTypes: [any AdvancedCommerceInAppRequestModel.Type] = [
        AdvancedCommerceOneTimeChargeCreateRequest.self, AdvancedCommerceSubscriptionCreateRequest.self,
        AdvancedCommerceSubscriptionModifyInAppRequest.self, AdvancedCommerceSubscriptionReactivateInAppRequest.self,
    ]

    /// A creator that signs with `signingKey` for the key id, issuer and bundle id given.
    public init(signingKey: SigningKey, keyId: String, issuerId: String, bundleId: String) throws(SigningError) {
        base = try JWSSignatureCreator(key: signingKey, keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }
    /// Apple's initializer: the PEM is parsed here (prefer sharing one `SigningKey`).
    public init(signingKey: String, keyId: String, issuerId: String, bundleId: String) throws(SigningError) {
        try self.init(signingKey: try loadKey(signingKey), keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }

    /// Validates the request against Apple's limits, then signs it. `nonce`: a UUID, or nil for a fresh one.
    public func createSignature(advancedCommerceInAppRequest request: some AdvancedCommerceInAppRequest,
                                nonce: String? = nil) throws(SigningError) -> String {
        guard let model = request as? any AdvancedCommerceInAppRequestModel else {
            throw .argument("\(type(of: request)) is not one of the four Advanced Commerce in-app request models")
        }
        return try sign(model, nonce: nonce)
    }

    private func sign(_ request: some AdvancedCommerceInAppRequestModel, nonce: String?) throws(SigningError) -> String {
        do throws(ModelValidationError) { try request.validate() } catch {
            throw SigningError(.invalidRequest(error), "invalid \(type(of: request)): \(error)")
        }
        let json: [UInt8]
        do throws(JSONWriteError) { json = try request.jsonBytes() } catch {
            throw SigningError(.invalidArgument, "the request cannot be written as JSON: \(error)")
        }
        let encoded = Base64.encode(json, alphabet: .standard)
        return try base.create(audience: "advanced-commerce-api", nonce: nonce) { c in c.member("request", encoded) }
    }

    /// The request as JSON (for the C ABI and bindings): its `operation` key picks the model. Decoded strictly: keys
    /// the model does not read are rejected at every level (the error names the key path, e.g. `items[0].descripton`),
    /// so a misspelt optional field never silently drops out of the signed request; `version`, when given, must be "1".
    public func createSignature(requestJSON: [UInt8], nonce: String? = nil) throws(SigningError) -> String {
        let operations = Self.requestTypes.map { $0.operation }.joined(separator: ", ")
        let tree: JSONValue
        do { tree = try JSONParser.parse(requestJSON) } catch {
            throw .argument("request_json is not a JSON object (\(error))")
        }
        guard case .object = tree else { throw .argument("request_json is not a JSON object") }
        guard case .string(let operation)? = tree["operation"] else {
            throw .argument("request_json has no \"operation\" string (one of \(operations))")
        }
        guard let type = Self.requestTypes.first(where: { $0.operation == operation }) else {
            throw .argument("unknown operation \"\(JSONParser.printable(operation))\"; expected one of \(operations)")
        }
        return try sign(type, tree, nonce: nonce)
    }

    private func sign<T: AdvancedCommerceInAppRequestModel>(_ type: T.Type, _ tree: JSONValue,
                                                            nonce: String?) throws(SigningError) -> String {
        let request: T
        do throws(JSONDecodeError) { request = try T(json: tree, strict: true) } catch {
            if case .unknownKey = error.problem {
                throw .argument("request_json: \(error) (in \(T.operation))")
            }
            throw .argument("request_json does not decode as \(T.self): \(error)")
        }
        return try sign(request, nonce: nonce)
    }
}
