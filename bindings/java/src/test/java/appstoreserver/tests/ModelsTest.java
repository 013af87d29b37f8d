package appstoreserver.tests;

import appstoreserver.internal.Json;
import appstoreserver.model.AdvancedCommerceOneTimeChargeCreateRequest;
import appstoreserver.model.AppTransaction;
import appstoreserver.model.DecodedSignedData;
import appstoreserver.model.Environment;
import appstoreserver.model.JWSTransactionDecodedPayload;
import appstoreserver.model.NotificationTypeV2;
import appstoreserver.model.PerformanceTestResultResponse;
import appstoreserver.model.RevocationReason;
import appstoreserver.model.SendAttemptResult;
import appstoreserver.model.TransactionHistoryRequest;
import appstoreserver.model.Type;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The generated models behave as Apple's: typed enum getters with raw twins keeping unknown values, unknown JSON keys
 * kept in unknownFields and written back, fluent setters, equals/hashCode/toString, Xcode's fractional timestamps,
 * enums whose fromValue returns null for values this version does not know.
 */
class ModelsTest {
    static final String TX = "{\"transactionId\":\"1\",\"type\":\"Consumable\",\"revocationReason\":7,"
            + "\"environment\":\"Sandbox\",\"purchaseDate\":1698148900000.5,\"futureField\":{\"x\":[1,2]},"
            + "\"inAppOwnershipType\":\"SOMETHING_NEW\"}";

    @Test
    void enumsAndUnknownValues() throws Exception {
        JWSTransactionDecodedPayload t = Json.read(TX.getBytes(), JWSTransactionDecodedPayload.class);
        assertEquals(Type.CONSUMABLE, t.getType());
        assertEquals("Consumable", t.getRawType());
        assertNull(t.getRevocationReason(), "an unknown value has no member");
        assertEquals(7, t.getRawRevocationReason());
        assertNull(t.getInAppOwnershipType());
        assertEquals("SOMETHING_NEW", t.getRawInAppOwnershipType());
        assertEquals(Environment.SANDBOX, t.getEnvironment());
        assertEquals(1698148900000L, t.getPurchaseDate(), "Xcode's fractional milliseconds");
        assertEquals(Map.of("futureField", Map.of("x", java.util.List.of(1, 2))), t.getUnknownFields());
        JsonNode back = Json.MAPPER.valueToTree(t);
        assertEquals(7, back.get("revocationReason").asInt(), "the raw value is written back");
        assertEquals(2, back.get("futureField").get("x").get(1).asInt(), "unknown keys are written back");
        assertFalse(back.has("unknownFields"));
        assertFalse(back.has("revocationDate"), "nulls are left out");
        assertNull(RevocationReason.fromValue(7));
        assertEquals(RevocationReason.REFUNDED_DUE_TO_ISSUE, RevocationReason.fromValue(1));
        assertNull(NotificationTypeV2.fromValue("NEW_TYPE"));
        assertEquals("DID_RENEW", NotificationTypeV2.DID_RENEW.getValue());
        assertEquals("Auto-Renewable Subscription", Type.AUTO_RENEWABLE_SUBSCRIPTION.toString());
    }

    @Test
    void fluentSettersEqualsHashCodeToString() throws Exception {
        JWSTransactionDecodedPayload a = new JWSTransactionDecodedPayload().transactionId("1").type(Type.CONSUMABLE)
                .quantity(2);
        JWSTransactionDecodedPayload b = new JWSTransactionDecodedPayload();
        b.setTransactionId("1");
        b.setRawType("Consumable");
        b.setQuantity(2);
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        b.setRevocationReason(RevocationReason.REFUNDED_FOR_OTHER_REASON);
        assertNotEquals(a, b);
        assertEquals(0, b.getRawRevocationReason());
        assertTrue(a.toString().startsWith("JWSTransactionDecodedPayload{"), a.toString());
        assertTrue(a.toString().contains("type='Consumable'"), a.toString());
        assertEquals(a, Json.read(Json.write(a), JWSTransactionDecodedPayload.class));
    }

    @Test
    void applesShapes() throws Exception {
        AppTransaction app = new AppTransaction().receiptCreationDate(5L);
        assertEquals(5L, ((DecodedSignedData) app).getSignedDate(), "Apple's AppTransaction signs with its creation date");
        TransactionHistoryRequest r = new TransactionHistoryRequest().sort(TransactionHistoryRequest.Order.DESCENDING)
                .productTypes(java.util.List.of(TransactionHistoryRequest.ProductType.AUTO_RENEWABLE));
        JsonNode json = Json.MAPPER.valueToTree(r);
        assertEquals("DESCENDING", json.get("sort").asText());
        assertEquals("AUTO_RENEWABLE", json.get("productTypes").get(0).asText());
        PerformanceTestResultResponse p = Json.read(
                "{\"failures\":{\"TIMED_OUT\":3,\"SOMETHING_NEW\":1}}".getBytes(), PerformanceTestResultResponse.class);
        assertEquals(Map.of(SendAttemptResult.TIMED_OUT, 3), p.getFailures());
        assertEquals(2, p.getRawFailures().size(), "unknown keys stay in the raw map");
        Map<SendAttemptResult, Integer> typed = new LinkedHashMap<>();
        typed.put(SendAttemptResult.SUCCESS, 1);
        assertEquals(Map.of("SUCCESS", 1), p.failures(typed).getRawFailures());
        AdvancedCommerceOneTimeChargeCreateRequest req = SigningTest.oneTimeCharge("SKU");
        JsonNode w = Json.MAPPER.valueToTree(req);
        assertEquals("CREATE_ONE_TIME_CHARGE", w.get("operation").asText());
        assertEquals("1", w.get("version").asText());
        assertEquals("CREATE_ONE_TIME_CHARGE", req.getOperation());
    }
}
