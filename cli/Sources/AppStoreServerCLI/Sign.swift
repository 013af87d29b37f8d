import AppStoreServer
import ArgumentParser

/// The signing key and the identifiers every signature names. The key is read from a file or the environment,
/// never from the command line.
struct KeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The private key (.p8 PEM from App Store Connect), or - for stdin (default: $APPSTORE_PRIVATE_KEY).", valueName: "file"))
    var key: String?
    @Option(help: "The key's id (default: $APPSTORE_KEY_ID).")
    var keyId: String?
    @Option(help: "The issuer id of your team (default: $APPSTORE_ISSUER_ID).")
    var issuerId: String?
    @Option(help: "The app's bundle id (default: $APPSTORE_BUNDLE_ID).")
    var bundleId: String?

    func signingKey() throws(ToolFailure) -> SigningKey { try KeySource.load(key) }
    func resolvedKeyId() throws(ToolFailure) -> String { try fromEnvironment(keyId, "APPSTORE_KEY_ID", option: "--key-id") }
    func resolvedIssuerId() throws(ToolFailure) -> String { try fromEnvironment(issuerId, "APPSTORE_ISSUER_ID", option: "--issuer-id") }
    func resolvedBundleId() throws(ToolFailure) -> String { try fromEnvironment(bundleId, "APPSTORE_BUNDLE_ID", option: "--bundle-id") }
}

/// Runs a signing call, turning its typed errors into tool failures.
func signing<T>(_ body: () throws -> T) throws(ToolFailure) -> T {
    do {
        return try body()
    } catch let f as ToolFailure {
        throw f
    } catch let f as SigningError {
        throw ToolFailure(f)
    } catch let f as SigningKeyError {
        throw ToolFailure(f)
    } catch {
        throw ToolFailure(.internal, status: "INTERNAL_ERROR", reason: "internal", "\(error)")
    }
}

struct Sign: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create App Store Server API tokens and offer signatures.",
        discussion: """
            The key comes from --key FILE or $APPSTORE_PRIVATE_KEY (its PEM text), never from an argument.

            EXAMPLES
              export APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123.p8)" \\
                  APPSTORE_KEY_ID=ABC123 APPSTORE_BUNDLE_ID=com.example.app \\
                  APPSTORE_ISSUER_ID=57246542-96fe-1a63-e053-0824d011072a
              appstoreserver sign token
              appstoreserver sign promotional-offer-v2 --product-id com.example.monthly \\
                  --offer-id WINBACK
              appstoreserver sign promotional-offer --product-id com.example.monthly \\
                  --offer-id WINBACK \\
                  --app-account-token 7e3fb20b-4cdb-47cc-936d-99d65f608138
            """,
        subcommands: [Token.self, PromotionalOffer.self, PromotionalOfferV2.self, IntroductoryOfferEligibility.self,
                      AdvancedCommerce.self]
    )

    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A bearer token for the App Store Server API (a JWT).")
        @OptionGroup var keys: KeyOptions
        @Option(help: "Lifetime in seconds (1...3600, Apple's maximum).")
        var lifetime: Int64 = AppStoreServerAPIToken.defaultLifetime

        func run() throws {
            try reporting {
                let key = try keys.signingKey()
                let (keyId, issuerId, bundleId) = (try keys.resolvedKeyId(), try keys.resolvedIssuerId(), try keys.resolvedBundleId())
                Output.line(try signing {
                    try AppStoreServerAPIToken.create(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId,
                                                      lifetime: lifetime)
                })
            }
        }
    }

    struct PromotionalOffer: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A legacy (StoreKit 1, SKPaymentDiscount) promotional offer signature, as JSON with its nonce and timestamp.")
        @OptionGroup var keys: KeyOptions
        @Option(help: "The subscription's product id.") var productId: String
        @Option(help: "The promotional offer's id.") var offerId: String
        @Option(help: "The app account token (a UUID), if the purchase sets one.") var appAccountToken: String = ""
        @Option(help: "The nonce (a UUID; default: a fresh random one).") var nonce: String?
        @Option(help: "Milliseconds since 1970 (default: now).") var timestamp: Int64?

        func run() throws {
            try reporting {
                let key = try keys.signingKey()
                let keyId = try keys.resolvedKeyId()
                let bundleId = try keys.resolvedBundleId()
                let s = try signing {
                    try PromotionalOfferSignatureCreator(signingKey: key, keyId: keyId, bundleId: bundleId)
                        .createSignature(productIdentifier: productId, subscriptionOfferID: offerId,
                                         appAccountToken: appAccountToken, nonce: nonce, timestamp: timestamp)
                }
                Output.line(JSONText.object([
                    ("keyIdentifier", JSONText.string(keyId)), ("nonce", JSONText.string(s.nonce)),
                    ("timestamp", String(s.timestamp)), ("signature", JSONText.string(s.signature)),
                ]))
            }
        }
    }

    struct PromotionalOfferV2: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "promotional-offer-v2",
            abstract: "A promotional offer signature (JWS) for StoreKit's promotional offers.")
        @OptionGroup var keys: KeyOptions
        @Option(help: "The product id.") var productId: String
        @Option(help: "The promotional offer's id.") var offerId: String
        @Option(help: "The transaction id of the customer's purchase, if any.") var transactionId: String?

        func run() throws {
            try reporting {
                let key = try keys.signingKey()
                let (keyId, issuerId, bundleId) = (try keys.resolvedKeyId(), try keys.resolvedIssuerId(), try keys.resolvedBundleId())
                Output.line(try signing {
                    try PromotionalOfferV2SignatureCreator(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId)
                        .createSignature(productId: productId, offerIdentifier: offerId, transactionId: transactionId)
                })
            }
        }
    }

    struct IntroductoryOfferEligibility: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "An introductory offer eligibility signature (JWS).")
        @OptionGroup var keys: KeyOptions
        @Option(help: "The product id.") var productId: String
        @Option(help: "true or false.") var allowIntroductoryOffer: Bool
        @Option(help: "The transaction id of the customer's purchase.") var transactionId: String

        func run() throws {
            try reporting {
                let key = try keys.signingKey()
                let (keyId, issuerId, bundleId) = (try keys.resolvedKeyId(), try keys.resolvedIssuerId(), try keys.resolvedBundleId())
                Output.line(try signing {
                    try IntroductoryOfferEligibilitySignatureCreator(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId)
                        .createSignature(productId: productId, allowIntroductoryOffer: allowIntroductoryOffer,
                                         transactionId: transactionId)
                })
            }
        }
    }

    struct AdvancedCommerce: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "An Advanced Commerce in-app request signature (JWS) over a request JSON.")
        @OptionGroup var keys: KeyOptions
        @Option(help: ArgumentHelp("The in-app request JSON, or - for stdin.", valueName: "file")) var request: String

        func run() throws {
            try reporting {
                let json = try Input.read(request, what: "a request JSON")
                let key = try keys.signingKey()
                let (keyId, issuerId, bundleId) = (try keys.resolvedKeyId(), try keys.resolvedIssuerId(), try keys.resolvedBundleId())
                Output.line(try signing {
                    try AdvancedCommerceInAppSignatureCreator(signingKey: key, keyId: keyId, issuerId: issuerId, bundleId: bundleId)
                        .createSignature(requestJSON: json)
                })
            }
        }
    }
}
