import FoundationEssentials

/// A verified payload: the decoded model and the payload JSON exactly as Apple signed it (unknown keys kept).
struct Verified<T: Sendable>: Sendable {
    let value: T
    let payloadJSON: [UInt8]
}

/// A deep-verified notification plus the raw JSON of each part.
struct DeepVerified: Sendable {
    let decoded: VerifiedNotification
    let notificationJSON: [UInt8]
    let transactionJSON: [UInt8]?
    let renewalInfoJSON: [UInt8]?
    let appTransactionJSON: [UInt8]?
}

extension SignedDataVerifier {
    func verify<T: SignedPayloadModel>(_ jws: String, as type: T.Type) -> Result<Verified<T>, VerificationFailure> {
        var s = jws
        return s.withUTF8 { verify(UnsafeRawBufferPointer($0), as: type) }
    }

    /// The whole check sequence, in order: segments, header (alg, x5c), certificates, chain at the effective date,
    /// marker OIDs, ES256 signature, model decoding, payload kind, identity (bundle id, app Apple id, environment).
    func verify<T: SignedPayloadModel>(_ jws: UnsafeRawBufferPointer, as type: T.Type) -> Result<Verified<T>, VerificationFailure> {
        let parsed: CompactJWS
        switch CompactJWS.split(jws) {
        case .success(let p): parsed = p
        case .failure(let f): return .failure(f)
        }

        // Parse the payload first (strict: no duplicate keys, valid UTF-8, bounded nesting) and decode the model: it
        // carries the effective date. If it does not decode, the probe alone tells "not a JSON object" apart, and
        // "JSON of the wrong shape" is reported after the signature check so that tampered data is called tampered.
        let payloadJSON: JSONValue
        do { payloadJSON = try JSONParser.parse(parsed.payload) } catch {
            return .failure(VerificationFailure(.malformed, "JWS payload is not JSON: \(error)"))
        }
        var model: T?
        var modelError: JSONDecodeError?
        do throws(JSONDecodeError) { model = try T(json: payloadJSON, strict: false) } catch { modelError = error }
        let probe = model == nil ? PayloadProbe(payloadJSON) : nil
        if model == nil && probe == nil {
            // Valid JSON, but not an object: nothing to take a date or kind from.
            return .failure(VerificationFailure(.undecodablePayload,
                "payload does not decode as \(T.kind.article): the top level is not a JSON object"))
        }

        if environment == .xcode || environment == .localTesting {
            // Apple's libraries do not check signatures of locally signed (StoreKit testing) data, but the header
            // must still be a JWS header.
            if case .failure(let f) = parsed.decodeHeader() { return .failure(f) }
        } else {
            let date = model.map { $0.effectiveDate } ?? probe?.effectiveDate(for: T.kind)
            if let failure = checkSignature(parsed, signingInput: UnsafeRawBufferPointer(rebasing: jws[0..<parsed.signingInputLength]),
                                            effectiveDate: date) {
                return .failure(failure)
            }
        }

        guard let value = model else {
            return .failure(VerificationFailure(.undecodablePayload,
                "payload does not decode as \(T.kind.article): \(modelError.map { "\($0)" } ?? "unknown error")"))
        }
        // What kind the payload really is matters only when the identity checks fail, or for kinds whose checks
        // another kind could pass (renewal info checks the environment only).
        let identity = value.identityFailure(for: self)
        if identity != nil || T.probesKindOnSuccess {
            if let actual = PayloadProbe(payloadJSON)?.kind, actual != T.kind {
                // Keep the status Apple's identity checks give for this payload (e.g. INVALID_ENVIRONMENT for a
                // transaction given to the app-transaction call); the reason says what really happened.
                return .failure(VerificationFailure(status: identity?.status ?? .INVALID_APP_IDENTIFIER, reason: .wrongKind,
                    message: "payload is \(actual.article), not \(T.kind.article): use \(actual.operation)"))
            }
        }
        if let identity { return .failure(identity) }
        return .success(Verified(value: value, payloadJSON: parsed.payload))
    }

    private func checkSignature(_ jws: CompactJWS, signingInput: UnsafeRawBufferPointer, effectiveDate: Date?) -> VerificationFailure? {
        let now = Timestamp.now()
        // Offline, Apple validates at the payload's own date; online checks (and undated payloads) use now.
        let time = enableOnlineChecks ? now : effectiveDate.map(Timestamp.seconds) ?? now
        // The cache key is the exact header segment: a hit means this very header already passed every check
        // below up to the chain, so only the date window and the signature remain.
        let key = ChainCache.Key(header: [UInt8](jws.headerSegment))
        var chain: VerifiedChain?
        var flight: Flight?
        if let online {
            // Concurrent first sightings of one chain wait for a single round of OCSP exchanges, but not for ever.
            switch cache.lookupOrJoin(key, now: now) {
            case .cached(let c)?: chain = c
            case .lead(let f)?: flight = f
            case .follow(let f)?:
                // nil when the leader failed or is still busy after its two exchanges' timeouts and a margin (its
                // transport ignores the timeout?): then this call checks for itself.
                chain = f.wait(milliseconds: online.followerWaitMilliseconds)
            case nil: break
            }
        } else {
            chain = cache.lookup(key, now: now)
        }
        if let cached = chain, !cached.isValid(at: time) {
            chain = nil  // re-verify from scratch so the failure carries OpenSSL's precise reason
        }
        if chain == nil {
            let built = buildChain(jws, time: time, now: now)
            switch built {
            case .failure(let f):
                if let flight { cache.settle(key, flight, nil, now: now, validUntil: nil) }
                return f
            case .success(let (verified, validUntil)):
                // Only good chains (online: with good OCSP answers) reach the cache, and the entry lives no longer
                // than the answers are current; failures are never cached.
                if let flight {
                    cache.settle(key, flight, verified, now: now, validUntil: validUntil)
                } else {
                    cache.insert(key, verified, now: now, validUntil: validUntil)
                }
                chain = verified
            }
        }
        guard let chain else { return VerificationFailure(.internal, "no verified chain") }
        guard jws.signature.count == 64 else {
            return VerificationFailure(.badSignature,
                "signature is \(jws.signature.count) bytes; ES256 requires the 64-byte JOSE r||s form (DER signatures are rejected)")
        }
        guard ES256.verify(publicKey: chain.leafKey, signature: jws.signature, message: signingInput) else {
            return VerificationFailure(.badSignature, "ES256 signature does not match the header and payload under the leaf key")
        }
        return nil
    }

