import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// What online checks need: the transport that carries OCSP requests and the time each request may take.
struct OnlineChecks: Sendable {
    let transport: any BlockingHTTPTransport
    let timeoutMilliseconds: UInt32

    /// Slack on top of the two exchanges' timeouts for the leader's own work (chain verification, parsing).
    static let followerWaitMarginMilliseconds: UInt64 = 1000

    /// How long a caller waits for another caller already checking the same chain (two exchanges, one after the
    /// other, plus a margin) before it checks for itself: a transport that ignores its timeout, or calls back into
    /// the verifier, then delays only the calls that go through it.
    var followerWaitMilliseconds: UInt64 {
        2 * UInt64(timeoutMilliseconds) + Self.followerWaitMarginMilliseconds
    }
}

/// OCSP revocation checks of a verified chain (RFC 6960), as Apple's libraries do with online checks on: the
/// intermediate (against the root), then the leaf (against the intermediate), each at the responder named in the
/// certificate's Authority Information Access extension, failing hard on any answer that is not a fresh, properly
/// signed "good".
///
/// Checked per certificate, in this order (the first failure is reported):
///  1. the http(s) OCSP URLs of the AIA extension, in the extension's order (URLs of other schemes, such as ldap:,
///     are skipped; at most `maxResponders`)                       none: `ocsp_no_responder`
///  Steps 2-9 run for each URL in turn until one answers "good" (pass) or "revoked" (fail): any other outcome moves
///  on to the next URL, so one responder that is down, stale or answers for the wrong CA does not decide alone. When
///  none answered "good" or "revoked", the failure reported is the first one that is not retryable, else the first
///  one — retryable only when no responder could answer — and the message lists every URL's outcome.
///  2. the exchange: POST application/ocsp-request, nonce included  unreachable / timeout / non-200: retryable
///  3. DER OCSPResponse, at most 1 MiB, nothing after it            else `ocsp_malformed`
///  4. responseStatus successful                                    tryLater / internalError: retryable `ocsp_try_later`;
///                                                                  others `ocsp_refused`
///  5. a basic response signed by the issuer or by a responder the issuer delegated to (EKU OCSPSigning; any other
///     certificate the issuer issued is refused), its chain leading to the verifier's roots (OCSP_basic_verify)
///                                                                  else `ocsp_bad_signature`
///  6. a status for exactly this certificate id (issuer name and key hashes, serial)  else `ocsp_cert_id_mismatch`
///  7. the nonce echoed, when the responder echoes one (responders serving pre-signed answers, as large CAs do, do
///     not; freshness then rests on the update times)               else `ocsp_nonce_mismatch`
///  8. thisUpdate <= now + 60 s and now - 60 s <= nextUpdate (Apple's Node library allows the same 60 s skew); without
///     nextUpdate, thisUpdate no older than an hour                  else `ocsp_stale`
///  9. good; revoked -> `revoked` (time and reason in the message); unknown -> `ocsp_unknown`
enum OCSP {
    static let clockSkewSeconds: Int64 = 60
    /// How long an answer without nextUpdate counts as current, from its thisUpdate.
    static let maxAgeWithoutNextUpdate: Int64 = 3600
    static let maxResponseBytes = HTTPLimits.ocspResponseBytes
    /// The most OCSP URLs asked per certificate (Apple's certificates name one).
    static let maxResponders = 4

    /// Checks the intermediate, then the leaf. On success, the time (seconds since 1970) until which both answers
    /// hold: the earlier nextUpdate.
    static func check(_ chain: VerifiedChain, trust: TrustStore, online: OnlineChecks,
                      now: Int64) -> Result<Int64, VerificationFailure> {
        let intermediate = check(chain.intermediate, role: "intermediate", issuer: chain.root, trust: trust,
                                 online: online, now: now)
        guard case .success(let a) = intermediate else { return intermediate }
        let leaf = check(chain.leaf, role: "leaf", issuer: chain.intermediate, trust: trust, online: online, now: now)
        guard case .success(let b) = leaf else { return leaf }
        return .success(min(a, b))
    }

