// Declarations of the appstoreserver Node package: Apple's Node library API (same names, constructor argument order
// and method signatures) on the appstoreserver core. The models, enums, endpoint methods and verify methods are
// generated from the spec (generated/types.d.ts; the endpoint and verify methods as interfaces the classes below
// merge); the classes below are written by hand, and test/types.test.js compiles them with tsc --strict against the
// JavaScript: every export, every class member and every enum member, both ways.
// A comment ending with `@cfunction appstore_...` documents a method that wraps that C function: its first
// paragraph is the function's summary in include/appstoreserver.h, rendered by scripts/generate
// (scripts/specgen/binding_docs.py; do not edit it here); the Node notes follow an empty line (test/docs.test.js).
/// <reference lib="es2018.asynciterable" />  // the ...Pages iterators, for projects compiled for older targets
import {
    AppStoreServerAPIEndpoints,
    SignedDataVerifierOperations,
    Environment,
    VerificationStatus,
    LibraryStatusName,
    FailureReasonName,
    AppReceiptTransactionIds,
    VerifiedAppReceiptFields,
    AbstractAdvancedCommerceInAppRequest,
    LedgerCustomer,
    LedgerIngestResult,
    LedgerSubscription,
    LedgerSummary,
    LedgerDisagreementPage,
    LedgerIdPage,
    LedgerReverifyResult,
    LedgerImportResult,
    LedgerExportResult,
} from './generated/types';

export * from './generated/types';

/** The package version. */
export declare const version: string;
/** The version of the loaded libappstoreserver. */
export declare const libraryVersion: string;

/** What the library adds to the errors it raises: its precise status and reason (docs/errors.md). */
export interface LibraryErrorDetail {
    /** The library's status, e.g. "INVALID_CHAIN_LENGTH" (finer than Apple's). */
    libraryStatus?: LibraryStatusName;
    libraryStatusCode?: number;
    /** The failure reason, e.g. "bad_signature". */
    reason?: FailureReasonName;
    reasonCode?: number;
}

/** A failure outside verification and API answers: configuration, keys, receipts, transport. */
export declare class AppStoreServerError extends Error implements LibraryErrorDetail {
    libraryStatus?: LibraryStatusName;
    libraryStatusCode?: number;
    reason?: FailureReasonName;
    reasonCode?: number;
    /** When the client's own rate limit has a free slot again (UNIX ms; libraryStatus "RATE_LIMITED"), or when the wait
     *  that would have passed the call's deadline would have ended (reason "deadline_exceeded"). */
    retryAtMs?: number;
    /** What caused it, when something did: the exception of fetch (or of an overridden makeFetchRequest) for a
     *  transport failure, what an external signer threw. */
    cause?: unknown;
    constructor(message: string, detail?: object);
}

/** Apple's VerificationException. `status` is Apple's Node VerificationStatus; `reason`, `message` and
 *  `libraryStatus` say precisely what failed. */
export declare class VerificationException extends Error implements LibraryErrorDetail {
    status: VerificationStatus;
    cause?: Error;
    libraryStatus?: LibraryStatusName;
    libraryStatusCode?: number;
    reason?: FailureReasonName;
    reasonCode?: number;
    constructor(status: VerificationStatus, cause?: Error, detail?: object);
}

/** Apple's APIException: an HTTP error answer of the App Store Server API. */
export declare class APIException extends Error implements LibraryErrorDetail {
    httpStatusCode: number;
    /** Apple's errorCode (raw, kept when unknown), or null. */
    apiError: number | null;
    errorMessage: string | null;
    /** The known code's name, e.g. "transactionIdNotFound". */
    apiErrorName?: string | null;
    /** The headers of the answer, like fetch's Headers flattened: lowercased names -> value (a repeated header's
     *  values joined with ", "), e.g. headers['x-apple-request-id']; {} without an answer. */
    headers: { [name: string]: string };
    /** Retry-After as a UNIX time in milliseconds (Apple's documented form of the header; the delta-seconds and
     *  HTTP-date forms are converted), or null. Since 0.2.0; before, seconds from the answer (now retryAfterSeconds). */
    retryAfter?: number | null;
    /** Retry-After in seconds from the answer (rounded up; 0 when the time has passed), or null. */
    retryAfterSeconds?: number | null;
    /** The same as retryAfter (UNIX time in milliseconds), or null. */
    retryAtMs?: number | null;
    libraryStatus?: LibraryStatusName;
    libraryStatusCode?: number;
    reason?: FailureReasonName;
    reasonCode?: number;
    constructor(httpStatusCode: number, apiError?: number | null, errorMessage?: string | null, detail?: object);
}

/** An external signer's function: the ES256 signature of `message` (ECDSA P-256 over SHA-256(message)) as 64 bytes
 *  r||s or DER, or a Promise of it. `digest` is SHA-256(message), for signers that take a digest (KMS MessageType
 *  DIGEST, PKCS#11 CKM_ECDSA). `timeoutMs`: the time it has (its own timeout, or what is left of an API call's
 *  deadline), to pass on to the KMS client. Called on the JS thread, possibly several times at once. */
