package appstoreserver.client;

/**
 * Provides the bearer token of each App Store Server API request (Apple's interface). The client's own tokens are made
 * by the native core with the client's SigningKey; a client made with an implementation other than
 * {@link BearerTokenAuthenticator} sends the token this gives instead, asked for once per attempt.
 */
@FunctionalInterface
public interface BearerTokenAuthenticatorInterface {
    String generateToken();
}
