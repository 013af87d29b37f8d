package appstoreserver.client;

import appstoreserver.model.Environment;

/**
 * An answer of the App Store Server API with the environment that gave it (beyond Apple: client.withEnvironment()).
 * The environment is Environment.SANDBOX when a Production lookup was asked again in Sandbox (the Sandbox fallback),
 * else the client's.
 *
 * @param <T> the endpoint's response model (Void for an endpoint without one)
 */
public final class Answered<T> {
    private final T value;
    private final Environment environment;

    Answered(T value, Environment environment) {
        this.value = value;
        this.environment = environment;
    }

    /** The decoded answer; null for an endpoint without a response body. */
    public T getValue() {
        return value;
    }

    /** The environment that answered. */
    public Environment getEnvironment() {
        return environment;
    }

    @Override
    public String toString() {
        return "Answered{environment=" + environment + ", value=" + value + '}';
    }
}
