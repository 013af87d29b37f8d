import FoundationEssentials

/// The parameters object of one endpoint call (the C ABI's `params_json`), read strictly: not an object, a key that
/// is not one of the endpoint's parameters, a missing required one, a value of the wrong type, or a key a body model
/// does not read (at any depth) is an error naming it, so a misspelt parameter never silently drops out of a
/// request. Used by the generated `AppStoreServerAPIRequest.init(endpoint:parametersJSON:)`.
struct APIParameters {
    let endpoint: AppStoreServerAPIEndpoint
    private let object: JSONValue
    private let members: [JSONMember]

    init(endpoint: AppStoreServerAPIEndpoint, json: [UInt8]) throws(AppStoreServerAPIError) {
        self.endpoint = endpoint
        let text = json.isEmpty ? Array("{}".utf8) : json
        let value: JSONValue
        do { value = try JSONParser.parse(text) } catch {
            throw .argument("\(endpoint.name): params_json is not a JSON object (\(error))", endpoint)
        }
        guard case .object(let members) = value else {
            throw .argument("\(endpoint.name): params_json must be a JSON object, not \(value.kindName)", endpoint)
        }
        let keys = endpoint.parameterKeys
        let all = keys.required + keys.optional
        for m in members where !all.contains(m.key) {
            let list = all.map { "\"\($0)\"" }.joined(separator: ", ")
            throw .argument("\(endpoint.name): unknown parameter \"\(JSONParser.printable(m.key))\" (parameters: \(list.isEmpty ? "none" : list))",
                            endpoint)
        }
        for key in keys.required where !members.contains(where: { $0.key == key }) {
            throw .argument("\(endpoint.name): missing required parameter \"\(key)\"", endpoint)
        }
        self.object = value
        self.members = members
    }

    private func fail(_ error: JSONDecodeError) -> AppStoreServerAPIError {
        .argument("\(endpoint.name): params_json: \(error)", endpoint)
    }

    func value<T: JSONDecodable>(_ key: String) throws(AppStoreServerAPIError) -> T {
        guard let v: T = try optional(key) else { throw .argument("\(endpoint.name): missing required parameter \"\(key)\"", endpoint) }
        return v
    }

    func optional<T: JSONDecodable>(_ key: String) throws(AppStoreServerAPIError) -> T? {
        guard let m = members.first(where: { $0.key == key }) else { return nil }
        do throws(JSONDecodeError) { return try JSONFields.optional(m.value, strict: true) } catch { throw fail(error.at(key)) }
    }

    /// A model sent as query parameters: its fields are top-level parameters (already checked to be known).
    func flattened<T: JSONDecodable>() throws(AppStoreServerAPIError) -> T {
        do throws(JSONDecodeError) { return try T(json: object, strict: false) } catch { throw fail(error) }
    }

    /// Bytes as standard base64 text.
    func bytes(_ key: String) throws(AppStoreServerAPIError) -> [UInt8] {
        let text: String = try value(key)
        guard let bytes = Base64.decode(text, alphabet: .standard) else {
            throw .argument("\(endpoint.name): \(key) is not standard base64", endpoint)
        }
        return bytes
    }
}