export type Signer = {
    // Method syntax: its parameters are checked bivariantly, so a (data: Buffer) => Buffer function fits (the
    // binding passes Buffers), without these declarations needing Node's types.
    sign(message: Uint8Array, digest: Uint8Array, timeoutMs: number): Uint8Array | ArrayBuffer | Promise<Uint8Array | ArrayBuffer>;
}['sign'];

export interface ExternalSignerOptions {
    /** How long one signature may take, 1 to 4294967295 ms (default 10000): after it the call fails (reason
     *  "signer_failed", a TimeoutError as `cause`); the signer itself is not interrupted. */
    timeoutMs?: number;
}

/** A key held outside the process (a KMS or an HSM), given as `signingKey` wherever a .p8 PEM goes. Every signature
 *  it returns is verified with `publicKey` before use; a failure of the signer (it throws or rejects, answers with
 *  something that is not a signature of the message by that key, or not within the timeout) fails the call with
 *  AppStoreServerError, libraryStatus "INVALID_KEY", reason "signer_failed" (what the signer threw as `cause`).
 *  Only the Promise methods can use it (createSignatureAsync, createBearerTokenAsync, the endpoint methods): a
 *  synchronous call refuses it, since the signer runs on the thread that call blocks. */
export declare class ExternalSigner {
    /** publicKey: PEM "-----BEGIN PUBLIC KEY-----" text (string or bytes) or DER SubjectPublicKeyInfo. */
    constructor(sign: Signer, publicKey: string | Uint8Array, options?: ExternalSignerOptions);
    readonly sign: Signer;
    readonly publicKey: string | Uint8Array;
    readonly timeoutMs: number;
}

/** One of Apple's roots as the library carries it (fingerprint-checked). */
export interface AppleRootCertificate {
    name: string;
    /** SHA-256 of the DER, upper-case hex pairs separated by colons, as Apple publishes it. */
    sha256Fingerprint: string;
    der: Uint8Array;
}
/** Apple Root CA - G3 (DER), the anchor of App Store signed data, checked against Apple's published fingerprint. */
export declare function appleRootCertificates(): Uint8Array[];
/** Apple Inc. Root (DER), the anchor of app receipts. */
export declare function appleReceiptRootCertificates(): Uint8Array[];
/**
 * Apple's root certificates, carried by the library so no download is needed, each with Apple's name and its SHA-256
 * fingerprint as Apple publishes it ("63:34:3A:..."). Each is checked against that fingerprint
 * (https://www.apple.com/certificateauthority/) when first read; one that does not match is left out. First Apple
 * Root CA - G3 (App Store signed data), then Apple Inc. Root (app receipts).
 *
 * Each as an AppleRootCertificate (name, sha256Fingerprint, der).
 * @cfunction appstore_apple_root_der
 */
export declare function appleRootCertificateDetails(): AppleRootCertificate[];

/** A .p8 PEM (App Store Connect's key file, as text) or an ExternalSigner. */
export type SigningKey = string | ExternalSigner;

/** One exchange of an online (OCSP) check, as a transport receives it. */
export interface TransportRequest {
    method: string;
    url: string;
    headers: [string, string][];
    body: Uint8Array;
    /** The time the whole exchange may take; the transport must give up after it. */
    timeoutMs: number;
}

/** A transport's answer. Throwing (or rejecting) means no answer: a TimeoutError / AbortError counts as a timeout,
 *  a refused or unresolvable host as unreachable. */
export interface TransportResponse {
    status: number;
    headers?: [string, string][] | { [name: string]: string };
    body?: Uint8Array | ArrayBuffer | string;
}

export type Transport = (request: TransportRequest) => Promise<TransportResponse> | TransportResponse;

/** A fetch function: the global fetch, or one with the same call shape. */
export type FetchLike = (url: string, init: {
    method: string;
    headers: { [name: string]: string } | [string, string][];
    body?: string | Uint8Array;
    signal?: unknown;
    redirect?: string;
}) => Promise<FetchResponseLike>;

/** What the client reads of a response: status, headers (for Retry-After) and the body. */
export interface FetchResponseLike {
    status: number;
    ok?: boolean;
    headers?: { forEach(callback: (value: string, name: string) => void): void } | { [name: string]: string };
    arrayBuffer?(): Promise<ArrayBuffer>;
    text?(): Promise<string>;
    json?(): Promise<unknown>;
}

export interface SignedDataVerifierOptions {
    /** The transport of online checks (default: fetch). */
    transport?: Transport;
    /** The fetch the default transport uses (default: the global fetch). */
    fetch?: FetchLike;
    /** The time one OCSP exchange may take (default 30000). */
    ocspTimeoutMs?: number;
    /** Verified-chain cache (default 32 entries, 900 s; maxEntries 0 disables it). */
    chainCache?: { maxEntries: number; ttlSeconds: number };
}

