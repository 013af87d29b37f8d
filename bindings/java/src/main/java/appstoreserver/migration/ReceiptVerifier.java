package appstoreserver.migration;

import appstoreserver.internal.Abi;
import appstoreserver.internal.Args;
import appstoreserver.internal.Cleaners;
import appstoreserver.internal.Errors;
import appstoreserver.internal.Json;
import appstoreserver.internal.NativeError;
import appstoreserver.internal.NativeHandle;
import appstoreserver.model.VerifiedAppReceiptFields;
import appstoreserver.verification.VerificationException;
import appstoreserver.verification.VerificationStatus;

import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Cleaner;
import java.util.List;
import java.util.Set;

/**
 * Verifies app receipts (beyond Apple's libraries): the PKCS#7 signature over the receipt, the signer's chain to one
 * of the root certificates (for App Store receipts, Apple Inc. Root) at the receipt's creation date, Apple's marker
 * extensions, and the bundle id. Thread-safe; close() frees it.
 */
public class ReceiptVerifier implements AutoCloseable {
    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;

    /**
     * @param rootCertificates the trust anchors (DER or PEM), read to their end
     * @param bundleId the app's bundle id, or null to accept any
     */
    public ReceiptVerifier(Set<InputStream> rootCertificates, String bundleId) {
        List<byte[]> roots = Args.readStreams(rootCertificates, "rootCertificates");
        byte[] bundle = Args.optionalCString(bundleId, "bundleId");
        long v;
        try {
            v = Abi.receipt_verifier_new(roots.toArray(new byte[0][]), bundle);
        } catch (NativeError e) {
            RuntimeException r = Errors.library(e);
            throw r instanceof IllegalArgumentException ? r : new IllegalArgumentException(e.detail, r);
        }
        this.handle = new NativeHandle("ReceiptVerifier", v, Abi::receipt_verifier_free);
        this.cleanable = Cleaners.register(this, handle);
    }

    /**
     * Verifies a base64 app receipt and returns its fields.
     *
     * @throws VerificationException the receipt is not genuine, not for this app, or not a receipt (getStatus() in
     *                               Apple's vocabulary, getAppStoreStatus() and getReason() precise: BAD_SIGNATURE,
     *                               UNTRUSTED_CHAIN, EXPIRED, WRONG_BUNDLE, RECEIPT_MALFORMED, WRONG_KIND, ...)
     */
    public VerifiedAppReceiptFields verify(String appReceipt) throws VerificationException {
        byte[] receipt = Args.text(appReceipt, "appReceipt");
        long h = handle.acquire();
        byte[] json;
        try {
            json = Abi.receipt_verifier_verify(h, receipt);
        } catch (NativeError e) {
            if (e.status == appstoreserver.AppStoreStatus.INVALID_ARGUMENT.getValue()) {
                throw Errors.library(e);
            }
            throw new VerificationException(status(e), e.status, e.reason, e.detail, null);
        } finally {
            handle.release();
        }
        try {
            return Json.read(json, VerifiedAppReceiptFields.class);
        } catch (IOException e) {
            throw new IllegalStateException("the library's receipt JSON does not map to VerifiedAppReceiptFields", e);
        }
    }

    private static VerificationStatus status(NativeError e) {
        if (e.status == appstoreserver.AppStoreStatus.INVALID_APP_IDENTIFIER.getValue()) {
            return VerificationStatus.INVALID_APP_IDENTIFIER;
        }
        if (e.reason == appstoreserver.FailureReason.UNTRUSTED_CHAIN.getValue()
                || e.reason == appstoreserver.FailureReason.EXPIRED.getValue()
                || e.reason == appstoreserver.FailureReason.MISSING_MARKER_OID.getValue()) {
            return VerificationStatus.INVALID_CHAIN;
        }
        return VerificationStatus.VERIFICATION_FAILURE;
    }

    @Override
    public void close() {
        cleanable.clean();
    }
}
