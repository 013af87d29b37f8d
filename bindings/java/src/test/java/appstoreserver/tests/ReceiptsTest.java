package appstoreserver.tests;

import appstoreserver.internal.Json;
import appstoreserver.migration.ReceiptUtility;
import appstoreserver.migration.ReceiptVerifier;
import appstoreserver.model.AppReceiptTransactionIds;
import appstoreserver.model.ReceiptEffectiveDateSource;
import appstoreserver.model.VerifiedAppReceiptFields;
import appstoreserver.verification.VerificationException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Own-CA app receipts (Tests/support/receipts.py): ReceiptVerifier's fields, statuses and reasons, and every
 * transaction id through ReceiptUtility (Apple's first id, beyond Apple all of them).
 */
class ReceiptsTest {
    @Test
    void ownReceipts() throws Exception {
        Path base = Support.receipts();
        JsonNode cases = Support.json(base.resolve("manifest.json")).get("cases");
        assertTrue(cases.size() >= 30);
        ReceiptUtility util = new ReceiptUtility();
        List<String> problems = new ArrayList<>();
        for (JsonNode c : cases) {
            String id = c.get("id").asText();
            JsonNode v = c.get("verifier");
            Set<InputStream> roots = new HashSet<>();
            for (JsonNode r : v.get("roots")) {
                roots.add(new ByteArrayInputStream(Support.bytes(base.resolve(r.asText()))));
            }
            String text = Support.text(base.resolve(c.get("path").asText()));
            JsonNode expect = c.get("expect");
            try (ReceiptVerifier verifier = new ReceiptVerifier(roots, v.get("bundleId").isNull() ? null
                    : v.get("bundleId").asText())) {
                if (expect.get("result").asText().equals("valid")) {
                    VerifiedAppReceiptFields fields = verifier.verify(text);
                    ObjectNode got = (ObjectNode) Support.JSON.readTree(Json.write(fields)); // number node types as parsed
                    got.remove("verification");
                    if (!got.equals(expect.get("json"))) {
                        problems.add(id + ": fields " + got + " != " + expect.get("json"));
                    }
                    ReceiptEffectiveDateSource source = fields.getVerification().getEffectiveDateSource();
                    if (source == null || !source.getValue().equals(expect.get("effectiveDateSource").asText())) {
                        problems.add(id + ": effectiveDateSource " + source);
                    }
                } else {
                    try {
                        verifier.verify(text);
                        problems.add(id + ": verified, expected " + expect);
                    } catch (VerificationException e) {
                        if (!e.getAppStoreStatus().name().equals(expect.get("status").asText())
                                || !e.getReason().getReasonName().equals(expect.get("reason").asText())) {
                            problems.add(id + ": " + e.getAppStoreStatus() + "/" + e.getReason() + " expected " + expect);
                        }
                    }
                }
            }
            JsonNode extract = c.get("extract");
            AppReceiptTransactionIds ids = util.extractTransactionIdsFromAppReceipt(text);
            String first = extract.get("first").isNull() ? null : extract.get("first").asText();
            if (!Support.JSON.valueToTree(ids.getTransactionIds()).equals(extract.get("transactionIds"))
                    || !Support.JSON.valueToTree(ids.getOriginalTransactionIds()).equals(extract.get("originalTransactionIds"))
                    || !java.util.Objects.equals(first, ids.getFirstTransactionId())) {
                problems.add(id + ": ids " + ids);
            }
            if (extract.has("cIdError")) {
                assertThrows(IllegalArgumentException.class, () -> util.extractTransactionIdFromAppReceipt(text), id);
            } else if (!java.util.Objects.equals(first, util.extractTransactionIdFromAppReceipt(text))) {
                problems.add(id + ": first id");
            }
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    @Test
    void wrongKindsAndNothingFound() throws Exception {
        ReceiptUtility util = new ReceiptUtility();
        String tx = java.util.Base64.getEncoder().encodeToString(("{\"purchase-info\" = \""
                + java.util.Base64.getEncoder().encodeToString("{\"transaction-id\" = \"33993399\";}".getBytes())
                + "\";}").getBytes());
        assertEquals("33993399", util.extractTransactionIdFromTransactionReceipt(tx));
        assertNull(util.extractTransactionIdFromTransactionReceipt(java.util.Base64.getEncoder().encodeToString("{}".getBytes())));
        assertThrows(IllegalArgumentException.class, () -> util.extractTransactionIdFromAppReceipt(tx));
    }
}