    /// One certificate's status from its responder; on success the time until which the answer holds.
    static func check(_ cert: Certificate, role: String, issuer: Certificate, trust: TrustStore,
                      online: OnlineChecks, now: Int64) -> Result<Int64, VerificationFailure> {
        func fail(_ reason: FailureReason, _ text: String) -> Result<Int64, VerificationFailure> {
            .failure(VerificationFailure(reason, "OCSP check of the \(role) certificate (serial \(cert.serialHex)): \(text)"))
        }

        // 1. Where to ask.
        let urls = cert.ocspURLs
        guard !urls.isEmpty else {
            return fail(.ocspNoResponder, "it names no OCSP responder (no OCSP URL in its Authority Information Access extension)")
        }
        let httpURLs = Array(urls.filter(isHTTPURL).prefix(maxResponders))
        guard !httpURLs.isEmpty else {
            let listed = urls.prefix(4).map { "\"\($0)\"" }.joined(separator: ", ") + (urls.count > 4 ? ", ..." : "")
            return fail(.ocspNoResponder, "none of its OCSP URLs is an http(s) URL (\(listed))")
        }

        // 2. The request: one certificate id (SHA-1 name and key hashes, as responders expect) and a nonce; the same
        // request goes to each responder.
        guard let requestID = OCSP_cert_to_id(nil, cert.x509, issuer.x509) else {
            OpenSSL.drainErrors()
            return fail(.internal, "OpenSSL could not build the certificate id")
        }
        guard let lookupID = OCSP_cert_to_id(nil, cert.x509, issuer.x509) else {
            OCSP_CERTID_free(requestID)  // not yet owned by a request
            OpenSSL.drainErrors()
            return fail(.internal, "OpenSSL could not build the certificate id")
        }
        defer { OCSP_CERTID_free(lookupID) }
        guard let request = OCSP_REQUEST_new() else {
            OCSP_CERTID_free(requestID)
            return fail(.internal, "OpenSSL could not allocate an OCSP request")
        }
        defer { OCSP_REQUEST_free(request) }
        guard OCSP_request_add0_id(request, requestID) != nil else {  // the request owns the id from here
            OCSP_CERTID_free(requestID)
            OpenSSL.drainErrors()
            return fail(.internal, "OpenSSL could not add the certificate id to the request")
        }
        guard OCSP_request_add1_nonce(request, nil, -1) == 1 else {
            OpenSSL.drainErrors()
            return fail(.internal, "OpenSSL could not add a nonce to the request")
        }
        let length = i2d_OCSP_REQUEST(request, nil)
        guard length > 0 else {
            OpenSSL.drainErrors()
            return fail(.internal, "OpenSSL could not encode the OCSP request")
        }
        var body = [UInt8](repeating: 0, count: Int(length))
        let written = body.withUnsafeMutableBufferPointer { buf -> Int32 in
            var p = buf.baseAddress
            return i2d_OCSP_REQUEST(request, &p)
        }
        guard written == length else { return fail(.internal, "OpenSSL encoded the OCSP request inconsistently") }

        var failures: [(url: String, failure: VerificationFailure)] = []
        for url in httpURLs {
            let answer = ask(url, body: body, request: request, lookupID: lookupID, cert: cert, role: role,
                             issuer: issuer, trust: trust, online: online, now: now)
            switch answer {
            case .success: return answer
            case .failure(let f) where f.reason == .revoked: return answer
            case .failure(let f): failures.append((url, f))
            }
        }
        let chosen = failures.first { !$0.failure.reason.isRetryable } ?? failures[0]
        guard failures.count > 1 else { return .failure(chosen.failure) }
        let others = failures.filter { $0.url != chosen.url || $0.failure.message != chosen.failure.message }
            .map { "\($0.url): \($0.failure.reason.name)" }.joined(separator: ", ")
        return .failure(VerificationFailure(chosen.failure.reason,
            chosen.failure.message + " (responders asked: \(failures.count); the others: \(others))"))
    }

