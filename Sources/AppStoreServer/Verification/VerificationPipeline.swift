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

    /// The whole check sequence. Limits and the signature come before anything expensive, and before anything that
    /// leaves a trace (the chain cache, OCSP exchanges through the host's transport):
    ///  1. size (before a byte is read), segments (strict base64url);
    ///  2. header (alg ES256, x5c of 3), the leaf and intermediate certificates parsed, the leaf's shape (P-256 key,
    ///     Apple's leaf marker), then the ES256 signature with x5c[0]'s key — or, for a header seen before, the
    ///     cached chain's key;
    ///  3. the payload: strict JSON (no duplicate keys, valid UTF-8, no BOM, bounded nesting), then the model;
    ///  4. the chain to the caller's roots at the payload's effective date (cached, or built with OpenSSL and, with
    ///     online checks, OCSP of the intermediate and the leaf) — only chains of correctly signed payloads are cached;
    ///  5. kind and identity (bundle id, app Apple id, environment).
    ///  `checkIdentity` false leaves step 5 to the caller (Apple's verifyNotification hook, for notifications).
    func verify<T: SignedPayloadModel>(_ jws: UnsafeRawBufferPointer, as type: T.Type,
                                       checkIdentity: Bool = true) -> Result<Verified<T>, VerificationFailure> {
        guard jws.count <= maxJWSBytes else {
            return .failure(VerificationFailure(.inputTooLarge,
                "the JWS is \(jws.count) bytes; at most \(maxJWSBytes) are accepted (App Store JWS are a few KB; "
                + "the limit is the verifier's maxJWSBytes)"))
        }
        let parsed: CompactJWS
        switch CompactJWS.split(jws) {
        case .success(let p): parsed = p
        case .failure(let f): return .failure(f)
        }
        let signingInput = UnsafeRawBufferPointer(rebasing: jws[0..<parsed.signingInputLength])
        let skipSignature = environment == .xcode || environment == .localTesting
        var signer: Signer?
        if skipSignature {
            // Apple's libraries do not check signatures of locally signed (StoreKit testing) data, but the header
            // must still be a JWS header.
            if case .failure(let f) = parsed.decodeHeader() { return .failure(f) }
        } else {
            switch authenticate(parsed, signingInput: signingInput) {
            case .success(let s): signer = s
            case .failure(let f):
                // A payload whose signature failed is not parsed (forged bytes cost one ES256 verify, no more); only
                // its first byte says whether it could be a JWS payload at all (a JSON object), as Apple's readers
                // report such input as malformed whatever its signature.
                if f.reason == .badSignature, parsed.payload.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) != UInt8(ascii: "{") {
                    return .failure(VerificationFailure(.malformed, "JWS payload is not a JSON object"))
                }
                return .failure(f)
            }
        }

        let payloadJSON: JSONValue
        do { payloadJSON = try JSONParser.parse(parsed.payload) } catch {
            return .failure(VerificationFailure(.malformed, "JWS payload is not JSON: \(error)"))
        }
        var model: T?
        var modelError: JSONDecodeError?
        do throws(JSONDecodeError) { model = try T(json: payloadJSON, strict: false) } catch { modelError = error }
        let probe = model == nil ? PayloadProbe(payloadJSON) : nil
        if model == nil && probe == nil {
            return .failure(VerificationFailure(.undecodablePayload,
                "payload does not decode as \(T.kind.article): the top level is not a JSON object"))
        }

        if let signer {
            let date = model.map { $0.effectiveDate } ?? probe?.effectiveDate(for: T.kind)
            if let failure = checkChain(signer, effectiveDate: date) { return .failure(failure) }
        }

        guard let value = model else {
            return .failure(VerificationFailure(.undecodablePayload,
                "payload does not decode as \(T.kind.article): \(modelError.map { "\($0)" } ?? "unknown error")"))
        }
        // What kind the payload really is matters only when the identity checks fail, or for kinds whose checks
        // another kind could pass (renewal info checks the environment only).
        guard checkIdentity else {
            // The caller checks the app, so the kind is checked here always: another kind's payload would name none.
            if let actual = PayloadProbe(payloadJSON)?.kind, actual != T.kind {
                return .failure(VerificationFailure(status: .INVALID_APP_IDENTIFIER, reason: .wrongKind,
                    message: "payload is \(actual.article), not \(T.kind.article): use \(actual.operation)"))
            }
            return .success(Verified(value: value, payloadJSON: parsed.payload))
        }
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

    /// Who signed: a chain verified before (its header is in the cache), or certificates that still have to chain to
    /// the caller's roots. Either way the signature is already checked.
    enum Signer {
        case cached(VerifiedChain, ChainCache.Key)
        case fresh(leaf: Certificate, intermediate: Certificate, ChainCache.Key)
    }

    /// Step 2: the signing key and the ES256 signature. Nothing here is stored or sent anywhere.
    private func authenticate(_ jws: CompactJWS, signingInput: UnsafeRawBufferPointer) -> Result<Signer, VerificationFailure> {
        // The cache key is the exact header segment: a hit means this very header (alg, exact x5c bytes) already
        // passed every check of the header and the chain; its leaf key checks the signature.
        let key = ChainCache.Key(header: [UInt8](jws.headerSegment))
        let now = Timestamp.now()
        let signer: Signer
        let leafKey: OpaquePointer
        if let cached = cache.lookup(key, now: now) {
            signer = .cached(cached, key)
            leafKey = cached.leafKey
        } else {
            switch parseCertificates(jws) {
            case .failure(let f): return .failure(f)
            case .success(let (leaf, intermediate, k)):
                signer = .fresh(leaf: leaf, intermediate: intermediate, key)
                leafKey = k
            }
        }
        guard jws.signature.count == 64 else {
            return .failure(VerificationFailure(.badSignature,
                "signature is \(jws.signature.count) bytes; ES256 requires the 64-byte JOSE r||s form (DER signatures are rejected)"))
        }
        let valid = withExtendedLifetime(signer) { ES256.verify(publicKey: leafKey, signature: jws.signature, message: signingInput) }
        guard valid else {
            return .failure(VerificationFailure(.badSignature, "ES256 signature does not match the header and payload under the leaf key"))
        }
        return .success(signer)
    }

    /// The header's alg and x5c, the two certificates it carries, and the leaf's shape (Apple's leaf marker, a P-256
    /// key) — cheap checks on the certificates themselves; whether they chain to a root comes after the signature.
    private func parseCertificates(_ jws: CompactJWS) -> Result<(Certificate, Certificate, OpaquePointer), VerificationFailure> {
        let header: CompactJWS.Header
        switch jws.decodeHeader() {
        case .success(let h): header = h
        case .failure(let f): return .failure(f)
        }
        guard header.alg == "ES256" else {
            // The header is attacker-controlled: quote at most a short, printable prefix of it.
            let alg = header.alg.map { "\"\(JSONParser.printable(String($0.prefix(32))))\"" } ?? "missing"
            return .failure(VerificationFailure(.unsupportedAlgorithm, "JWS alg is \(alg); only ES256 is accepted"))
        }
        guard let x5c = header.x5c else {
            return .failure(VerificationFailure(.missingX5c, "JWS header has no x5c certificate chain"))
        }
        guard !x5c.isEmpty else {
            // Its own reason: Apple's libraries report an empty x5c differently from a chain of the wrong length
            // (Python: VERIFICATION_FAILURE), so the bindings need not look inside the JWS to tell them apart.
            return .failure(VerificationFailure(.emptyX5c,
                "x5c is an empty list; exactly 3 certificates (leaf, intermediate, root) are required"))
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
        guard let marker = ObjectIdentifiers.leafMarkerObject.obj else {
            return .failure(VerificationFailure(.internal, "OpenSSL could not create the marker OIDs"))
        }
        guard leaf.hasExtension(marker) else {
            return .failure(VerificationFailure(.missingMarkerOID,
                "leaf certificate lacks Apple's App Store marker extension \(ObjectIdentifiers.leafMarker)"))
        }
        guard let key = leaf.p256PublicKey else {
            return .failure(VerificationFailure(.badCertificate, "leaf certificate key is not an EC P-256 key (ES256 requires P-256)"))
        }
        return .success((leaf, intermediate, key))
    }

    /// Step 4: the chain of a correctly signed payload, at its effective date: from the cache (only the date window is
    /// checked), else built with OpenSSL (and, online, checked with OCSP) and cached.
    private func checkChain(_ signer: Signer, effectiveDate: Date?) -> VerificationFailure? {
        let now = Timestamp.now()
        // Offline, Apple validates at the payload's own date; online checks (and undated payloads) use now.
        let time = enableOnlineChecks ? now : effectiveDate.map(Timestamp.seconds) ?? now
        let leaf: Certificate, intermediate: Certificate, key: ChainCache.Key
        switch signer {
        case .cached(let chain, let k):
            if chain.isValid(at: time) { return nil }
            // Outside the window: verify from scratch so that the failure carries OpenSSL's precise reason.
            (leaf, intermediate, key) = (chain.leaf, chain.intermediate, k)
            return buildChain(leaf: leaf, intermediate: intermediate, time: time, now: now).failure
        case .fresh(let l, let i, let k):
            (leaf, intermediate, key) = (l, i, k)
        }
        var flight: Flight?
        if let online {
            // Concurrent first sightings of one chain wait for a single round of OCSP exchanges, but not for ever.
            switch cache.lookupOrJoin(key, now: now) {
            case .cached(let c)?:
                if c.isValid(at: time) { return nil }
            case .lead(let f)?: flight = f
            case .follow(let f)?:
                // nil when the leader failed or is still busy after its two exchanges' timeouts and a margin (its
                // transport ignores the timeout?): then this call checks for itself.
                if let c = f.wait(milliseconds: online.followerWaitMilliseconds), c.isValid(at: time) { return nil }
            case nil: break
            }
        }
        switch buildChain(leaf: leaf, intermediate: intermediate, time: time, now: now) {
        case .failure(let f):
            if let flight { cache.settle(key, flight, nil, now: now, validUntil: nil) }
            return f
        case .success(let (verified, validUntil)):
            // Only good chains (online: with good OCSP answers) reach the cache, and the entry lives no longer than
            // the answers are current; failures are never cached.
            if let flight {
                cache.settle(key, flight, verified, now: now, validUntil: validUntil)
            } else {
                cache.insert(key, verified, now: now, validUntil: validUntil)
            }
            return nil
        }
    }

    /// The chain at `time` and, with online checks, the OCSP answers: a chain to cache, with the time until which
    /// its OCSP answers hold (nil offline).
    private func buildChain(leaf: Certificate, intermediate: Certificate, time: Int64,
                            now: Int64) -> Result<(VerifiedChain, Int64?), VerificationFailure> {
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

extension Result {
    /// The failure, or nil on success.
    var failure: Failure? {
        if case .failure(let f) = self { return f }
        return nil
    }
}
