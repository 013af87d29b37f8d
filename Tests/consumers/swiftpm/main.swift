// consumer ROOT_DER JWS_FILE BUNDLE_ID Sandbox|Production EXPECTED_TYPE
// Verifies a notification with the Swift API, as Tests/consumers/consumer.c does with the C one; exit 0 when it
// verifies and has the expected notificationType.
import AppStoreServer
import Foundation

let args = CommandLine.arguments
guard args.count == 6 else {
    FileHandle.standardError.write(Data("usage: consumer ROOT_DER JWS_FILE BUNDLE_ID Sandbox|Production EXPECTED_TYPE\n".utf8))
    exit(2)
}
do {
    let root = try Data(contentsOf: URL(fileURLWithPath: args[1]))
    let jws = try String(contentsOfFile: args[2], encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    let verifier = try SignedDataVerifier(rootCertificates: [root], bundleId: args[3], appAppleId: nil,
                                          environment: AppStoreEnvironment(rawValue: args[4]), enableOnlineChecks: false)
    let notification = try verifier.verifyAndDecodeNotification(signedPayload: jws).get()
    guard notification.notificationType?.rawValue == args[5] else {
        print("consumer: expected notificationType \(args[5]), got \(notification.notificationType?.rawValue ?? "none")")
        exit(1)
    }
    print("swift consumer: verified \(args[5]) notification \(notification.notificationUUID ?? "?")")
} catch {
    print("consumer: \(error)")
    exit(1)
}
