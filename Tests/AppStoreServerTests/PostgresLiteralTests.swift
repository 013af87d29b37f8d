import Testing
@testable import AppStoreServer

/// `PostgresLedgerStore.literal`: every text the ledger sends inline (a batch's JSON parameters, the keys of the
/// one-trip write's check) is dollar-quoted with a tag it does not hold; a stored JWS holds `$` wherever a member
/// name's code is one, so texts with `$`, and with the tags themselves, are the usual case, not a corner.
@Suite struct PostgresLiteralTests {
    /// The tag `literal` put around `text`, checked to quote it whole.
    private func tag(_ text: String) -> String? {
        let quoted = PostgresLedgerStore.literal(text)
        guard let end = quoted.dropFirst().firstIndex(of: "$") else { return nil }
        let tag = String(quoted[...end])
        guard quoted == tag + text + tag else { return nil }
        return tag
    }

    @Test(arguments: [
        ("plain", "$q$"),
        ("", "$q$"),
        ("a $ b $$ c", "$q$"),
        ("\u{1}$\"2.0\",\u{1}q$", "$q$"),
        ("holds $q$", "$q1$"),
        ("holds $q1$ only", "$q2$"),
        ("holds $q$ and $q7$ and $q3$", "$q8$"),
        ("ends with $q", "$q$"),
        ("ends with $q12", "$q$"),
        ("$q$$q1$$q2$", "$q3$"),
        ("leading zeros $q007$", "$q8$"),
        ("more digits than counted $q12345678901234567890$", "$q$"),
    ])
    func theTagIsNotInTheText(text: String, expected: String) {
        let t = tag(text)
        #expect(t == expected)
        #expect(t.map { !text.contains($0) } == true)
    }

    /// A text too long to quote with a counted tag by the first guess still gets one it does not hold.
    @Test func manyTagsInOneText() {
        let text = (0..<300).map { $0 == 0 ? "$q$" : "$q\($0)$" }.joined(separator: " ")
        #expect(tag(text) == "$q300$")
    }
}
