import AppStoreServer
#if canImport(Glibc)
import Glibc
#endif

// The purchase ledger (include/appstoreserver.h, "Purchase ledger"): an opaque handle over `Ledger`, which locks
// internally, so one handle may be shared by threads. Results cross as JSON of the spec's Ledger* models.

/// The object behind `appstore_ledger *`.
final class LedgerBox: Sendable {
    let ledger: Ledger
    init(_ ledger: Ledger) { self.ledger = ledger }
}

@c(appstore_ledger_open)
public func appstoreLedgerOpen(_ url: UnsafePointer<CChar>?, _ verifier: OpaquePointer?,
                               _ out: UnsafeMutablePointer<OpaquePointer?>?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let u = try utf8String(url, "url")
        let v = try handle(verifier, VerifierBox.self, "verifier")
        guard let out else { throw CFailure.argument("ledger_out is NULL") }
        out.pointee = retained(LedgerBox(try Ledger.open(u, verifier: v.verifier)))
    }
}

@c(appstore_ledger_free)
public func appstoreLedgerFree(_ ledger: OpaquePointer?) { release(ledger, LedgerBox.self) }

private func ingestExport(_ kind: LedgerEventKind, _ ledger: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                          _ resultOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(ledger, LedgerBox.self, "ledger")
        let input = try bytes(jws.map(UnsafeRawPointer.init), jwsLen, "jws")
        let event = try LedgerEvent.verify(kind, bytes: input, with: box.ledger.verifier).get()
        try outputString(resultOut, try box.ledger.ingest(event).json())
    }
}

@c(appstore_ledger_ingest_notification)
public func appstoreLedgerIngestNotification(_ ledger: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                                             _ resultOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    ingestExport(.notification, ledger, jws, jwsLen, resultOut, errOut)
}

@c(appstore_ledger_ingest_transaction)
public func appstoreLedgerIngestTransaction(_ ledger: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                                            _ resultOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    ingestExport(.transaction, ledger, jws, jwsLen, resultOut, errOut)
}

@c(appstore_ledger_ingest_renewal_info)
public func appstoreLedgerIngestRenewalInfo(_ ledger: OpaquePointer?, _ jws: UnsafePointer<CChar>?, _ jwsLen: UInt,
                                            _ resultOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    ingestExport(.renewalInfo, ledger, jws, jwsLen, resultOut, errOut)
}

/// at_ms / as_of_ms: milliseconds since 1970, 0 = now.
private func instant(_ ms: Int64, _ name: String) throws(CFailure) -> Int64? {
    guard ms >= 0 else { throw .argument("\(name) must be >= 0 (milliseconds since 1970; 0 = now), got \(ms)") }
    return ms == 0 ? nil : ms
}

@c(appstore_ledger_query_subscription)
public func appstoreLedgerQuerySubscription(_ ledger: OpaquePointer?, _ originalTransactionId: UnsafePointer<CChar>?,
                                            _ atMs: Int64, _ asOfMs: Int64, _ jsonOut: StringOut?,
                                            _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(ledger, LedgerBox.self, "ledger")
        let id = try utf8String(originalTransactionId, "original_transaction_id")
        let out = try requireOut(jsonOut, "json_out")
        let answer = try box.ledger.subscription(id, at: try instant(atMs, "at_ms"), asOf: try instant(asOfMs, "as_of_ms"))
        out.pointee = try mallocCString(answer?.json() ?? Array("null".utf8))
    }
}

@c(appstore_ledger_query_customer)
public func appstoreLedgerQueryCustomer(_ ledger: OpaquePointer?, _ customerId: UnsafePointer<CChar>?, _ atMs: Int64,
                                        _ asOfMs: Int64, _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(ledger, LedgerBox.self, "ledger")
        let id = try utf8String(customerId, "customer_id")
        let out = try requireOut(jsonOut, "json_out")
        let answer = try box.ledger.customer(id, at: try instant(atMs, "at_ms"), asOf: try instant(asOfMs, "as_of_ms"))
        out.pointee = try mallocCString(answer.json())
    }
}

@c(appstore_ledger_query_summary)
public func appstoreLedgerQuerySummary(_ ledger: OpaquePointer?, _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(ledger, LedgerBox.self, "ledger")
        let out = try requireOut(jsonOut, "json_out")
        out.pointee = try mallocCString(try box.ledger.summary().json())
    }
}

@c(appstore_ledger_query_disagreements)
public func appstoreLedgerQueryDisagreements(_ ledger: OpaquePointer?, _ after: UnsafePointer<CChar>?, _ limit: UInt32,
                                             _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(ledger, LedgerBox.self, "ledger")
        let cursor = try optionalUTF8String(after, "after")
        let out = try requireOut(jsonOut, "json_out")
        let page = try box.ledger.disagreements(after: cursor, limit: limit == 0 ? 1000 : Int(limit))
        out.pointee = try mallocCString(page.json())
    }
}

@c(appstore_ledger_query_subscription_ids)
public func appstoreLedgerQuerySubscriptionIds(_ ledger: OpaquePointer?, _ after: UnsafePointer<CChar>?, _ limit: UInt32,
                                               _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    ledgerIdPage(ledger, after, limit, jsonOut, errOut) { l, a, n throws(LedgerError) in try l.subscriptionIds(after: a, limit: n) }
}

@c(appstore_ledger_query_customer_ids)
public func appstoreLedgerQueryCustomerIds(_ ledger: OpaquePointer?, _ after: UnsafePointer<CChar>?, _ limit: UInt32,
                                           _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    ledgerIdPage(ledger, after, limit, jsonOut, errOut) { l, a, n throws(LedgerError) in try l.customerIds(after: a, limit: n) }
}

private func ledgerIdPage(_ ledger: OpaquePointer?, _ after: UnsafePointer<CChar>?, _ limit: UInt32, _ jsonOut: StringOut?,
                          _ errOut: ErrorOut?,
                          _ page: (Ledger, String?, Int) throws(LedgerError) -> LedgerIdPage) -> Int32 {
    guarded(errOut) {
        let box = try handle(ledger, LedgerBox.self, "ledger")
        let cursor = try optionalUTF8String(after, "after")
        let out = try requireOut(jsonOut, "json_out")
        out.pointee = try mallocCString(try page(box.ledger, cursor, limit == 0 ? 1000 : Int(limit)).json())
    }
}

@c(appstore_ledger_reverify)
public func appstoreLedgerReverify(_ ledger: OpaquePointer?, _ jsonOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(ledger, LedgerBox.self, "ledger")
        let out = try requireOut(jsonOut, "json_out")
        out.pointee = try mallocCString(try box.ledger.reverifyReport().json())
    }
}

@c(appstore_ledger_import_jsonl)
public func appstoreLedgerImportJsonl(_ ledger: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ batchSize: UInt32,
                                      _ resultOut: StringOut?, _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(ledger, LedgerBox.self, "ledger")
        let p = try utf8String(path, "path")
        let out = try requireOut(resultOut, "result_out")
        let options = LedgerImportOptions(batchSize: Int(batchSize))
        out.pointee = try mallocCString(try box.ledger.importJSONLines(path: p, options: options).json())
    }
}

@c(appstore_ledger_export_jsonl)
public func appstoreLedgerExportJsonl(_ ledger: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ resultOut: StringOut?,
                                      _ errOut: ErrorOut?) -> Int32 {
    guarded(errOut) {
        let box = try handle(ledger, LedgerBox.self, "ledger")
        let p = try utf8String(path, "path")
        let out = try requireOut(resultOut, "result_out")
        out.pointee = try mallocCString(try box.ledger.exportJSONLines(path: p).json())
    }
}
