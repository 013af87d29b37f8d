/// The library version; must equal the VERSION file and the APPSTORE_VERSION_* macros (checked by tests).
public enum AppStoreServerVersion {
    public static let major = 0
    public static let minor = 2
    public static let patch = 0
    public static let string = "0.2.0"
}