/** Apple's SignedDataVerifier. The verify methods (generated) return Promises that run on the libuv thread pool;
 *  the ...Sync methods run on the calling thread (and refuse online checks, which need this thread for fetch). */
export declare class SignedDataVerifier {
    /** Apple's argument order. appleRootCertificates: DER (or PEM) of the trusted roots (Apple Root CA - G3). */
    constructor(appleRootCertificates: Uint8Array[], enableOnlineChecks: boolean, environment: Environment,
                bundleId: string, appAppleId?: number, options?: SignedDataVerifierOptions);
    /** The constructor's arguments (the roots as DER). */
    protected readonly rootCertificates: Uint8Array[];
    protected readonly enableOnlineChecks: boolean;
    protected readonly environment: Environment;
    protected readonly bundleId: string;
    protected readonly appAppleId: number | undefined | null;
    /**
     * Chain cache counters since the verifier was created: hits, misses, and the chains cached now.
     * @cfunction appstore_verifier_cache_stats
     */
    cacheStats(): { hits: number; misses: number; entries: number };
    /**
     * The app check of a notification on its own: the default of Apple's verifyNotification extension point.
     *
     * Called by verifyAndDecodeNotification after the signature, the chain and the payload passed, with the app the
     * notification names; a subclass (or an assignment on the instance, as Apple's tests do) may replace it, e.g. to
     * accept several apps. Throws VerificationException (INVALID_APP_IDENTIFIER, INVALID_ENVIRONMENT).
     * @cfunction appstore_verifier_check_notification_identity
     */
    protected verifyNotification(bundleId?: string, appAppleId?: number, environment?: string): void;
    /** Frees the library's verifier now (calls in flight complete first); later calls throw. */
    close(): void;
}
/** The verify methods (generated). */
export interface SignedDataVerifier extends SignedDataVerifierOperations {}

export interface AppStoreServerAPIClientOptions {
    /** The fetch of the default makeFetchRequest (default: the global fetch). */
    fetch?: FetchLike;
    /** Replaces the environment's base URL (e.g. a test server). */
    baseUrl?: string;
    /** The client's timeout (default 30000 ms): a deadline for the whole call (the external signer, rate-limit and
     *  retry waits, every exchange, each given the time left); past it: AppStoreServerError TRANSPORT_ERROR /
     *  "deadline_exceeded". */
    timeoutMs?: number;
    /** Retries of HTTP 429 and Apple's retryable errors (default 0: off), honouring Retry-After. */
    maxRetries?: number;
    initialBackoffMs?: number;
    maxBackoffMs?: number;
    /** Production clients (beyond Apple's library): a lookup (transaction info, history, statuses, refund history,
     *  app transaction info) that Production answers with transactionIdNotFound (4040010), or HTTP 401 (an app
     *  never released in Production), is asked again in Sandbox, after Production's retries; `answer()` says which
     *  environment answered. Default false. */
    sandboxFallback?: boolean;
    /** The Sandbox base URL of the fallback (default Apple's Sandbox), e.g. a second test server. */
    sandboxBaseUrl?: string;
    /** Client-side rate limit (beyond Apple's library) with Apple's published per-endpoint limits; default off. */
    rateLimit?: RateLimitOptions;
}

/** Apple's published per-endpoint limits (requests per second; Sandbox a tenth), one bucket per endpoint and
 *  environment per client. Every attempt (retries and fallback requests too) takes a slot. */
export interface RateLimitOptions {
    /** How long an attempt may wait for its slot (0: never wait). Beyond it the call rejects at once with
     *  AppStoreServerError (libraryStatus "RATE_LIMITED", reason "local_rate_limit", retryAtMs); nothing is sent. */
    maxWaitMs: number;
    /** The share of Apple's limits this client uses, 1-100 (e.g. 50 when two processes share a key); default 100. */
    sharePercent?: number;
}

/** A result with the environment that answered it (Environment.SANDBOX when a Production lookup fell back). */
export interface Answer<T> {
    value: T;
    environment: Environment;
}

type EndpointMethods = {
    [K in keyof AppStoreServerAPIEndpoints]: AppStoreServerAPIEndpoints[K] extends (...a: any[]) => Promise<any> ? K : never
}[keyof AppStoreServerAPIEndpoints];
type EndpointPagesMethods = {
    [K in keyof AppStoreServerAPIEndpoints]:
        AppStoreServerAPIEndpoints[K] extends (...a: any[]) => AsyncIterableIterator<any> ? K : never
}[keyof AppStoreServerAPIEndpoints];
type PageOf<I> = I extends AsyncIterableIterator<infer P> ? P : never;

/** Apple's AppStoreServerAPIClient: every endpoint method (generated, Apple's names and parameter order), plus
 *  `...Pages` async iterators for the paginated endpoints and the Advanced Commerce API endpoints. */
