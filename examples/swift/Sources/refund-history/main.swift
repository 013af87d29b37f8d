// Every page of a customer's refund history through the App Store Server API (Get Refund History), with retries
// and the Sandbox fallback that App Review's purchases need.
//
//   APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" refund-history \
//       --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app 2000000000000001
//
// --base-url points the client at another server (a test server); without it, Apple's.
//
// HTTP: with the package trait HTTP (`.package(url: ..., from: ..., traits: ["HTTP"])`), `import AppStoreServerHTTP`
// and leave out `transport:`: the default transport is AsyncHTTPClient. This example brings its own transport
// over URLSession (URLSessionTransport.swift), so that it builds nothing but the library.
import AppStoreServer
import Foundation

let usage = "usage: refund-history TRANSACTION_ID --key-id ID --issuer-id ID --bundle-id ID [--environment Sandbox|Production] [--base-url URL]"
var (arguments, options) = ([String](), [String: String]())
var rest = CommandLine.arguments.dropFirst()
while let a = rest.popFirst() {
    if a == "--help" { print(usage); exit(0) }
    if a.hasPrefix("--"), let value = rest.popFirst() { options[String(a.dropFirst(2))] = value } else { arguments.append(a) }
}
guard arguments.count == 1, let keyId = options["key-id"], let issuerId = options["issuer-id"],
      let bundleId = options["bundle-id"] else { FileHandle.standardError.write(Data((usage + "\n").utf8)); exit(2) }
// The .p8 text; never put a key on a command line.
guard let p8 = ProcessInfo.processInfo.environment["APPSTORE_PRIVATE_KEY"] else {
    FileHandle.standardError.write(Data("refund-history: set APPSTORE_PRIVATE_KEY to the .p8 key's text\n".utf8))
    exit(2)
}

do {
    let environment = AppStoreEnvironment(rawValue: options["environment"] ?? "Production")
    let client = try AppStoreServerAPIClient(
        signingKey: p8, keyId: keyId, issuerId: issuerId, bundleId: bundleId, environment: environment,
        transport: URLSessionTransport(),
        configuration: .init(retryPolicy: APIRetryPolicy(maxRetries: 3),      // 429 and Apple's retryable codes
                             baseURL: options["base-url"],
                             sandboxFallback: environment == .production))    // App Review buys in Sandbox
    let pages = try await client.getAllRefundHistory(anyTransactionId: arguments[0])
    for (number, page) in pages.enumerated() {
        print("page \(number + 1): \(page.signedTransactions?.count ?? 0) refunded transactions, more: \(page.hasMore ?? false)")
    }
} catch {
    // An API error says the HTTP status, Apple's error code and message, and Retry-After.
    FileHandle.standardError.write(Data("failed: \(error)\n".utf8))
    exit(1)
}
