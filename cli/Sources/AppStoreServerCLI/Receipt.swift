import AppStoreServer
import ArgumentParser

struct Receipt: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read legacy App Store receipts.",
        discussion: """
            EXAMPLES
              # the transaction ids, nothing checked (as Apple's ReceiptUtility):
              appstoreserver receipt ids receipt.b64
              appstoreserver receipt verify --bundle-id com.example.app receipt.b64
            """,
        subcommands: [IDs.self, VerifyReceipt.self]
    )

    /// A receipt as read: base64 text (line breaks allowed) or binary DER.
    static func der(_ bytes: [UInt8]) throws(ToolFailure) -> (der: [UInt8]?, base64: String?) {
        if bytes.first == 0x30 { return (bytes, nil) }
        return (nil, try Input.text(bytes, what: "the receipt"))
    }

    struct IDs: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ids",
            abstract: "The transaction ids of an app receipt (nothing is verified, as with Apple's ReceiptUtility).")
        @Argument(help: ArgumentHelp("The receipt (base64 or DER), or - (the default) for stdin.", valueName: "file"))
        var file: String?
        @Flag(help: "The input is a legacy transaction receipt (SKPaymentTransaction.transactionReceipt), not an app receipt.")
        var transactionReceipt = false
        @OptionGroup var output: OutputOptions

        func run() throws {
            try reporting {
                let bytes = try Input.read(file, what: "a receipt")
                if transactionReceipt {
                    let text = try Input.text(bytes, what: "the transaction receipt")
                    guard let id = ReceiptUtility.extractTransactionId(transactionReceipt: text) else {
                        throw ToolFailure(.invalid, status: "INVALID_RECEIPT", reason: "receipt_malformed",
                                          "no transaction id in this transaction receipt")
                    }
                    Output.json(Array(JSONText.object([("transactionId", JSONText.string(id))]).utf8), output)
                    return
                }
                let input = try Receipt.der(bytes)
                do throws(ReceiptError) {
                    let receipt = if let der = input.der { try AppReceipt(der: der) } else { try AppReceipt(base64: input.base64 ?? "") }
                    Output.json(receipt.json, output)
                } catch {
                    throw ToolFailure(error)
                }
            }
        }
    }

    struct VerifyReceipt: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Verify an app receipt (PKCS#7 signature, Apple's chain to Apple Inc. Root) and print its fields.")
        @Argument(help: ArgumentHelp("The receipt (base64 or DER), or - (the default) for stdin.", valueName: "file"))
        var file: String?
        @Option(help: "The app's bundle id (default: any, reported).") var bundleId: String?
        @Option(name: .customLong("root"), help: ArgumentHelp("A trust anchor, DER or PEM (repeatable; default: the bundled Apple Inc. Root).", valueName: "file"))
        var roots: [String] = []
        @OptionGroup var output: OutputOptions

        func run() throws {
            try reporting {
                let input = try Receipt.der(try Input.read(file, what: "a receipt"))
                let anchors = try trustAnchors(roots, default: .incRoot)
                if bundleId == nil { Output.error("note: no --bundle-id: the receipt's bundle id is not checked") }
                let verifier: ReceiptVerifier
                do throws(ConfigurationError) {
                    verifier = try ReceiptVerifier(rootCertificates: anchors.ders, bundleId: bundleId)
                } catch {
                    throw ToolFailure(error)
                }
                do throws(ReceiptError) {
                    let verified = if let der = input.der { try verifier.verify(appReceiptDER: der) }
                        else { try verifier.verify(appReceipt: input.base64 ?? "") }
                    Output.json(try verified.json(), output)
                } catch {
                    throw ToolFailure(error)
                }
            }
        }
    }
}