export declare class AppStoreServerAPIClient {
    /** Apple's argument order; signingKey is the .p8 PEM text, or an ExternalSigner. */
    constructor(signingKey: SigningKey, keyId: string, issuerId: string, bundleId: string, environment: Environment,
                options?: AppStoreServerAPIClientOptions);
    /** The App Store Server API's base URL of the client's environment (options.baseUrl when given), no trailing
     *  slash: what Apple's makeFetchRequest puts before `path`. The Sandbox fallback and the Advanced Commerce
     *  endpoints use other hosts: an override should send to `request.url`. */
    protected urlBase: string;
    /** Apple's hook: sends one request, resolves to a fetch Response. Override it to use another HTTP stack. It gets
     *  Apple's arguments (headers User-Agent, Authorization, Accept, then Content-Type with a body), plus `request`:
     *  what the library built, whose `url` is the one to use (Sandbox fallback, Advanced Commerce hosts). */
    protected makeFetchRequest(path: string, parsedQueryParameters: URLSearchParams, method: string,
                               requestBody: string | Uint8Array | undefined, headers: { [key: string]: string },
                               request?: { method: string; url: string; headers: { [key: string]: string };
                                           body: Uint8Array; timeoutMs: number; environment: Environment }):
        Promise<FetchResponseLike>;
    /** An endpoint method's result with the environment that answered: answer('getTransactionInfo', id). */
    answer<M extends EndpointMethods>(method: M, ...args: Parameters<AppStoreServerAPIEndpoints[M]>):
        Promise<Answer<Awaited<ReturnType<AppStoreServerAPIEndpoints[M]>>>>;
    /** A `...Pages` method's pages, each with the environment that answered it. */
    answer<M extends EndpointPagesMethods>(method: M, ...args: Parameters<AppStoreServerAPIEndpoints[M]>):
        AsyncIterableIterator<Answer<PageOf<ReturnType<AppStoreServerAPIEndpoints[M]>>>>;
    /**
     * An App Store Server API bearer token: an ES256 JWT with header alg, kid and typ JWT and claims iss, iat, exp,
     * aud "appstoreconnect-v1" and bid.
     *
     * Valid for 5 minutes from now. Refuses an ExternalSigner: use createBearerTokenAsync.
     * @cfunction appstore_signing_key_create_api_token
     */
    createBearerToken(): string;
    /**
     * An App Store Server API bearer token: an ES256 JWT with header alg, kid and typ JWT and claims iss, iat, exp,
     * aud "appstoreconnect-v1" and bid.
     *
     * createBearerToken on the libuv thread pool; works with an ExternalSigner.
     * @cfunction appstore_signing_key_create_api_token
     */
    createBearerTokenAsync(): Promise<string>;
    /** Frees the library's client and key now; later calls throw (with an ExternalSigner, calls still waiting for a
     *  signature fail with reason "signer_failed"). */
    close(): void;
}
/** The endpoint methods (generated). */
export interface AppStoreServerAPIClient extends AppStoreServerAPIEndpoints {}

/** Apple's PromotionalOfferSignatureCreator (StoreKit 1 promotional offer signature, base64 DER ECDSA). With an
 *  ExternalSigner as signingKey, use createSignatureAsync (createSignature refuses it); the same for the creators
 *  below. */
export declare class PromotionalOfferSignatureCreator {
    constructor(signingKey: SigningKey, keyId: string, bundleId: string);
    /**
     * A promotional offer signature v1 (StoreKit 1): the standard base64 DER ECDSA signature over the U+2063-joined
     * string of bundle id, key id, product id, offer id, lowercase application username (app account token),
     * lowercase nonce and timestamp (milliseconds since 1970).
     *
     * Apple's arguments: nonce a UUID, timestamp in milliseconds since 1970. A failure throws AppStoreServerError.
     * @cfunction appstore_signing_key_create_promotional_offer_v1
     */
    createSignature(productIdentifier: string, subscriptionOfferID: string, appAccountToken: string, nonce: string,
                    timestamp: number): string;
    /**
     * A promotional offer signature v1 (StoreKit 1): the standard base64 DER ECDSA signature over the U+2063-joined
     * string of bundle id, key id, product id, offer id, lowercase application username (app account token),
     * lowercase nonce and timestamp (milliseconds since 1970).
     *
     * createSignature on the libuv thread pool.
     * @cfunction appstore_signing_key_create_promotional_offer_v1
     */
    createSignatureAsync(productIdentifier: string, subscriptionOfferID: string, appAccountToken: string,
                         nonce: string, timestamp: number): Promise<string>;
    close(): void;
}

