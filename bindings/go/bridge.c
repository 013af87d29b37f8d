/* The C side of the Go callbacks (a file of its own: cgo allows no C definitions in a file with //export). Each shim
 * has the exact callback type of appstoreserver.h and forwards to the exported Go function. */
#include <appstoreserver.h>
#include "_cgo_export.h"

static int32_t transport_shim(void *user_data, const char *method, const char *url, const char *headers,
                              size_t headers_len, const uint8_t *body, size_t body_len, uint32_t timeout_ms,
                              appstore_http_response *response) {
    return appstoreGoTransport(user_data, (char *)method, (char *)url, (char *)headers, headers_len, (uint8_t *)body,
                               body_len, timeout_ms, response);
}

appstore_status appstore_go_transport_new(void *user_data, appstore_transport **out, appstore_error **err) {
    return appstore_transport_new(transport_shim, user_data, out, err);
}

static int32_t signer_shim(void *user_data, const uint8_t *message, size_t message_len, const uint8_t *digest,
                           uint8_t *signature, size_t signature_cap, size_t *signature_len, uint32_t timeout_ms) {
    return appstoreGoSign(user_data, (uint8_t *)message, message_len, (uint8_t *)digest, signature, signature_cap,
                          signature_len, timeout_ms);
}

appstore_status appstore_go_signing_key_new_with_signer(void *user_data, const uint8_t *public_key,
                                                        size_t public_key_len, uint32_t timeout_ms, const char *key_id,
                                                        const char *issuer_id, const char *bundle_id,
                                                        appstore_signing_key **key_out, appstore_error **err_out) {
    return appstore_signing_key_new_with_signer(signer_shim, user_data, public_key, public_key_len, timeout_ms, key_id,
                                                issuer_id, bundle_id, key_out, err_out);
}
