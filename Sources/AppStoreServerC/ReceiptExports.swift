import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

// Receipts: Apple-compatible transaction id extraction (no signature check) and app receipt verification.

/// A (pointer, length) receipt argument as a String (base64 is ASCII; anything else is an argument error).
private func receiptText(_ p: UnsafePointer<CChar>?, _ len: UInt, _ name: String) throws -> String {
    let view = try bytes(p.map(UnsafeRawPointer.init), len, name)
    guard !view.isEmpty else { throw CFailure.argument("\(name) is empty") }
    // The limit first: an absurd length costs nothing (no validation, no copy).
    guard view.count <= ReceiptLimits.maxBase64Length else {
        throw ReceiptError(.inputTooLarge,
            "\(name) is \(view.count) bytes of base64, more than the \(ReceiptLimits.maxBase64Length) accepted")
    }
    guard let s = String(validating: view, as: UTF8.self) else { throw CFailure.argument("\(name) is not valid UTF-8") }
    return s
}

/// A receipt's id as a new C string. A NUL byte would end the C string early and hand the caller a different,
/// shorter id, so an id containing one is a malformed receipt (the JSON calls escape it as \u0000 instead).
private func receiptIdCString(_ id: String, _ what: String) throws -> UnsafeMutablePointer<CChar> {
    let bytes = Array(id.utf8)
    if let at = bytes.firstIndex(of: 0) {
        throw ReceiptError(.receiptMalformed,
            "the \(what) contains a NUL byte (at offset \(at) of \(bytes.count)): it cannot be returned as a C string")
    }
    return try mallocCString(bytes)
}

private func appReceipt(_ b64: UnsafePointer<CChar>?, _ len: UInt) throws -> AppReceipt {
    try AppReceipt(base64: try receiptText(b64, len, "receipt"))
}

@c(appstore_receipt_extract_transaction_id)
public func appstoreReceiptExtractTransactionId(_ b64: UnsafePointer<CChar>?, _ len: UInt, _ idOut: StringOut?,
                                                _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        guard let idOut else { throw CFailure.argument("id_out is NULL") }
        let receipt = try appReceipt(b64, len)
        guard let id = receipt.firstTransactionId else {
            throw ReceiptError(.noTransactionId, receipt.inApp.isEmpty ? "the app receipt has no in-app purchase records"
                               : "the app receipt's in-app purchase records carry no transaction id")
        }
        idOut.pointee = try receiptIdCString(id, "app receipt's first transaction id")
    }
}

@c(appstore_receipt_extract_transaction_ids)
public func appstoreReceiptExtractTransactionIds(_ b64: UnsafePointer<CChar>?, _ len: UInt, _ jsonOut: StringOut?,
                                                 _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        guard let jsonOut else { throw CFailure.argument("json_out is NULL") }
        let receipt = try appReceipt(b64, len)
        jsonOut.pointee = try mallocCString(receipt.json)
    }
}

@c(appstore_transaction_receipt_extract_transaction_id)
public func appstoreTransactionReceiptExtractTransactionId(_ b64: UnsafePointer<CChar>?, _ len: UInt,
                                                           _ idOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        guard let idOut else { throw CFailure.argument("id_out is NULL") }
        let text = try receiptText(b64, len, "receipt")
        let receipt = try TransactionReceipt(base64: text)
        guard let id = receipt.transactionId else {
            throw ReceiptError(.noTransactionId, "the transaction receipt has no \"purchase-info\" with a \"transaction-id\"")
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
    guarded(errOut) {
        guard let out else { throw CFailure.argument("verifier_out is NULL") }
        guard rootCount <= 1024 else { throw CFailure.argument("root_count \(rootCount) is more than 1024") }
        var ders: [[UInt8]] = []
        if rootCount > 0 {
            guard let roots, let rootLens else { throw CFailure.argument("root_ders or root_lens is NULL but root_count is \(rootCount)") }
            for i in 0..<Int(rootCount) {
                let view = try bytes(roots[i].map(UnsafeRawPointer.init), rootLens[i], "root_ders[\(i)]")
                guard !view.isEmpty else { throw CFailure.argument("root_ders[\(i)] is empty") }
                ders.append([UInt8](view))
            }
        }
        let bundle: String?
        if let bundleId {
            let s = try utf8String(bundleId, "bundle_id")
            guard !s.isEmpty else { throw CFailure.argument("bundle_id is empty: pass NULL to accept any bundle id") }
            bundle = s
        } else {
            bundle = nil
        }
        out.pointee = retained(ReceiptVerifierBox(try ReceiptVerifier(rootCertificates: ders, bundleId: bundle)))
    }
}

@c(appstore_receipt_verifier_free)
public func appstoreReceiptVerifierFree(_ verifier: OpaquePointer?) { release(verifier, ReceiptVerifierBox.self) }

@c(appstore_receipt_verifier_verify)
public func appstoreReceiptVerifierVerify(_ verifier: OpaquePointer?, _ b64: UnsafePointer<CChar>?, _ len: UInt,
                                          _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(verifier, ReceiptVerifierBox.self, "verifier")
        let text = try receiptText(b64, len, "receipt")
        let verified = try box.verifier.verify(appReceipt: text)
        try outputString(jsonOut, try verified.json())
    }
}
