package appstoreserver.tests;

import appstoreserver.client.AppStoreServerAPIClient;
import appstoreserver.client.BaseAppStoreServerAPIClient;
import appstoreserver.client.GetTransactionHistoryVersion;
import appstoreserver.internal.Json;
import appstoreserver.model.Environment;
import appstoreserver.model.ImageSize;
import appstoreserver.model.Status;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What the API client tests share: the mock App Store servers (Tests/support/mock_app_store.py over
 * Tests/support/api_cases.json, started once per run and stopped when the JVM exits and their standard input closes: a
 * normal one, one playing a Production that knows no id
 * (--not-found-lookups) and one playing a Production that never heard of the app (--unauthorized-lookups)), the test
 * key (check_signatures.py keys), the spec's endpoints, and the Java call of an api_cases.json / scenarios.json call
 * (its params are the C ABI's params_json).
 */
final class ApiSupport {
    static final JsonNode CASES = Support.json(Support.SUPPORT.resolve("api_cases.json")).get("cases");
    static final Map<String, JsonNode> ENDPOINTS = new LinkedHashMap<>();
    private static final Map<String, Support.Served> SERVERS = new HashMap<>();

    static {
        for (JsonNode ep : Support.json(Support.REPO.resolve("spec/endpoints.json")).get("endpoints")) {
            ENDPOINTS.put(ep.get("name").asText(), ep);
        }
    }

    private ApiSupport() {
    }

    static String p8() {
        return Support.text(Support.keys().resolve("p256.p8"));
    }

    private static String mock(String name, String... extra) {
        synchronized (SERVERS) {
            Support.Served s = SERVERS.get(name);
            if (s == null) {
                List<String> args = new ArrayList<>(List.of("--cases", Support.SUPPORT.resolve("api_cases.json").toString(),
                        "--public-key", Support.keys().resolve("p256_public.pem").toString(), "--key-id", Support.KEY_ID,
                        "--issuer-id", Support.ISSUER, "--bundle-id", Support.BUNDLE));
                args.addAll(List.of(extra));
                s = new Support.Served("PORT", "mock_app_store.py", args.toArray(new String[0]));
                SERVERS.put(name, s);
            }
            return "http://127.0.0.1:" + Integer.parseInt(s.words[0]);
        }
    }

    /** The mock answering every api_cases.json call and the scenarios on Get Transaction Info. */
    static String mockUrl() {
        return mock("mock");
    }

    /** A Production that knows no id: every sandboxFallback lookup is 404 errorCode 4040010. */
    static String notFoundUrl() {
        return mock("notFound", "--not-found-lookups", Support.REPO.resolve("spec/endpoints.json").toString());
    }

    /** A Production that never heard of the app: every sandboxFallback lookup is HTTP 401, plain text. */
    static String unauthorizedUrl() {
        return mock("unauthorized", "--unauthorized-lookups", Support.REPO.resolve("spec/endpoints.json").toString());
    }

    static BaseAppStoreServerAPIClient.Options options(String url) {
        return new BaseAppStoreServerAPIClient.Options().baseUrl(url);
    }

    /** A Sandbox client of the test key, at url. */
    static AppStoreServerAPIClient client(String url) {
        return new AppStoreServerAPIClient(p8(), Support.KEY_ID, Support.ISSUER, Support.BUNDLE, Environment.SANDBOX,
                options(url));
    }

    static JsonNode byEndpoint(String endpoint) {
        for (JsonNode c : CASES) {
            if (c.get("endpoint").asText().equals(endpoint)) {
                return c;
            }
        }
        throw new IllegalArgumentException(endpoint);
    }

    /** The first answer of a case (its response, or its first page). */
    static JsonNode expected(JsonNode c) {
        return c.has("pages") && !c.get("pages").isNull() ? c.get("pages").get(0) : c.get("response");
    }

    /** A model as the JSON Jackson writes for it, read back (numbers normalised as a parser reads them). */
    static JsonNode tree(Object model) {
        try {
            return Json.MAPPER.readTree(Json.MAPPER.writeValueAsBytes(model));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** A Java method call of an endpoint: the method and its arguments. */
    static final class Call {
        final String endpoint;
        final Method method;
        final Object[] args;

        Call(String endpoint, Method method, Object[] args) {
            this.endpoint = endpoint;
            this.method = method;
            this.args = args;
        }

        /** Calls it on target (a client or client.withEnvironment()), throwing what the method threw. */
        Object invoke(Object target) throws Exception {
            try {
                Method m = target.getClass().getMethod(method.getName(), method.getParameterTypes());
                return m.invoke(target, args);
            } catch (InvocationTargetException e) {
                Throwable t = e.getCause();
                if (t instanceof Exception) {
                    throw (Exception) t;
                }
                throw (Error) t;
            }
        }
    }

    private static Class<?> model(String name) {
        try {
            return Class.forName("appstoreserver.model." + ("NotificationData".equals(name) ? "Data" : name));
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The client method of an endpoint call and its arguments (params: the C ABI's params_json). getTransactionHistory
     * takes version V2, getTransactionHistoryV1 is getTransactionHistory with V1. pages: the ...Pages method, without
     * the page parameter.
     */
    static Call javaCall(String endpoint, JsonNode params, boolean pages) {
        boolean v1 = endpoint.equals("getTransactionHistoryV1");
        JsonNode ep = ENDPOINTS.get(v1 ? "getTransactionHistory" : endpoint);
        String name = v1 ? "getTransactionHistory" : endpoint;
        String pageParam = pages ? ep.get("pagination").get("parameter").asText() : null;
        List<Class<?>> types = new ArrayList<>();
        List<Object> args = new ArrayList<>();
        for (JsonNode p : ep.get("parameters")) {
            String pn = p.get("name").asText();
            if (pn.equals(pageParam)) {
                continue;
            }
            String where = p.get("in").asText();
            JsonNode type = p.get("type");
            JsonNode v = params.get(pn);
            try {
                if (where.equals("path") && type.asText().equals("UUID")) {
                    types.add(UUID.class);
                    args.add(v == null ? null : UUID.fromString(v.asText()));
                } else if (where.equals("path") || (where.equals("query") && type.asText().equals("String"))) {
                    types.add(String.class);
                    args.add(v == null || v.isNull() ? null : v.asText());
                } else if (where.equals("query") && type.isArray() && type.get(0).asText().equals("Status")) {
                    types.add(Status[].class);
                    if (v == null) {
                        args.add(null);
                    } else {
                        Status[] s = new Status[v.size()];
                        for (int i = 0; i < s.length; i++) {
                            s[i] = Status.fromValue(v.get(i).asInt());
                        }
                        args.add(s);
                    }
                } else if (where.equals("query") && type.asText().equals("ImageSize")) {
                    types.add(ImageSize.class);
                    args.add(v == null ? null : ImageSize.fromValue(v.asText()));
                } else if (where.equals("query")) { // a query model: the keys of params, flattened
                    Class<?> cls = model(type.asText());
                    ObjectNode fields = params.deepCopy();
                    for (JsonNode other : ep.get("parameters")) {
                        fields.remove(other.get("name").asText());
                    }
                    types.add(cls);
                    args.add(Json.MAPPER.treeToValue(fields, cls));
                } else if (type.asText().equals("Bytes")) {
                    types.add(byte[].class);
                    args.add(Base64.getDecoder().decode(v.asText()));
                } else {
                    Class<?> cls = model(type.asText());
                    types.add(cls);
                    args.add(Json.MAPPER.treeToValue(params.get("body"), cls));
                }
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        if (name.equals("getTransactionHistory")) {
            types.add(GetTransactionHistoryVersion.class);
            args.add(v1 ? versionV1() : GetTransactionHistoryVersion.V2);
        }
        try {
            Method m = AppStoreServerAPIClient.class.getMethod(pages ? name + "Pages" : name, types.toArray(new Class<?>[0]));
            return new Call(endpoint, m, args.toArray());
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException(endpoint + ": no method " + name + types, e);
        }
    }

    @SuppressWarnings("deprecation")
    private static GetTransactionHistoryVersion versionV1() {
        return GetTransactionHistoryVersion.V1;
    }

    static Call javaCall(JsonNode c) {
        return javaCall(c.get("endpoint").asText(), c.get("params"), false);
    }
}