    /// Steps 2-9 at one responder: the exchange and the checks of its answer.
    private static func ask(_ url: String, body: [UInt8], request: OpaquePointer, lookupID: OpaquePointer,
                            cert: Certificate, role: String, issuer: Certificate, trust: TrustStore,
                            online: OnlineChecks, now: Int64) -> Result<Int64, VerificationFailure> {
        func fail(_ reason: FailureReason, _ text: String) -> Result<Int64, VerificationFailure> {
            .failure(VerificationFailure(reason, "OCSP check of the \(role) certificate (serial \(cert.serialHex)): \(text)"))
        }
        let response: HTTPResponse
        do {
            response = try online.transport.send(HTTPRequest(
                method: "POST", url: url,
                headers: [HTTPHeader("Content-Type", "application/ocsp-request"),
                          HTTPHeader("Accept", "application/ocsp-response")],
                body: body, timeoutMilliseconds: online.timeoutMilliseconds, maxResponseBytes: maxResponseBytes))
        } catch {
            switch error.kind {
            case .timeout:
                return fail(.ocspTimeout, "the responder \(url) did not answer within \(online.timeoutMilliseconds) ms (\(error.message))")
            case .unreachable, .failed:
                return fail(.ocspUnreachable, "the responder \(url) could not be reached (\(error.message))")
            }
        }
        guard response.status == 200 else {
            return fail(.ocspHTTPError, "the responder \(url) answered HTTP \(response.status) instead of 200")
        }

        // 3. The response envelope.
        guard !response.body.isEmpty, response.body.count <= maxResponseBytes else {
            return fail(.ocspMalformed, response.body.isEmpty ? "the responder \(url) sent an empty body"
                        : "the response from \(url) is larger than \(maxResponseBytes) bytes")
        }
        let parsed: OpaquePointer? = response.body.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            guard let start = p, let r = d2i_OCSP_RESPONSE(nil, &p, buf.count) else { return nil }
            if let end = p, end - start != buf.count { OCSP_RESPONSE_free(r); return nil }
            return r
        }
        guard let ocspResponse = parsed else {
            OpenSSL.drainErrors()
            return fail(.ocspMalformed, "the response from \(url) is not a DER OCSPResponse")
        }
        defer { OCSP_RESPONSE_free(ocspResponse) }

        // 4. The responder's own status.
        let responseStatus = OCSP_response_status(ocspResponse)
        if responseStatus != OCSP_RESPONSE_STATUS_SUCCESSFUL {
            let text = OCSP_response_status_str(Int(responseStatus)).map { String(cString: $0) } ?? "\(responseStatus)"
            if responseStatus == OCSP_RESPONSE_STATUS_TRYLATER || responseStatus == OCSP_RESPONSE_STATUS_INTERNALERROR {
                return fail(.ocspTryLater, "the responder \(url) could not answer now (responseStatus \(text))")
            }
            return fail(.ocspRefused, "the responder \(url) refused the request (responseStatus \(text))")
        }
        guard let basic = OCSP_response_get1_basic(ocspResponse) else {
            OpenSSL.drainErrors()
            return fail(.ocspMalformed, "the response from \(url) is not a basic OCSP response")
        }
        defer { OCSP_BASICRESP_free(basic) }

        // 5. Who signed it. The issuer is offered as a candidate signer (CA-signed answers need not embed it); the
        // chain of a delegated responder must lead to the verifier's roots.
        guard let candidates = appstore_shim_sk_X509_new_null() else {
            return fail(.internal, "OpenSSL could not allocate a certificate stack")
        }
        defer { appstore_shim_sk_X509_free(candidates) }
        _ = appstore_shim_sk_X509_push(candidates, issuer.x509)
        if OCSP_basic_verify(basic, candidates, trust.store, 0) != 1 {
            let detail = errorDetail() ?? "verification failed"
            return fail(.ocspBadSignature,
                "the response from \(url) is not signed by the issuer or a responder it authorised (\(detail))")
        }

        // 6. The answer about this very certificate.
        var status: Int32 = -1, reason: Int32 = -1
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        guard OCSP_resp_find_status(basic, lookupID, &status, &reason, &revokedAt, &thisUpdate, &nextUpdate) == 1 else {
            OpenSSL.drainErrors()
            return fail(.ocspCertIdMismatch, "the response from \(url) holds no status for this certificate id")
        }

        // 7. The nonce: 0 = both present and different. (-1: not echoed; accepted, see above.)
        if OCSP_check_nonce(request, basic) == 0 {
            OpenSSL.drainErrors()
            return fail(.ocspNonceMismatch, "the response from \(url) carries a different nonce than the request (a replayed answer?)")
        }

