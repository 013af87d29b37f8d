import Testing
@testable import AppStoreServer

/// `PostgresLedgerStore.literal`: every text the ledger sends inline (a batch's JSON parameters, the keys of the
/// one-trip write's check) is dollar-quoted with a tag it does not hold; a stored JWS holds `$` wherever a member
/// name's code is one, so texts with `$`, and with the tags themselves, are the usual case, not a corner.
@Suite struct PostgresLiteralTests {
    /// The tag `literal` put around `text`, checked to quote it whole: the server ends the literal at the first
    /// whole tag after the opening one, so that must be the closing one (not one in the text, nor one the text's end
    /// and the closing tag's first `$` would make).
    private func tag(_ text: String) -> String? {
        let quoted = PostgresLedgerStore.literal(text)
        guard let end = quoted.dropFirst().firstIndex(of: "$") else { return nil }
        let tag = String(quoted[...end])
        guard quoted == tag + text + tag,
              let first = (text + tag).firstRange(of: tag), first.lowerBound == (text + tag).index((text + tag).endIndex,
                                                                                                offsetBy: -tag.count) else {
            return nil
        }
        return tag
    }

    @Test(arguments: [
        ("plain", "$q$"),
        ("", "$q$"),
        ("a $ b $$ c", "$q$"),
        ("\u{1}$\"2.0\",\u{1}q$", "$q$"),
        ("holds $q$", "$q1$"),
        ("holds $q1$ only", "$q$"),
        ("holds $q$ and $q7$ and $q1$", "$q2$"),
        ("ends with $q", "$q1$"),
        ("ends with $q1", "$q$"),
        ("$q$ x $q1", "$q2$"),
        ("ends with $q12", "$q$"),
        ("ends with $", "$q$"),
        ("$q$$q1$$q2$", "$q3$"),
        ("leading zeros $q007$", "$q$"),
        ("more digits than counted $q12345678901234567890$", "$q$"),
        ("$q9999999$ and $q10000000$ then SQL", "$q$"),
        ("$q$ $q9999999$ and $q10000000$ then SQL", "$q1$"),
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
