package appstoreserver.tests;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Migration is the import prefix: every public class, constructor, method and enum constant of Apple's Java library
 * 5.2.0 (src/test/resources/apple-java-5.2.0.json, extracted from Apple's sources) exists here under
 * {@code appstoreserver.} with the same parameter and return types, except the classes listed in NOT_OFFERED (with the
 * reason). Apple's protected extension points are compared too (everyProtectedExtensionPoint); makeRequest's result,
 * BaseAppStoreServerAPIClient.HttpResponseInterface, is a nested class of the surface.
 */
class AppleSurfaceTest {
    static final Map<String, String> NOT_OFFERED = Map.ofEntries(
            Map.entry("verification.ChainVerifier", "chains are verified by the native core (x5c, roots, OCSP)"),
            Map.entry("verification.AppleExtensionCertPathChecker", "Apple's marker OIDs are checked by the core"),
            Map.entry("model.AbstractAdvancedCommerceBaseItem", "models are flat generated classes, no abstract bases"),
            Map.entry("model.AbstractAdvancedCommerceItem", "models are flat generated classes, no abstract bases"),
            Map.entry("model.AbstractAdvancedCommerceResponse", "models are flat generated classes, no abstract bases"),
            Map.entry("model.AbstractAdvancedCommerceInAppRequest", "models are flat generated classes, no abstract bases"),
            Map.entry("model.AdvancedCommerceRequest", "models are flat generated classes, no abstract bases"),
            Map.entry("model.HelperValidationUtils", "Apple's limits are checked by the core when a request is signed or sent"),
            Map.entry("model.UUIDLowercaseSerializer", "the core writes request JSON (UUIDs in lower case)"),
            Map.entry("model.AppAccountTokenNullSerializer", "the core writes request JSON"));

    static JsonNode surface() throws Exception {
        try (InputStream in = AppleSurfaceTest.class.getResourceAsStream("/apple-java-5.2.0.json")) {
            return Support.JSON.readTree(in).get("classes");
        }
    }

    static Class<?> ours(String name) {
        String[] parts = name.split("\\.");
        StringBuilder b = new StringBuilder("appstoreserver");
        for (int i = 0; i < parts.length; i++) {
            b.append(i < 2 ? "." : "$").append(parts[i]);
        }
        try {
            return Class.forName(b.toString(), false, AppleSurfaceTest.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    static List<String> names(Class<?>[] types) {
        List<String> out = new ArrayList<>();
        for (Class<?> t : types) {
            out.add(t.getSimpleName());
        }
        return out;
    }

    static List<String> names(JsonNode types) {
        List<String> out = new ArrayList<>();
        for (JsonNode t : types) {
            out.add(t.asText());
        }
        return out;
    }

    @Test
    void everyClassMethodAndConstant() throws Exception {
        List<String> problems = new ArrayList<>();
        int classes = 0;
        int members = 0;
        for (Iterator<Map.Entry<String, JsonNode>> it = surface().fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String name = e.getKey();
            JsonNode c = e.getValue();
            if (NOT_OFFERED.containsKey(name)) {
                continue;
            }
            Class<?> cls = ours(name);
            if (cls == null) {
                problems.add("missing class appstoreserver." + name);
                continue;
            }
            classes++;
            for (JsonNode m : c.get("methods")) {
                members++;
                String mname = m.get(0).asText();
                String ret = m.get(1).asText();
                List<String> params = names(m.get(2));
                boolean found = false;
                for (Method x : cls.getMethods()) {
                    if (x.getName().equals(mname) && names(x.getParameterTypes()).equals(params)
                            && x.getReturnType().getSimpleName().equals(ret)
                            && Modifier.isStatic(x.getModifiers()) == m.get(3).asBoolean()) {
                        found = true;
                    }
                }
                if (!found) {
                    problems.add(name + "." + mname + params + " -> " + ret);
                }
            }
            for (JsonNode k : c.get("ctors")) {
                members++;
                List<String> params = names(k.get(1));
                boolean found = false;
                for (Constructor<?> x : cls.getDeclaredConstructors()) {
                    int mod = x.getModifiers();
                    if ((Modifier.isPublic(mod) || Modifier.isProtected(mod)) && names(x.getParameterTypes()).equals(params)) {
                        found = true;
                    }
                }
                if (!found) {
                    problems.add(name + " constructor " + params);
                }
            }
            if (c.get("kind").asText().equals("enum")) {
                List<String> have = new ArrayList<>();
                for (Object o : cls.getEnumConstants()) {
                    have.add(((Enum<?>) o).name());
                }
                for (JsonNode k : c.get("constants")) {
                    members++;
                    if (!have.contains(k.asText())) {
                        problems.add(name + "." + k.asText());
                    }
                }
            }
        }
        System.out.println("apple surface: " + classes + " classes, " + members + " members checked; "
                + NOT_OFFERED.size() + " classes not offered");
        assertTrue(problems.isEmpty(), problems.size() + " differences from Apple's Java API:\n  "
                + String.join("\n  ", problems));
        assertTrue(classes > 140, "only " + classes + " classes compared");
    }

    /**
     * Apple's protected extension points (the "protected" lists, from bindings/java/scripts/apple-surface-protected):
     * each is here, protected or public, with the same parameter and return types, except those in
     * NOT_OFFERED_PROTECTED (with the reason; docs/migrating.md lists them all) and the members of classes not offered.
     */
    static final Map<String, String> NOT_OFFERED_PROTECTED = Map.ofEntries(
            Map.entry("client.AppStoreServerAPIClient.getResponse", "OkHttp-typed; no OkHttp here: override makeRequest (Apple's arguments)"),
            Map.entry("client.AppStoreServerAPIClient.OkHttpResponse", "OkHttp's response wrapper; no OkHttp here"),
            Map.entry("client.BaseAppStoreServerAPIClient.makeHttpCall", "the core builds each request and judges each answer"),
            Map.entry("signature.JWSSignatureCreator.createSignature", "arbitrary claims are not signed: the creators sign Apple's claim sets"),
            Map.entry("verification.SignedDataVerifier.decodeSignedObject", "the core verifies and decodes; java-jwt types are not used"),
            Map.entry("verification.SignedDataVerifier.parseJWTPayload", "java-jwt's DecodedJWT; the core decodes"),
            Map.entry("verification.SignedDataVerifier.validateAppAppleId", "the core's identity checks; notifications: override verifyNotification"),
            Map.entry("verification.SignedDataVerifier.validateBundleId", "the core's identity checks; notifications: override verifyNotification"),
            Map.entry("verification.SignedDataVerifier.validateEnvironment", "the core's identity checks; notifications: override verifyNotification"));
    /** Classes whose protected members are builder plumbing of Apple's abstract model bases (models are flat here). */
    static final String MODEL_PLUMBING = "model.";

    static boolean hasProtected(Class<?> cls, JsonNode m) {
        String name = m.get(0).asText();
        String type = m.get(1).asText();
        if (m.get(2).isNull() && (type.equals("class") || type.equals("interface"))) {
            for (Class<?> k = cls; k != null; k = k.getSuperclass()) {
                for (Class<?> n : k.getDeclaredClasses()) {
                    int mod = n.getModifiers();
                    if (n.getSimpleName().equals(name) && (Modifier.isPublic(mod) || Modifier.isProtected(mod))
                            && n.isInterface() == type.equals("interface")) {
                        return true;
                    }
                }
            }
            return false;
        }
        for (Class<?> k = cls; k != null; k = k.getSuperclass()) {
            if (m.get(2).isNull()) {
                for (java.lang.reflect.Field f : k.getDeclaredFields()) {
                    int mod = f.getModifiers();
                    if (f.getName().equals(name) && f.getType().getSimpleName().equals(type)
                            && (Modifier.isPublic(mod) || Modifier.isProtected(mod))) {
                        return true;
                    }
                }
                continue;
            }
            for (Method x : k.getDeclaredMethods()) {
                int mod = x.getModifiers();
                if (x.getName().equals(name) && names(x.getParameterTypes()).equals(names(m.get(2)))
                        && x.getReturnType().getSimpleName().equals(type) && (Modifier.isPublic(mod) || Modifier.isProtected(mod))
                        && Modifier.isStatic(mod) == m.get(3).asBoolean()) {
                    return true;
                }
            }
        }
        return false;
    }

    @Test
    void everyProtectedExtensionPoint() throws Exception {
        List<String> problems = new ArrayList<>();
        int checked = 0;
        for (Iterator<Map.Entry<String, JsonNode>> it = surface().fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String name = e.getKey();
            if (NOT_OFFERED.containsKey(name) || name.startsWith(MODEL_PLUMBING)) {
                continue;
            }
            for (JsonNode m : e.getValue().get("protected")) {
                String member = name + "." + m.get(0).asText();
                if (NOT_OFFERED_PROTECTED.containsKey(member)) {
                    if (hasProtected(ours(name), m)) {
                        problems.add(member + " exists now: remove it from NOT_OFFERED_PROTECTED");
                    }
                    continue;
                }
                checked++;
                if (!hasProtected(ours(name), m)) {
                    problems.add("protected " + member + m.get(2) + " -> " + m.get(1));
                }
            }
        }
        System.out.println("apple surface: " + checked + " protected extension points checked; "
                + NOT_OFFERED_PROTECTED.size() + " not offered");
        assertTrue(problems.isEmpty(), problems.size() + " differences from Apple's protected members:\n  "
                + String.join("\n  ", problems));
        assertTrue(checked >= 7, "only " + checked + " protected members compared");
    }

    @Test
    void notOfferedClassesReallyAbsent() {
        for (String name : NOT_OFFERED.keySet()) {
            assertTrue(ours(name) == null, name + " exists now: remove it from NOT_OFFERED " + Arrays.asList(name));
        }
    }
}