export declare class PromotionalOfferV2SignatureCreator {
    constructor(signingKey: SigningKey, keyId: string, issuerId: string, bundleId: string);
    /**
     * A promotional offer V2 JWS (aud "promotional-offer"): productId, offerIdentifier, and transactionId when one is
     * given. No exp; the nonce a lowercase UUID.
     *
     * Without transactionId: no transactionId claim.
     * @cfunction appstore_signing_key_create_promotional_offer_v2
     */
    createSignature(productId: string, offerIdentifier: string, transactionId?: string | undefined): string;
    /**
     * A promotional offer V2 JWS (aud "promotional-offer"): productId, offerIdentifier, and transactionId when one is
     * given. No exp; the nonce a lowercase UUID.
     *
     * createSignature on the libuv thread pool.
     * @cfunction appstore_signing_key_create_promotional_offer_v2
     */
    createSignatureAsync(productId: string, offerIdentifier: string, transactionId?: string | undefined): Promise<string>;
    /** The nonce of the next signature (as Apple's Java createNonce(); Apple's Node has none): undefined lets the
     *  library make a random UUID; a subclass may return its own UUID string, signed lowercase. */
    protected createNonce(): string | undefined;
    close(): void;
}

export declare class IntroductoryOfferEligibilitySignatureCreator {
    constructor(signingKey: SigningKey, keyId: string, issuerId: string, bundleId: string);
    /**
     * An introductory offer eligibility JWS (aud "introductory-offer-eligibility"): productId, allowIntroductoryOffer
     * (a JSON boolean) and transactionId, all required.
     * @cfunction appstore_signing_key_create_introductory_offer_eligibility
     */
    createSignature(productId: string, allowIntroductoryOffer: boolean, transactionId: string): string;
    /**
     * An introductory offer eligibility JWS (aud "introductory-offer-eligibility"): productId, allowIntroductoryOffer
     * (a JSON boolean) and transactionId, all required.
     *
     * createSignature on the libuv thread pool.
     * @cfunction appstore_signing_key_create_introductory_offer_eligibility
     */
    createSignatureAsync(productId: string, allowIntroductoryOffer: boolean, transactionId: string): Promise<string>;
    /** The nonce of the next signature (as Apple's Java createNonce(); Apple's Node has none): undefined lets the
     *  library make a random UUID; a subclass may return its own UUID string, signed lowercase. */
    protected createNonce(): string | undefined;
    close(): void;
}

export declare class AdvancedCommerceInAppSignatureCreator {
    constructor(signingKey: SigningKey, keyId: string, issuerId: string, bundleId: string);
    /**
     * An Advanced Commerce in-app request JWS (aud "advanced-commerce-api"). The request is one of the four in-app
     * request models, chosen by its "operation" (CREATE_ONE_TIME_CHARGE, CREATE_SUBSCRIPTION, MODIFY_SUBSCRIPTION,
     * REACTIVATE_SUBSCRIPTION); it is validated against Apple's limits (a failure names the field), re-encoded with
     * operation and version "1", and its standard base64 is the `request` claim. Keys the model does not know are
     * refused at every level (the message names the key path, e.g. "items[0].descripton"), so nothing given is
     * dropped silently; "version", when given, must be "1".
     *
     * The request: one of the four in-app request models, or its JSON object. A request the library refuses throws
     * AppStoreServerError naming the field.
     * @cfunction appstore_signing_key_create_advanced_commerce_in_app
     */
    createSignature(AdvancedCommerceInAppRequest: AbstractAdvancedCommerceInAppRequest | object): string;
    /**
     * An Advanced Commerce in-app request JWS (aud "advanced-commerce-api"). The request is one of the four in-app
     * request models, chosen by its "operation" (CREATE_ONE_TIME_CHARGE, CREATE_SUBSCRIPTION, MODIFY_SUBSCRIPTION,
     * REACTIVATE_SUBSCRIPTION); it is validated against Apple's limits (a failure names the field), re-encoded with
     * operation and version "1", and its standard base64 is the `request` claim. Keys the model does not know are
     * refused at every level (the message names the key path, e.g. "items[0].descripton"), so nothing given is
     * dropped silently; "version", when given, must be "1".
     *
     * createSignature on the libuv thread pool.
     * @cfunction appstore_signing_key_create_advanced_commerce_in_app
     */
    createSignatureAsync(AdvancedCommerceInAppRequest: AbstractAdvancedCommerceInAppRequest | object): Promise<string>;
    /** The nonce of the next signature (as Apple's Java createNonce(); Apple's Node has none): undefined lets the
     *  library make a random UUID; a subclass may return its own UUID string, signed lowercase. */
    protected createNonce(): string | undefined;
    close(): void;
}

