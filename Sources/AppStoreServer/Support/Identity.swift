/// How identities (bundle ids, environments) are compared: as UTF-8 bytes. Swift's `==` on `String` equates
/// canonically equivalent text (NFC and NFD "é", U+212A KELVIN SIGN and "K"), which a host comparing bytes sees as
/// different apps: a payload for "com.example.\u{212A}" must not pass a verifier for "com.example.K".
enum Identity {
    static func same(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let x?, let y?): x.utf8.elementsEqual(y.utf8)
        default: false
        }
    }
}
