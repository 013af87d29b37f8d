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
 * reason). The API client's protected extension point is compared too: makeRequest's result,
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

    @Test
    void notOfferedClassesReallyAbsent() {
        for (String name : NOT_OFFERED.keySet()) {
            assertTrue(ours(name) == null, name + " exists now: remove it from NOT_OFFERED " + Arrays.asList(name));
        }
    }
}