        // 8. Freshness.
        guard let thisUpdate, let thisTime = seconds(thisUpdate) else {
            return fail(.ocspMalformed, "the response from \(url) has an unreadable thisUpdate")
        }
        var nextTime: Int64?
        if let nextUpdate {
            guard let t = seconds(nextUpdate) else {
                return fail(.ocspMalformed, "the response from \(url) has an unreadable nextUpdate")
            }
            nextTime = t
        }
        if thisTime > now + clockSkewSeconds {
            return fail(.ocspStale, "the response's thisUpdate \(Timestamp.iso8601(thisTime)) is in the future (now \(Timestamp.iso8601(now)), \(clockSkewSeconds) s skew allowed)")
        }
        if let nextTime, nextTime < thisTime {
            return fail(.ocspStale, "the response's nextUpdate \(Timestamp.iso8601(nextTime)) is before its thisUpdate \(Timestamp.iso8601(thisTime))")
        }
        let validUntil = nextTime ?? (thisTime + maxAgeWithoutNextUpdate)
        if validUntil < now - clockSkewSeconds {
            let what = nextTime != nil ? "nextUpdate \(Timestamp.iso8601(validUntil))"
                : "thisUpdate \(Timestamp.iso8601(thisTime)) (no nextUpdate; \(maxAgeWithoutNextUpdate) s at most)"
            return fail(.ocspStale, "the response is stale: its \(what) has passed (now \(Timestamp.iso8601(now)), \(clockSkewSeconds) s skew allowed)")
        }
        // OpenSSL's own view of the same window (it reads the clock itself); it must agree.
        let maxAge = nextUpdate == nil ? Int(maxAgeWithoutNextUpdate + clockSkewSeconds) : -1
        if OCSP_check_validity(thisUpdate, nextUpdate, Int(clockSkewSeconds), maxAge) != 1 {
            let detail = errorDetail() ?? "invalid"
            return fail(.ocspStale, "the response's thisUpdate/nextUpdate are not current (\(detail))")
        }

        // 9. The status.
        switch status {
        case V_OCSP_CERTSTATUS_GOOD:
            return .success(validUntil)
        case V_OCSP_CERTSTATUS_REVOKED:
            let when = revokedAt.flatMap(seconds).map(Timestamp.iso8601) ?? "an unreadable time"
            let why = reason >= 0 ? (OCSP_crl_reason_str(Int(reason)).map { String(cString: $0) } ?? "reason \(reason)")
                : "no reason given"
            return .failure(VerificationFailure(.revoked,
                "the \(role) certificate (serial \(cert.serialHex), \(cert.subjectDescription)) was revoked at \(when) (\(why)), says \(url)"))
        case V_OCSP_CERTSTATUS_UNKNOWN:
            return fail(.ocspUnknown, "the responder \(url) does not know this certificate (status unknown)")
        default:
            return fail(.ocspMalformed, "the response from \(url) has certificate status \(status)")
        }
    }

    /// An http:// or https:// URL of printable ASCII (a request line cannot carry anything else).
    static func isHTTPURL(_ url: String) -> Bool {
        let lower = url.lowercased()
        return (lower.hasPrefix("http://") || lower.hasPrefix("https://"))
            && url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
    }

    /// Empties this thread's OpenSSL error queue; its entries as text, oldest first, joined by "; ", each with the
    /// detail OpenSSL attached (such as the certificate verification error of a responder's chain). The first entry
    /// says what went wrong (e.g. "missing ocspsigning usage"), the last what OpenSSL concluded from it.
    private static func errorDetail() -> String? {
        var entries: [String] = []
        while true {
            var data: UnsafePointer<CChar>?
            var flags: Int32 = 0
            let code = ERR_get_error_all(nil, nil, nil, &data, &flags)
            if code == 0 { break }
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buf, buf.count)
            var text = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if flags & ERR_TXT_STRING != 0, let data, let extra = String(validatingCString: data), !extra.isEmpty {
                text += " (\(extra))"
            }
            if entries.count < 8 { entries.append(text) }
        }
        return entries.isEmpty ? nil : entries.joined(separator: "; ")
    }

    private static func seconds(_ t: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>) -> Int64? {
        var parts = tm()
        guard ASN1_TIME_to_tm(t, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }
}

extension Certificate {
    /// The OCSP responder URLs of the Authority Information Access extension, in order (entries that are not
    /// UTF-8 are left out).
    var ocspURLs: [String] {
        guard let urls = X509_get1_ocsp(x509) else { return [] }
        defer { X509_email_free(urls) }
        var result: [String] = []
        let count = appstore_shim_sk_OPENSSL_STRING_num(urls)
        var i: Int32 = 0
        while i < count {
            if let p = appstore_shim_sk_OPENSSL_STRING_value(urls, i), let url = String(validatingCString: p) {
                result.append(url)
            }
            i += 1
        }
        return result
    }

    /// The serial number in upper-case hex (as OpenSSL prints it), for messages.
    var serialHex: String {
        guard let serial = X509_get0_serialNumber(x509), let bn = ASN1_INTEGER_to_BN(serial, nil) else { return "?" }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return "?" }
        defer { appstore_shim_openssl_free(hex) }
        return String(cString: hex)
    }
}
