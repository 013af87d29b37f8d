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
     * Verifies a base64 app receipt, in order: the PKCS#7 SignedData structure and the receipt attributes (bounded
     * parse); the PKCS#7 signature over the content with the signer certificate's key (OpenSSL), which authenticates
     * the content; then the signer certificate's chain to a configured root, validated at the now-authenticated
     * creation date (attribute 12; at the current time when the receipt has none, and the output says so), exactly
     * signer &lt;- intermediate &lt;- root, with Apple's marker extensions (1.2.840.113635.100.6.11.1 on the signer,
     * 1.2.840.113635.100.6.2.1 on the intermediate); the documented fields; the bundle id. Signature first, so that
     * tampering with the signed content (the creation date included) is BAD_SIGNATURE, never EXPIRED. The result: the
     * receipt's documented fields (bundle id, versions, creation and expiration dates, the in-app records) and how it
     * was verified (the effective date and its source, the signer). Xcode (StoreKit testing) receipts are signed by a
     * local self-signed certificate and do not verify.
     *
     * <p>Verifies a base64 app receipt and returns its fields.
     *
     * @throws VerificationException the receipt is not genuine, not for this app, or not a receipt (getStatus() in
     *                               Apple's vocabulary, getAppStoreStatus() and getReason() precise: BAD_SIGNATURE,
     *                               UNTRUSTED_CHAIN, EXPIRED, WRONG_BUNDLE, RECEIPT_MALFORMED, WRONG_KIND, ...)
     * @cfunction appstore_receipt_verifier_verify
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
