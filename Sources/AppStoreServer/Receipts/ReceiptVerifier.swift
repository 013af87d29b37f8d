import FoundationEssentials

/// Verifies legacy app receipts — beyond Apple's libraries, which only extract an id without checking anything.
///
/// In order: base64; the PKCS#7 SignedData structure (BER, bounded parse); the receipt attribute structure; the
/// PKCS#7 signature over the content with the signer certificate's key (OpenSSL), and that OpenSSL and our parser
/// read the same content — from here on the content is authenticated; then the signer certificate's chain to one
/// of the caller's roots (Apple Inc. Root for App Store receipts; the certificates the receipt carries are only
/// candidates for the intermediate, never trusted) at the now-authenticated creation date (attribute 12; now when
/// it is absent), exactly three certificates, Apple's marker extensions; the documented fields; the bundle id,
/// when one was configured.
///
/// The signature comes first because the chain is validated at a date read from the content: checked the other
/// way round, a tampered creation date would choose the validation date (Apple's receipt signing certificates have
/// all expired by now) and a forgery would be reported as `expired` or `untrustedChain` instead of `badSignature`.
///
/// Immutable and thread-safe.
public final class ReceiptVerifier: Sendable {
    /// When not nil, a receipt whose bundle id (attribute 2) differs fails with `wrongBundle`.
    public let bundleId: String?
    let trust: TrustStore

    /// - Parameters:
    ///   - rootCertificates: roots, DER or PEM text (several certificates each), the only trust anchors (for App Store receipts: Apple Inc. Root, `AppleRootCertificate.appleIncRoot`).
    ///   - bundleId: the app's bundle id, or nil to accept any (an empty string is a configuration error).
    public init(rootCertificates: [[UInt8]], bundleId: String? = nil) throws(ConfigurationError) {
        if let bundleId, bundleId.isEmpty {
            throw ConfigurationError(.invalidArgument, "bundleId is empty: pass nil to accept any bundle id")
        }
        self.trust = try TrustStore(rootCertificates: rootCertificates)
        self.bundleId = bundleId
    }

    /// A verifier with the roots as `Data`; the parameters as for the `[[UInt8]]` form.
    public convenience init(rootCertificates: [Data], bundleId: String? = nil) throws(ConfigurationError) {
        try self.init(rootCertificates: rootCertificates.map { [UInt8]($0) }, bundleId: bundleId)
    }

    /// Verifies a base64 app receipt (standard alphabet; line breaks and missing padding tolerated).
    public func verify(appReceipt: String) throws(ReceiptError) -> VerifiedAppReceipt {
        try verify(appReceiptDER: try ReceiptBase64.decode(appReceipt, what: "app receipt"))
    }

