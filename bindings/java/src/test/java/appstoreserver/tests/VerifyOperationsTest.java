package appstoreserver.tests;

import appstoreserver.verification.SignedDataVerifier;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Method;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verify operations of spec/apple.json (verifyOperations, with the java section's names) are SignedDataVerifier's
 * methods: Apple's name, one parameter of the declared type, the operation's model as the result; and
 * SignedDataVerifier.Kind names each of them. SignedDataVerifier is written by hand; this keeps it and the spec together.
 */
class VerifyOperationsTest {
    @Test
    void everyVerifyOperationIsAMethodOfSignedDataVerifier() throws Exception {
        JsonNode apple = Support.json(Support.REPO.resolve("spec/apple.json"));
        JsonNode ops = apple.get("verifyOperations");
        JsonNode java = apple.get("java");
        Class<?> parameter = Class.forName("java.lang." + java.get("verifyParameterType").asText());
        Set<String> kinds = new HashSet<>();
        for (SignedDataVerifier.Kind k : SignedDataVerifier.Kind.values()) {
            kinds.add(k.name());
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = ops.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> op = it.next();
            String method = java.get("verify").get(op.getKey()).get(0).asText();
            String model = op.getValue().get("model").asText();
            String cls = java.get("classNames").path(model).asText(model);
            Method m = SignedDataVerifier.class.getMethod(method, parameter);
            assertEquals(cls, m.getReturnType().getSimpleName(), method);
            assertTrue(kinds.contains(op.getKey().toUpperCase(Locale.ROOT)), "SignedDataVerifier.Kind lacks " + op.getKey());
        }
        assertEquals(ops.size(), kinds.size(), "SignedDataVerifier.Kind " + kinds);
    }
}