/** Apple's ReceiptUtility (ids are read, not verified), plus every id of an app receipt. */
export declare class ReceiptUtility {
    /**
     * The first in-app transaction id of a base64 app receipt (PKCS#7, BER or DER, Xcode's extra OCTET STRING
     * wrapping included), as Apple's Python, Node and Java libraries return it: precisely the first attribute 1703
     * (transaction id) or 1705 (original transaction id) in encoding order, which in Apple's receipts is the
     * transaction id of the first in-app record. (Apple's Swift library returns the last such value instead.) The
     * signature is not checked.
     *
     * null when the receipt has no in-app purchases.
     * @cfunction appstore_receipt_extract_transaction_id
     */
    extractTransactionIdFromAppReceipt(appReceipt: string): string | null;
    /**
     * The transaction id of an old-style (iOS 6) transaction receipt: base64 text with "purchase-info" = "<base64>";
     * whose decoded text has "transaction-id" = "<id>"; (matched as Apple's libraries do; the first match wins).
     *
     * null when the receipt has no transaction id.
     * @cfunction appstore_transaction_receipt_extract_transaction_id
     */
    extractTransactionIdFromTransactionReceipt(transactionReceipt: string): string | null;
    /**
     * Every transaction id of a base64 app receipt, which no Apple library offers: transactionIds (attribute 1703 of
     * each in-app record, in receipt order), originalTransactionIds (the distinct 1705 values in order of first
     * appearance), inApp (one entry per record with its transactionId and originalTransactionId, each absent when the
     * record lacks it) and firstTransactionId (the first in-app transaction id, as the single-id extraction returns
     * it). A receipt without in-app records gives empty lists and no firstTransactionId. The signature is not
     * checked.
     * @cfunction appstore_receipt_extract_transaction_ids
     */
    extractTransactionIdsFromAppReceipt(appReceipt: string): AppReceiptTransactionIds;
}

/** App receipt verification (beyond Apple's libraries): PKCS#7 signature, chain to the roots, bundle id. */
export declare class ReceiptVerifier {
    constructor(rootCertificates: Uint8Array[], bundleId?: string | null);
    /**
     * Verifies a base64 app receipt, in order: the PKCS#7 SignedData structure and the receipt attributes (bounded
     * parse); the PKCS#7 signature over the content with the signer certificate's key (OpenSSL), which authenticates
     * the content; then the signer certificate's chain to a configured root, validated at the now-authenticated
     * creation date (attribute 12; at the current time when the receipt has none, and the output says so), exactly
     * signer <- intermediate <- root, with Apple's marker extensions (1.2.840.113635.100.6.11.1 on the signer,
     * 1.2.840.113635.100.6.2.1 on the intermediate); the documented fields; the bundle id. Signature first, so that
     * tampering with the signed content (the creation date included) is BAD_SIGNATURE, never EXPIRED. The result: the
     * receipt's documented fields (bundle id, versions, creation and expiration dates, the in-app records) and how it
     * was verified (the effective date and its source, the signer). Xcode (StoreKit testing) receipts are signed by a
     * local self-signed certificate and do not verify.
     *
     * Runs on the libuv thread pool; a receipt that does not verify rejects with VerificationException.
     * @cfunction appstore_receipt_verifier_verify
     */
    verify(appReceipt: string): Promise<VerifiedAppReceiptFields>;
    /**
     * Verifies a base64 app receipt, in order: the PKCS#7 SignedData structure and the receipt attributes (bounded
     * parse); the PKCS#7 signature over the content with the signer certificate's key (OpenSSL), which authenticates
     * the content; then the signer certificate's chain to a configured root, validated at the now-authenticated
     * creation date (attribute 12; at the current time when the receipt has none, and the output says so), exactly
     * signer <- intermediate <- root, with Apple's marker extensions (1.2.840.113635.100.6.11.1 on the signer,
     * 1.2.840.113635.100.6.2.1 on the intermediate); the documented fields; the bundle id. Signature first, so that
     * tampering with the signed content (the creation date included) is BAD_SIGNATURE, never EXPIRED. The result: the
     * receipt's documented fields (bundle id, versions, creation and expiration dates, the in-app records) and how it
     * was verified (the effective date and its source, the signer). Xcode (StoreKit testing) receipts are signed by a
     * local self-signed certificate and do not verify.
     *
     * Runs on the calling thread; a receipt that does not verify throws VerificationException.
     * @cfunction appstore_receipt_verifier_verify
     */
    verifySync(appReceipt: string): VerifiedAppReceiptFields;
    close(): void;
}

/** A point in time for the ledger's queries: a Date, or milliseconds since 1970. Omitted: now. */
export type LedgerInstant = Date | number;

/**
 * The purchase ledger (beyond Apple's libraries; docs/ledger.md): verified App Store data in, who is entitled to what
 * at any instant out, durably. Every value goes through the ledger's SignedDataVerifier; a refused one rejects with
 * its VerificationException and changes nothing. Opening, ingesting and the queries run on the libuv thread pool.
 */
