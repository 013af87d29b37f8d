import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

// Receipts: Apple-compatible transaction id extraction (no signature check) and app receipt verification.

extension CStatus {
    static let notFound: Int32 = 11
    static let invalidReceipt: Int32 = 12
}

extension CFailure {
    /// The C status of a receipt failure (documented in the header's Receipts section).
    init(_ e: ReceiptError) {
        let status: Int32
        switch e.reason {
        case .receiptMalformed, .wrongKind, .undecodablePayload: status = CStatus.invalidReceipt
        case .noTransactionId: status = CStatus.notFound
        case .wrongBundle: status = VerificationError.INVALID_APP_IDENTIFIER.rawValue
        case .badCertificate: status = VerificationError.INVALID_CERTIFICATE.rawValue
        case .invalidArgument: status = CStatus.invalidArgument
        case .internal: status = CStatus.internalError
        default: status = VerificationError.VERIFICATION_FAILURE.rawValue
        }
        self.init(status: status, reason: e.reason, message: e.message)
    }
}

/// A (pointer, length) receipt argument as a String (base64 is ASCII; anything else is an argument error).
private func receiptText(_ p: UnsafePointer<CChar>?, _ len: UInt, _ name: String) throws(CFailure) -> String {
    let view = try bytes(p.map(UnsafeRawPointer.init), len, name)
    guard !view.isEmpty else { throw .argument("\(name) is empty") }
    guard let s = String(validating: view, as: UTF8.self) else { throw .argument("\(name) is not valid UTF-8") }
    return s
}

/// A receipt's id as a new C string. A NUL byte would end the C string early and hand the caller a different,
/// shorter id, so an id containing one is a malformed receipt (the JSON calls escape it as \u0000 instead).
private func receiptIdCString(_ id: String, _ what: String) throws(CFailure) -> UnsafeMutablePointer<CChar> {
    let bytes = Array(id.utf8)
    if let at = bytes.firstIndex(of: 0) {
        throw CFailure(ReceiptError(.receiptMalformed,
            "the \(what) contains a NUL byte (at offset \(at) of \(bytes.count)): it cannot be returned as a C string"))
    }
    return try mallocCString(bytes)
}

private func appReceipt(_ b64: UnsafePointer<CChar>?, _ len: UInt) throws(CFailure) -> AppReceipt {
    let text = try receiptText(b64, len, "receipt")
    do throws(ReceiptError) {
        return try AppReceipt(base64: text)
    } catch {
        throw CFailure(error)
    }
}

@c(appstore_receipt_extract_transaction_id)
public func appstoreReceiptExtractTransactionId(_ b64: UnsafePointer<CChar>?, _ len: UInt, _ idOut: StringOut?,
                                                _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) { () throws(CFailure) in
        guard let idOut else { throw .argument("id_out is NULL") }
        let receipt = try appReceipt(b64, len)
        guard let id = receipt.firstTransactionId else {
            throw CFailure(status: CStatus.notFound, reason: .noTransactionId,
                           message: receipt.inApp.isEmpty ? "the app receipt has no in-app purchase records"
                               : "the app receipt's in-app purchase records carry no transaction id")
        }
        idOut.pointee = try receiptIdCString(id, "app receipt's first transaction id")
    }
}

@c(appstore_receipt_extract_transaction_ids)
public func appstoreReceiptExtractTransactionIds(_ b64: UnsafePointer<CChar>?, _ len: UInt, _ jsonOut: StringOut?,
                                                 _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) { () throws(CFailure) in
        guard let jsonOut else { throw .argument("json_out is NULL") }
        let receipt = try appReceipt(b64, len)
        jsonOut.pointee = try mallocCString(receipt.json)
    }
}

@c(appstore_transaction_receipt_extract_transaction_id)
public func appstoreTransactionReceiptExtractTransactionId(_ b64: UnsafePointer<CChar>?, _ len: UInt,
                                                           _ idOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) { () throws(CFailure) in
        guard let idOut else { throw .argument("id_out is NULL") }
        let text = try receiptText(b64, len, "receipt")
        let receipt: TransactionReceipt
        do throws(ReceiptError) {
            receipt = try TransactionReceipt(base64: text)
        } catch {
            throw CFailure(error)
        }
        guard let id = receipt.transactionId else {
            throw CFailure(status: CStatus.notFound, reason: .noTransactionId,
                           message: "the transaction receipt has no \"purchase-info\" with a \"transaction-id\"")
        }
        idOut.pointee = try receiptIdCString(id, "transaction receipt's transaction id")
    }
}

// MARK: verifier

/// The object behind `appstore_receipt_verifier *`.
final class ReceiptVerifierBox: Sendable {
    let verifier: ReceiptVerifier
    init(_ verifier: ReceiptVerifier) { self.verifier = verifier }
}

@c(appstore_receipt_verifier_new)
public func appstoreReceiptVerifierNew(_ roots: UnsafePointer<UnsafePointer<UInt8>?>?, _ rootLens: UnsafePointer<UInt>?,
                                       _ rootCount: UInt, _ bundleId: UnsafePointer<CChar>?,
                                       _ out: UnsafeMutablePointer<OpaquePointer?>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) { () throws(CFailure) in
        guard let out else { throw .argument("verifier_out is NULL") }
        guard rootCount <= 1024 else { throw .argument("root_count \(rootCount) is more than 1024") }
        var ders: [[UInt8]] = []
        if rootCount > 0 {
            guard let roots, let rootLens else { throw .argument("root_ders or root_lens is NULL but root_count is \(rootCount)") }
            for i in 0..<Int(rootCount) {
                let view = try bytes(roots[i].map(UnsafeRawPointer.init), rootLens[i], "root_ders[\(i)]")
                guard !view.isEmpty else { throw .argument("root_ders[\(i)] is empty") }
                ders.append([UInt8](view))
            }
        }
        let bundle: String?
        if let bundleId {
            let s = try utf8String(bundleId, "bundle_id")
            guard !s.isEmpty else { throw .argument("bundle_id is empty: pass NULL to accept any bundle id") }
            bundle = s
        } else {
            bundle = nil
        }
        let verifier: ReceiptVerifier
        do throws(ConfigurationError) {
            verifier = try ReceiptVerifier(rootCertificates: ders, bundleId: bundle)
        } catch {
            throw CFailure(error)
        }
        out.pointee = retained(ReceiptVerifierBox(verifier))
    }
}

@c(appstore_receipt_verifier_free)
public func appstoreReceiptVerifierFree(_ verifier: OpaquePointer?) { release(verifier, ReceiptVerifierBox.self) }

@c(appstore_receipt_verifier_verify)
public func appstoreReceiptVerifierVerify(_ verifier: OpaquePointer?, _ b64: UnsafePointer<CChar>?, _ len: UInt,
                                          _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) { () throws(CFailure) in
        let box = try handle(verifier, ReceiptVerifierBox.self, "verifier")
        let text = try receiptText(b64, len, "receipt")
        let verified: VerifiedAppReceipt
        do throws(ReceiptError) {
            verified = try box.verifier.verify(appReceipt: text)
        } catch {
            throw CFailure(error)
        }
        if let jsonOut { jsonOut.pointee = try mallocCString(verified.json) }
    }
}
