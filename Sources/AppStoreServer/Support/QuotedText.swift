/// Caller-supplied text quoted in a message. Messages end up in logs and exceptions, so key material must never
/// reach one: text that looks like a PEM block (a .p8 pasted where a path, a URL or an identifier goes) is described,
/// not quoted; anything else is quoted printable and bounded.
public enum QuotedText {
    /// What a message says instead of text that looks like key material.
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

/// Text a server chose (an error message, a Location), made safe to put in messages, logs and terminals.
public enum ServerText {
    /// Longest error message kept, in characters (Apple's are one sentence).
    public static let messageLimit = 1024

    /// Control characters (C0, DEL, C1: terminal escape sequences, line breaks that forge log lines) and the
    /// invisible format characters that reorder text (bidi overrides) become spaces; longer than `limit` characters
    /// is cut, saying so.
    public static func clean(_ text: String, limit: Int) -> String {
        var out = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                return String(out) + "... (\(text.unicodeScalars.count - limit) more characters not shown)"
            }
            let v = scalar.value
            let control = v < 0x20 || (0x7F...0x9F).contains(v) || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v)
            out.append(control ? " " : scalar)
            count += 1
        }
        return String(out)
    }
}