    /// Header, certificates, chain at `time`, and with online checks the OCSP answers: a chain to cache, with the
    /// time until which its OCSP answers hold (nil offline).
    private func buildChain(_ jws: CompactJWS, time: Int64, now: Int64) -> Result<(VerifiedChain, Int64?), VerificationFailure> {
        let header: CompactJWS.Header
        switch jws.decodeHeader() {
        case .success(let h): header = h
        case .failure(let f): return .failure(f)
        }
        guard header.alg == "ES256" else {
            // The header is attacker-controlled: quote at most a short, printable prefix of it.
            let alg = header.alg.map { "\"\(String($0.unicodeScalars.prefix(32).filter { $0.value >= 0x20 && $0.value < 0x7F }))\"" } ?? "missing"
            return .failure(VerificationFailure(.unsupportedAlgorithm, "JWS alg is \(alg); only ES256 is accepted"))
        }
        guard let x5c = header.x5c else {
            return .failure(VerificationFailure(.missingX5c, "JWS header has no x5c certificate chain"))
        }
        guard x5c.count == 3 else {
            return .failure(VerificationFailure(.chainLength,
                "x5c has \(x5c.count) certificates; exactly 3 (leaf, intermediate, root) are required"))
        }
        guard let leafDER = Base64.decode(x5c[0], alphabet: .standard) else {
            return .failure(VerificationFailure(.badCertificate, "x5c[0] (leaf) is not base64"))
        }
        guard let intermediateDER = Base64.decode(x5c[1], alphabet: .standard) else {
            return .failure(VerificationFailure(.badCertificate, "x5c[1] (intermediate) is not base64"))
        }
        guard let leaf = Certificate(der: leafDER) else {
            return .failure(VerificationFailure(.badCertificate, "x5c[0] (leaf) is not a DER X.509 certificate"))
        }
        guard let intermediate = Certificate(der: intermediateDER) else {
            return .failure(VerificationFailure(.badCertificate, "x5c[1] (intermediate) is not a DER X.509 certificate"))
        }
        let verified: VerifiedChain
        switch ChainVerifier.verify(leaf: leaf, intermediate: intermediate, trust: trust, at: time) {
        case .failure(let f): return .failure(f)
        case .success(let v): verified = v
        }
        // Online: revocation of the intermediate, then the leaf. The URLs come from certificates that already
        // chained to the caller's roots, so a forged x5c cannot make the library contact hosts of its choosing.
        guard let online else { return .success((verified, nil)) }
        switch OCSP.check(verified, trust: trust, online: online, now: now) {
        case .failure(let f): return .failure(f)
        case .success(let until): return .success((verified, until))
        }
    }

    func verifyDeep(_ jws: String) -> Result<DeepVerified, VerificationFailure> {
        var s = jws
        return s.withUTF8 { verifyDeep(UnsafeRawBufferPointer($0)) }
    }

    func verifyDeep(_ jws: UnsafeRawBufferPointer) -> Result<DeepVerified, VerificationFailure> {
        let outer: Verified<ResponseBodyV2DecodedPayload>
        switch verify(jws, as: ResponseBodyV2DecodedPayload.self) {
        case .success(let v): outer = v
        case .failure(let f): return .failure(f)
        }
        func nested<T: SignedPayloadModel>(_ field: String, _ value: String?, _ type: T.Type) -> Result<Verified<T>?, VerificationFailure> {
            guard let value else { return .success(nil) }
            return verify(value, as: type).map { Optional($0) }.mapError { $0.nested(in: field) }
        }
        let n = outer.value
        let tx: Verified<JWSTransactionDecodedPayload>?
        let ri: Verified<JWSRenewalInfoDecodedPayload>?
        let at: Verified<AppTransaction>?
        switch nested("data.signedTransactionInfo", n.data?.signedTransactionInfo, JWSTransactionDecodedPayload.self) {
        case .success(let v): tx = v
        case .failure(let f): return .failure(f)
        }
        switch nested("data.signedRenewalInfo", n.data?.signedRenewalInfo, JWSRenewalInfoDecodedPayload.self) {
        case .success(let v): ri = v
        case .failure(let f): return .failure(f)
        }
        switch nested("appData.signedAppTransactionInfo", n.appData?.signedAppTransactionInfo, AppTransaction.self) {
        case .success(let v): at = v
        case .failure(let f): return .failure(f)
        }
        return .success(DeepVerified(
            decoded: VerifiedNotification(notification: n, transaction: tx?.value, renewalInfo: ri?.value, appTransaction: at?.value),
            notificationJSON: outer.payloadJSON, transactionJSON: tx?.payloadJSON,
            renewalInfoJSON: ri?.payloadJSON, appTransactionJSON: at?.payloadJSON))
    }
}
