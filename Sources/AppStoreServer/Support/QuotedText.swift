/// Caller-supplied text quoted in a message. Messages end up in logs and exceptions, so key material must never
/// reach one: text that looks like a PEM block (a .p8 pasted where a path, a URL or an identifier goes) is described,
/// not quoted; anything else is quoted printable and bounded.
public enum QuotedText {
    public static let pemDescription = "<PEM key material, not shown>"

    /// `"text"` (control characters dropped, at most `limit` characters), or `pemDescription`.
    public static func quote(_ text: String, limit: Int = 128) -> String {
        if looksLikeKey(text) { return pemDescription }
        let kept = text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) }
        let cut = String(String.UnicodeScalarView(kept.prefix(limit)))
        return "\"" + cut + (kept.count > limit ? "...\"" : "\"")
    }

    /// PEM armour, or the base64 body of a PKCS#8 EC key without it (its DER always starts "MIG"/"MIH" + "AgEA").
    public static func looksLikeKey(_ text: String) -> Bool {
        // Case-insensitive: callers may have lowercased the text (UUIDs and nonces are compared lowercase).
        let upper = text.uppercased()
        return upper.contains("-----BEGIN") || upper.contains("PRIVATE KEY") || upper.contains("AGEAMBMGBYQGSM49")
    }
}