export declare class Ledger {
    /** Internal (the library's handle): use Ledger.open(url, verifier). */
    constructor(handle: never, url: string, verifier: SignedDataVerifier);
    /**
     * Opens the ledger at a URL, creating it if needed: "sqlite:/path/to/ledger.db" (also "sqlite:///path"), or
     * "sqlite::memory:" (lives until the ledger is closed), or "postgresql://user@host:port/database" (also
     * "postgres://"; libpq's URI syntax and parameters, libpq loaded the first time such a URL is opened). The schema
     * is created or migrated; no stored event is read (each query reads the events of the subscription or customer it
     * asks about, by an index; docs/ledger.md, "Queries"). The URL parameter "cache_mib=N" (0...65536, default 32)
     * bounds the cache of those per-key states. Every value it records is verified with the given verifier.
     *
     * Runs on the libuv thread pool.
     * @cfunction appstore_ledger_open
     */
    static open(url: string, verifier: SignedDataVerifier): Promise<Ledger>;
    /**
     * Opens the ledger at a URL, creating it if needed: "sqlite:/path/to/ledger.db" (also "sqlite:///path"), or
     * "sqlite::memory:" (lives until the ledger is closed), or "postgresql://user@host:port/database" (also
     * "postgres://"; libpq's URI syntax and parameters, libpq loaded the first time such a URL is opened). The schema
     * is created or migrated; no stored event is read (each query reads the events of the subscription or customer it
     * asks about, by an index; docs/ledger.md, "Queries"). The URL parameter "cache_mib=N" (0...65536, default 32)
     * bounds the cache of those per-key states. Every value it records is verified with the given verifier.
     *
     * Ledger.open on the calling thread.
     * @cfunction appstore_ledger_open
     */
    static openSync(url: string, verifier: SignedDataVerifier): Ledger;
    /** The URL it was opened with. */
    readonly url: string;
    /** The verifier every ingested value goes through. */
    readonly verifier: SignedDataVerifier;
    /**
     * Verify and record one signed value: a notification (deep: its signedTransactionInfo and signedRenewalInfo too),
     * a transaction (from the app, Get Transaction History, Get Transaction Info, Get All Subscription Statuses) or a
     * renewal info (Get All Subscription Statuses). Done once the event is durable (committed with SQLite
     * synchronous=FULL, or by PostgreSQL). A value the verifier refuses fails with the verifier's status and reason
     * and changes nothing. The result says what happened: "stored" is false when the same payload was already there,
     * and for a notification with data.status, "appleStatus", "engineStatus" and "agrees" (the ledger's status at its
     * signedDate), and "verdict": AGREES, INCOMPLETE_HISTORY (the ledger lacks facts before it: "missing" says which;
     * a catch-up fills them) or CONTRADICTION (the facts it decided from, the notification's own transaction,
     * disagree with data.status).
     *
     * A notification's signedPayload; resolves once it is durable.
     * @cfunction appstore_ledger_ingest_notification
     */
    ingestNotification(signedPayload: string | Uint8Array): Promise<LedgerIngestResult>;
    /**
     * Verify and record one signed value: a notification (deep: its signedTransactionInfo and signedRenewalInfo too),
     * a transaction (from the app, Get Transaction History, Get Transaction Info, Get All Subscription Statuses) or a
     * renewal info (Get All Subscription Statuses). Done once the event is durable (committed with SQLite
     * synchronous=FULL, or by PostgreSQL). A value the verifier refuses fails with the verifier's status and reason
     * and changes nothing. The result says what happened: "stored" is false when the same payload was already there,
     * and for a notification with data.status, "appleStatus", "engineStatus" and "agrees" (the ledger's status at its
     * signedDate), and "verdict": AGREES, INCOMPLETE_HISTORY (the ledger lacks facts before it: "missing" says which;
     * a catch-up fills them) or CONTRADICTION (the facts it decided from, the notification's own transaction,
     * disagree with data.status).
     *
     * A signed transaction; resolves once it is durable.
     * @cfunction appstore_ledger_ingest_transaction
     */
    ingestTransaction(signedTransaction: string | Uint8Array): Promise<LedgerIngestResult>;
    /**
     * Verify and record one signed value: a notification (deep: its signedTransactionInfo and signedRenewalInfo too),
     * a transaction (from the app, Get Transaction History, Get Transaction Info, Get All Subscription Statuses) or a
     * renewal info (Get All Subscription Statuses). Done once the event is durable (committed with SQLite
     * synchronous=FULL, or by PostgreSQL). A value the verifier refuses fails with the verifier's status and reason
     * and changes nothing. The result says what happened: "stored" is false when the same payload was already there,
     * and for a notification with data.status, "appleStatus", "engineStatus" and "agrees" (the ledger's status at its
     * signedDate), and "verdict": AGREES, INCOMPLETE_HISTORY (the ledger lacks facts before it: "missing" says which;
     * a catch-up fills them) or CONTRADICTION (the facts it decided from, the notification's own transaction,
     * disagree with data.status).
     *
     * A signed renewal info; resolves once it is durable.
     * @cfunction appstore_ledger_ingest_renewal_info
     */
    ingestRenewalInfo(signedRenewalInfo: string | Uint8Array): Promise<LedgerIngestResult>;
    /**
     * One subscription (its originalTransactionId) at an instant: Apple's status (1-5), product, expiry, grace
     * period, auto-renew state, pending product, upgrade, offer, family sharing, revocation. No subscription when the
     * ledger knew nothing of it.
     *
     * No subscription: null.
     * @cfunction appstore_ledger_query_subscription
     */
    subscription(originalTransactionId: string, at?: LedgerInstant | null, asOf?: LedgerInstant | null): Promise<LedgerSubscription | null>;
    /**
     * One customer (an appAccountToken, in any case; or the originalTransactionId of purchases without one) at an
     * instant: the products they are entitled to, each with why and until when, their subscriptions, their one-time
     * purchases, and consumables bought and refunded. An unknown customer has empty lists.
     * @cfunction appstore_ledger_query_customer
     */
    customer(customerId: string, at?: LedgerInstant | null, asOf?: LedgerInstant | null): Promise<LedgerCustomer>;
    /**
     * Counts, and the oracle: the notifications whose data.status the ledger does not reproduce at their signedDate,
     * each with its verdict: INCOMPLETE_HISTORY (the ledger lacks facts before it; "missing" says which, a catch-up
     * fills them) or CONTRADICTION (the signed facts the ledger decided from disagree with data.status).
     * "contradictions" and "incompleteHistories" count them all; "disagreements" lists at most 1,000, every
     * CONTRADICTION first, then INCOMPLETE_HISTORY, each by signedDate (a fresh ledger's backlog of first renewals
     * never hides a contradiction, and the answer stays small at any size).
     * @cfunction appstore_ledger_query_summary
     */
    summary(): Promise<LedgerSummary>;
    /**
     * Every disagreement of the oracle, a page at a time, in the summary's order (every CONTRADICTION first, then
     * INCOMPLETE_HISTORY, each by signedDate, then notificationUUID), read along an index: a page costs its own rows
     * at any size. A page holds at most the limit asked for (1 to 10,000) after the cursor given (the "next" of the
     * previous page, opaque), and "next", absent after the last page. A verdict that changes between two pages (a
     * catch-up turns an INCOMPLETE_HISTORY into AGREES) is listed at most once.
     * @cfunction appstore_ledger_query_disagreements
     */
    disagreements(after?: string | null, limit?: number): Promise<LedgerDisagreementPage>;
    /**
     * The ledger's subscription ids (originalTransactionIds of auto-renewable subscriptions), a page at a time in the
     * database's order, read along an index: a page costs its own rows at any size and nothing is held between pages
     * (a sweep over every subscription, as `sync` makes). A page holds at most the limit asked for (1 to 10,000) of
     * the ids after the cursor given (the "next" of the previous page: its last id), and "next", absent after the
     * last page.
     * @cfunction appstore_ledger_query_subscription_ids
     */
    subscriptionIds(after?: string | null, limit?: number): Promise<LedgerIdPage>;
    /**
     * The ledger's customer ids (appAccountTokens in lowercase, else originalTransactionIds), a page at a time, as
     * the subscription ids are.
     * @cfunction appstore_ledger_query_customer_ids
     */
    customerIds(after?: string | null, limit?: number): Promise<LedgerIdPage>;
    /**
     * Verifies every stored value again with the ledger's verifier (the one it was opened with): how many were
     * checked and the ones it refuses now, each with the verifier's status, reason and message. With online checks
     * on, a certificate revoked since the value was stored is found; without them, the answer does not change with
     * time. Stored values are not verified when the ledger is opened (they were before they were stored): this is the
     * check. Nothing is changed.
     * @cfunction appstore_ledger_reverify
     */
    reverify(): Promise<LedgerReverifyResult>;
    /**
     * Imports a file of JSON lines of signed values (a backfill, a migration from another system; docs/ledger.md,
     * "Bulk import"): each line {"notification": JWS}, {"signedPayload": JWS} (a notification body as Apple posts
     * it), {"transaction": JWS}, {"renewalInfo": JWS}, or a bare JWS (a notification); empty lines are skipped.
     * Values are verified on every core, outside the ledger's lock, and committed `batch_size` lines per transaction
     * (0: 1000). A value whose payload and signature are already stored is counted "alreadyPresent" without being
     * verified again, so running the same file again after an interruption stores what is missing and nothing twice.
     * @cfunction appstore_ledger_import_jsonl
     */
    importJsonl(path: string, batchSize?: number): Promise<LedgerImportResult>;
    /**
     * Exports every stored value of the ledger's identity as the JSON lines the bulk import reads (a backup, a move
     * to another store, a hand-over to another system; docs/ledger.md, "Export"): one line per value, in the order
     * stored, {"notification": JWS}, {"transaction": JWS} or {"renewalInfo": JWS}, each JWS byte for byte as it was
     * ingested, so it can be verified again.
     * @cfunction appstore_ledger_export_jsonl
     */
    exportJsonl(path: string): Promise<LedgerExportResult>;
    /**
     * Closes the database and frees the ledger.
     *
     * Calls in flight complete first; later calls reject.
     * @cfunction appstore_ledger_free
     */
    close(): void;
}
