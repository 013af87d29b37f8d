/// `getTransactionHistory`'s API version (Apple's `GetTransactionHistoryVersion`). v1 is deprecated by Apple.
public enum GetTransactionHistoryVersion: String, Hashable, Sendable {
    /// Version 1 (`/inApps/v1/history`), deprecated by Apple.
    case v1
    /// Version 2 (`/inApps/v2/history`).
    case v2
}

// Hand-written (spec/endpoints.json "special"): Apple's client has one Get Transaction History method for both
// versions, chosen by `version:`; the spec has an endpoint per version (getTransactionHistory, getTransactionHistoryV1).
extension AppStoreServerAPIRequest {
    /// The Get Transaction History call of `version`.
    public static func transactionHistory(anyTransactionId: String, revision: String?, transactionHistoryRequest: TransactionHistoryRequest,
                                          version: GetTransactionHistoryVersion) -> AppStoreServerAPIRequest {
        switch version {
        case .v1: .getTransactionHistoryV1(anyTransactionId: anyTransactionId, revision: revision, transactionHistoryRequest: transactionHistoryRequest)
        case .v2: .getTransactionHistory(anyTransactionId: anyTransactionId, revision: revision, transactionHistoryRequest: transactionHistoryRequest)
        }
    }
}

extension AppStoreServerAPIClient {
    /// Get Transaction History (v2 unless `version` says otherwise). Pass the previous page's `revision` for the next
    /// page, or use `getAllTransactionHistory`.
    public func getTransactionHistory(anyTransactionId: String, revision: String?, transactionHistoryRequest: TransactionHistoryRequest,
                                      version: GetTransactionHistoryVersion) async throws(AppStoreServerAPIError) -> HistoryResponse {
        try await call(.transactionHistory(anyTransactionId: anyTransactionId, revision: revision,
                                           transactionHistoryRequest: transactionHistoryRequest, version: version), HistoryResponse.self)
    }

    /// Apple's deprecated overload: version 1.
    @available(*, deprecated, message: "Apple deprecated version 1; pass version: .v2")
    public func getTransactionHistory(anyTransactionId: String, revision: String?,
                                      transactionHistoryRequest: TransactionHistoryRequest) async throws(AppStoreServerAPIError) -> HistoryResponse {
        try await getTransactionHistory(anyTransactionId: anyTransactionId, revision: revision,
                                        transactionHistoryRequest: transactionHistoryRequest, version: .v1)
    }

    /// Every page of Get Transaction History, following `revision` while `hasMore`.
    public func getAllTransactionHistory(anyTransactionId: String, transactionHistoryRequest: TransactionHistoryRequest = .init(),
                                         version: GetTransactionHistoryVersion = .v2,
                                         revision: String? = nil) async throws(AppStoreServerAPIError) -> [HistoryResponse] {
        try await allPages(.transactionHistory(anyTransactionId: anyTransactionId, revision: revision,
                                               transactionHistoryRequest: transactionHistoryRequest, version: version),
                           HistoryResponse.self)
    }
}
