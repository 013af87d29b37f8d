// Sign a promotional offer for StoreKit 2 (Promotional Offer V2 signature, a JWS your app passes to StoreKit).
//
//   APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" offer-signature \
//       --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app com.example.monthly WINBACK
import AppStoreServer
import Foundation

let usage = "usage: offer-signature PRODUCT_ID OFFER_ID --key-id ID --issuer-id ID --bundle-id ID [--transaction-id ID]"
var (arguments, options) = ([String](), [String: String]())
var rest = CommandLine.arguments.dropFirst()
while let a = rest.popFirst() {
    if a == "--help" { print(usage); exit(0) }
    if a.hasPrefix("--"), let value = rest.popFirst() { options[String(a.dropFirst(2))] = value } else { arguments.append(a) }
}
guard arguments.count == 2, let keyId = options["key-id"], let issuerId = options["issuer-id"],
      let bundleId = options["bundle-id"] else { FileHandle.standardError.write(Data((usage + "\n").utf8)); exit(2) }
// The .p8 text; never put a key on a command line.
guard let p8 = ProcessInfo.processInfo.environment["APPSTORE_PRIVATE_KEY"] else {
    FileHandle.standardError.write(Data("offer-signature: set APPSTORE_PRIVATE_KEY to the .p8 key's text\n".utf8))
    exit(2)
}

do {
    let creator = try PromotionalOfferV2SignatureCreator(signingKey: p8, keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    print(try creator.createSignature(productId: arguments[0], offerIdentifier: arguments[1],
                                      transactionId: options["transaction-id"]))
} catch {
    FileHandle.standardError.write(Data("offer-signature: \(error)\n".utf8))
    exit(1)
}