    /// Verifies a binary (BER/DER) app receipt.
    public func verify(appReceiptDER der: [UInt8]) throws(ReceiptError) -> VerifiedAppReceipt {
        // Our own bounded parse first: hostile structures stop here, before OpenSSL parses anything.
        let envelope = try ReceiptEnvelope(der: der)
        _ = try ReceiptAttributeSet(envelope.payload, context: "receipt attributes")

        // The signature, with the key of the signer certificate the receipt carries (not trusted yet): nothing read
        // from the content may decide anything before this.
        let pkcs7 = try PKCS7Receipt(der: der)
        // `signer` and `pkcs7.certificates` are borrowed from the PKCS#7 object: keep it alive until this scope ends.
        defer { withExtendedLifetime(pkcs7) {} }
        let signer = try pkcs7.signer()
        let content = try pkcs7.verifiedContent()
        guard content == envelope.content else {
            throw ReceiptError(.receiptMalformed, "OpenSSL and the receipt parser read different signed content")
        }

        // The content is authenticated: its creation date chooses the date the chain is validated at. The full
        // decode happens now too, but its errors are reported after the chain's (trust before content).
        let decoded: Result<AppReceiptContents, ReceiptError>
        do throws(ReceiptError) {
            decoded = .success(try AppReceiptContents(payload: envelope.payload))
        } catch {
            decoded = .failure(error)
        }
        let effective: Int64
        let source: VerifiedAppReceipt.EffectiveDateSource
        let subject: String
        switch AppReceiptContents.creationDate(payload: envelope.payload) {
        case .milliseconds(let ms)?:
            effective = ms
            source = .receiptCreationDate
            subject = try ReceiptChainVerifier.verify(signer: signer, untrusted: pkcs7.certificates, trust: trust,
                                                      at: Self.seconds(ms))
        case .invalid?:
            // Signed, but not a date: there is no date to validate at. Trust, shape and markers are still checked
            // (without validity periods), so an untrusted signer is reported as such; then the date's error.
            _ = try ReceiptChainVerifier.verify(signer: signer, untrusted: pkcs7.certificates, trust: trust, at: nil)
            _ = try decoded.get()
            throw ReceiptError(.undecodablePayload, "attribute 12 (receipt creation date) is not an RFC 3339 date")
        case .absent?, nil:
            effective = Timestamp.now() * 1000
            source = .now
            subject = try ReceiptChainVerifier.verify(signer: signer, untrusted: pkcs7.certificates, trust: trust,
                                                      at: Self.seconds(effective))
        }

        let contents = try decoded.get()
        if let bundleId, !Identity.same(contents.bundleId, bundleId) {
            throw ReceiptError(.wrongBundle, contents.bundleId.map {
                "the receipt is for bundle id \(QuotedText.quote($0)), not \(QuotedText.quote(bundleId))"
            } ?? "the receipt has no bundle id (attribute 2); expected \(QuotedText.quote(bundleId))")
        }
        return VerifiedAppReceipt(receipt: contents, effectiveDate: Date(receiptMilliseconds: effective),
                                  effectiveDateSource: source, signerSubject: subject)
    }

    /// Milliseconds to whole seconds, clamped to 1970...9999 (what the chain check takes; no arithmetic can trap).
    static func seconds(_ ms: Int64) -> Int64 {
        ms <= 0 ? 0 : min(Timestamp.limit, ms / 1000)
    }
}

/// A verified app receipt: its decoded fields and how it was verified.
public struct VerifiedAppReceipt: Hashable, Sendable {
    /// Which date the chain was validated at.
    public enum EffectiveDateSource: String, Hashable, Sendable {
        /// The chain was validated at the receipt's creation date (attribute 12).
        case receiptCreationDate
        /// The receipt has no creation date: the chain was validated at the current time.
        case now
    }

    /// The receipt's decoded fields.
    public let receipt: AppReceiptContents
    /// The date the certificate chain was validated at.
    public let effectiveDate: Date
    /// Where `effectiveDate` comes from.
    public let effectiveDateSource: EffectiveDateSource
    /// The signer certificate's subject (OpenSSL one-line form).
    public let signerSubject: String

    /// The receipt's fields and how it was verified, the shape of `appstore_receipt_verifier_verify`'s JSON.
    public var fields: VerifiedAppReceiptFields {
        VerifiedAppReceiptFields(
            bundleId: receipt.bundleId, applicationVersion: receipt.applicationVersion,
            originalApplicationVersion: receipt.originalApplicationVersion, receiptCreationDate: receipt.receiptCreationDate,
            receiptExpirationDate: receipt.receiptExpirationDate, inApp: receipt.inAppPurchases,
            verification: AppReceiptVerification(effectiveDate: effectiveDate,
                                                  effectiveDateSource: ReceiptEffectiveDateSource(rawValue: effectiveDateSource.rawValue),
                                                  signer: signerSubject))
    }

    /// `fields` as UTF-8 JSON; dates in milliseconds since 1970 (rounded to the nearest, exact for receipt dates),
    /// absent fields left out. Throws for a date JSON cannot carry (outside years 0001-9999).
    public func json() throws(ReceiptError) -> [UInt8] {
        do throws(JSONWriteError) { return try fields.jsonBytes(dateRounding: .toNearest) } catch {
            throw ReceiptError(.undecodablePayload, "the verified receipt cannot be written as JSON: \(error)")
        }
    }
}
