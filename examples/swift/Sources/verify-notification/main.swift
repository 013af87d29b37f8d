// Verify an App Store Server Notification V2 (the body Apple POSTs to your server) and print what it says.
//
//   verify-notification notification.json com.example.app [--environment Production --app-apple-id 1234]
//
// Apple's root certificate comes with the library (AppleRootCertificate.appleRootCAG3, checked against the
// fingerprint Apple publishes); --root FILE trusts another root instead (DER or PEM), e.g. for a test PKI.
import AppStoreServer
import Foundation

let usage = "usage: verify-notification NOTIFICATION BUNDLE_ID [--environment Sandbox|Production] [--app-apple-id ID] [--root FILE]"
var (arguments, options) = ([String](), [String: String]())
var rest = CommandLine.arguments.dropFirst()
while let a = rest.popFirst() {
    if a == "--help" { print(usage); exit(0) }
    if a.hasPrefix("--"), let value = rest.popFirst() { options[String(a.dropFirst(2))] = value } else { arguments.append(a) }
}
guard arguments.count == 2 else { FileHandle.standardError.write(Data((usage + "\n").utf8)); exit(2) }

do {
    // The request body {"signedPayload": "..."} or the bare JWS.
    let text = try String(contentsOfFile: arguments[0], encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    let body = text.hasPrefix("{") ? try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] : nil
    let signedPayload = body?["signedPayload"] as? String ?? text

    let roots = try options["root"].map { [try Data(contentsOf: URL(fileURLWithPath: $0))] }
        ?? [Data(AppleRootCertificate.appleRootCAG3?.der ?? [])]
    let verifier = try SignedDataVerifier(rootCertificates: roots, bundleId: arguments[1],
                                          appAppleId: options["app-apple-id"].flatMap { Int64($0) },
                                          environment: AppStoreEnvironment(rawValue: options["environment"] ?? "Sandbox"),
                                          enableOnlineChecks: false)
    // Beyond Apple: the notification and the signed transaction / renewal info inside it, all verified in one call.
    switch verifier.verifyAndDecodeNotificationDeep(signedPayload: signedPayload) {
    case .valid(let verified):
        let n = verified.notification
        print("type: \([n.notificationType?.rawValue, n.subtype?.rawValue].compactMap { $0 }.joined(separator: " "))")
        if let data = n.data {
            print("bundle: \(data.bundleId ?? "-"), environment: \(data.environment?.rawValue ?? "-")")
        }
        if let transaction = verified.transaction {
            print("transaction: \(transaction.transactionId ?? "-") (\(transaction.productId ?? "-"))")
        }
    case .invalid(let failure):
        // The status (Apple's), the precise reason and what exactly failed.
        FileHandle.standardError.write(Data("NOT VERIFIED: \(failure)\n".utf8))
        exit(1)
    }
} catch {
    FileHandle.standardError.write(Data("verify-notification: \(error)\n".utf8))
    exit(2)
}
