/*
 * offer_signature: sign a promotional offer for StoreKit 2 (Promotional Offer V2 signature, a JWS your app passes
 * to StoreKit) and print it.
 *
 *   APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" offer_signature \
 *       --key-id ABC123DEFG --issuer-id 57246542-... --bundle-id com.example.app com.example.monthly WINBACK
 *
 * --transaction-id ID: the customer's transaction id, when the offer is for one customer. The same key signs the
 * other signatures (appstore_signing_key_create_promotional_offer_v1 for StoreKit 1,
 * _create_introductory_offer_eligibility, _create_advanced_commerce_in_app, _create_api_token).
 */
#include <appstoreserver.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *to) {
    fprintf(to, "usage: offer_signature PRODUCT_ID OFFER_ID --key-id ID --issuer-id ID --bundle-id ID "
                "[--transaction-id ID]\n");
    return to == stdout ? 0 : 2;
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"key-id", required_argument, 0, 'k'}, {"issuer-id", required_argument, 0, 'i'},
        {"bundle-id", required_argument, 0, 'b'}, {"transaction-id", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *key_id = NULL, *issuer_id = NULL, *bundle_id = NULL, *transaction_id = NULL;
    for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
        if (c == 'k') key_id = optarg;
        else if (c == 'i') issuer_id = optarg;
        else if (c == 'b') bundle_id = optarg;
        else if (c == 't') transaction_id = optarg;
        else return usage(c == 'h' ? stdout : stderr);
    }
    const char *pem = getenv("APPSTORE_PRIVATE_KEY"); /* the .p8 text; never put a key on a command line */
    if (optind != argc - 2 || !key_id || !issuer_id || !bundle_id || !pem) return usage(stderr);

    appstore_signing_key *key = NULL;
    appstore_error *err = NULL;
    char *jws = NULL;
    if (appstore_signing_key_new(pem, strlen(pem), key_id, issuer_id, bundle_id, &key, &err) != APPSTORE_OK ||
        appstore_signing_key_create_promotional_offer_v2(key, argv[optind], argv[optind + 1], transaction_id, NULL, &jws,
                                                         &err) != APPSTORE_OK) {
        fprintf(stderr, "offer_signature: %s (%s): %s\n", appstore_status_name(appstore_error_status(err)),
                appstore_reason_name(appstore_error_reason(err)), appstore_error_message(err));
        appstore_error_free(err);
        appstore_signing_key_free(key);
        return 1;
    }
    printf("%s\n", jws);
    appstore_string_free(jws);
    appstore_signing_key_free(key);
    return 0;
}
