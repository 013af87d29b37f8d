/// JSON-level results, for the C ABI and for callers that want the signed JSON rather than the models
/// (unknown keys survive: the bytes are exactly what Apple signed).
extension SignedDataVerifier {
    /// Verifies `jws` (compact JWS bytes) as `kind` and returns the payload JSON exactly as signed.
    public func verifiedPayloadJSON(_ kind: SignedPayloadKind, _ jws: UnsafeRawBufferPointer) -> Result<[UInt8], VerificationFailure> {
        switch kind {
        case .notification: verify(jws, as: ResponseBodyV2DecodedPayload.self).map(\.payloadJSON)
        case .transaction: verify(jws, as: JWSTransactionDecodedPayload.self).map(\.payloadJSON)
        case .renewalInfo: verify(jws, as: JWSRenewalInfoDecodedPayload.self).map(\.payloadJSON)
        case .appTransaction: verify(jws, as: AppTransaction.self).map(\.payloadJSON)
        case .realtimeRequest: verify(jws, as: DecodedRealtimeRequestBody.self).map(\.payloadJSON)
        }
    }

    /// Verifies `jws` (compact JWS text) as `kind` and returns the payload JSON exactly as signed.
    public func verifiedPayloadJSON(_ kind: SignedPayloadKind, _ jws: String) -> Result<[UInt8], VerificationFailure> {
        var s = jws
        return s.withUTF8 { verifiedPayloadJSON(kind, UnsafeRawBufferPointer($0)) }
    }

    /// A notification verified but for the app it names (Apple's verifyNotification extension point): the payload JSON
    /// exactly as signed, and the identity the caller checks (by default with `notificationIdentityFailure`).
    public func verifiedNotificationJSONLeavingIdentity(_ jws: UnsafeRawBufferPointer)
        -> Result<(json: [UInt8], identity: NotificationIdentity?), VerificationFailure> {
        verify(jws, as: ResponseBodyV2DecodedPayload.self, checkIdentity: false).map { ($0.payloadJSON, $0.value.identity) }
    }

    /// Deep notification verification as one JSON object, the shape of the spec model `VerifiedNotification`:
    /// `{"notification":…,"transaction":…,"renewalInfo":…,"appTransaction":…}` (nested keys only when present), each
    /// part exactly as signed.
    public func verifiedNotificationDeepJSON(_ jws: UnsafeRawBufferPointer) -> Result<[UInt8], VerificationFailure> {
        verifyDeep(jws).map { d in
            var w = JSONWriter()
            w.beginObject()
            w.key("notification")
            w.raw(d.notificationJSON)
            for (key, json) in [("transaction", d.transactionJSON), ("renewalInfo", d.renewalInfoJSON),
                                ("appTransaction", d.appTransactionJSON)] {
                guard let json else { continue }
                w.key(key)
                w.raw(json)
            }
            w.endObject()
            return w.bytes
        }
    }
}
