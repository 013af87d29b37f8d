package appstoreserver.client;

import appstoreserver.internal.Json;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Base64;
import java.util.Iterator;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;

/**
 * One endpoint call's name and arguments, as the call driver's params_json (include/appstoreserver.h: path parameters
 * as strings, query parameters by name with a query model flattened into its fields, the request model under "body",
 * raw bytes as base64 under their name). Built by the generated EndpointRequests; null is refused here for what
 * Apple's API requires, everything else is checked by the native core when the call is made.
 */
final class EndpointCall {
    final String endpoint;
    /** Whether Apple's error codes of this endpoint are AdvancedCommerceAPIError's. */
    final boolean advancedCommerce;
    private final ObjectNode params = Json.MAPPER.createObjectNode();

    EndpointCall(String endpoint, boolean advancedCommerce) {
        this.endpoint = endpoint;
        this.advancedCommerce = advancedCommerce;
    }

    static <T> T notNull(T value, String name) {
        if (value == null) {
            throw new NullPointerException(name + " must not be null");
        }
        return value;
    }

    void path(String name, String value) {
        params.put(name, notNull(value, name));
    }

    void path(String name, UUID value) {
        params.put(name, notNull(value, name).toString());
    }

    void requiredQuery(String name, String value) {
        params.put(name, notNull(value, name));
    }

    /** An optional query parameter: left out when null. */
    void query(String name, Object value) {
        if (value != null) {
            params.set(name, tree(value, name));
        }
    }

    /** A repeated query parameter of enum members (their raw values); left out when null. */
    <E> void queryList(String name, E[] values, Function<E, Object> raw) {
        if (values == null) {
            return;
        }
        ArrayNode list = params.putArray(name);
        for (int i = 0; i < values.length; i++) {
            list.add(tree(raw.apply(notNull(values[i], name + "[" + i + "]")), name));
        }
    }

    /** A model sent as query parameters: its JSON fields become the parameters (unknown ones are refused by the core). */
    void queryModel(String name, Object model, boolean optional) {
        if (model == null && optional) {
            return;
        }
        JsonNode tree = tree(notNull(model, name), name);
        for (Iterator<Map.Entry<String, JsonNode>> it = tree.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> e = it.next();
            params.set(e.getKey(), e.getValue());
        }
    }

    void body(String name, Object model) {
        params.set("body", tree(notNull(model, name), name));
    }

    void bytes(String name, byte[] data) {
        params.put(name, Base64.getEncoder().encodeToString(notNull(data, name)));
    }

    /** A value as JSON; a model Jackson cannot write (a raw collection holding the wrong type) is an IAE naming it. */
    private JsonNode tree(Object value, String name) {
        try {
            return Json.MAPPER.valueToTree(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(endpoint + ": " + name + " does not convert to JSON: " + e.getMessage(), e);
        }
    }

    /** params_json as UTF-8. */
    byte[] json() {
        try {
            return Json.write(params);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException(endpoint + ": the arguments do not convert to JSON: " + e.getOriginalMessage(), e);
        }
    }
}
