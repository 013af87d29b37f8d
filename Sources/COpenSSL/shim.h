/* OpenSSL headers for Swift, plus wrappers for the function-like macros Swift cannot import. */
#ifndef APPSTORE_COPENSSL_SHIM_H
#define APPSTORE_COPENSSL_SHIM_H
/* OpenSSL's allocation macros (OPENSSL_free below) pass __FILE__ to CRYPTO_free, which would put this header's
 * absolute build path into the libraries; what OPENSSL_NO_FILENAMES does, without changing anything else. */
#ifndef OPENSSL_FILE
#define OPENSSL_FILE ""
#define OPENSSL_LINE 0
#endif
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <openssl/core_names.h>

static inline void appstore_shim_openssl_free(void *p) { OPENSSL_free(p); }
static inline long appstore_shim_bio_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline STACK_OF(X509) *appstore_shim_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int appstore_shim_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline void appstore_shim_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
static inline int appstore_shim_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *appstore_shim_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
/* PKCS#7 SignedData (app receipts): type check, signer count and the certificates it carries (borrowed). */
static inline int appstore_shim_pkcs7_is_signed(PKCS7 *p7) { return p7 != NULL && PKCS7_type_is_signed(p7); }
static inline int appstore_shim_pkcs7_signer_count(PKCS7 *p7) {
    STACK_OF(PKCS7_SIGNER_INFO) *s = PKCS7_get_signer_info(p7);
    return s ? sk_PKCS7_SIGNER_INFO_num(s) : 0;
}
static inline STACK_OF(X509) *appstore_shim_pkcs7_certificates(PKCS7 *p7) {
    return appstore_shim_pkcs7_is_signed(p7) && p7->d.sign != NULL ? p7->d.sign->cert : NULL;
}
/* The OCSP responder URLs of a certificate (X509_get1_ocsp, freed with X509_email_free). */
static inline int appstore_shim_sk_OPENSSL_STRING_num(const STACK_OF(OPENSSL_STRING) *sk) { return sk_OPENSSL_STRING_num(sk); }
static inline const char *appstore_shim_sk_OPENSSL_STRING_value(const STACK_OF(OPENSSL_STRING) *sk, int i) {
    return sk_OPENSSL_STRING_value(sk, i);
}
/* Not OpenSSL, but C that Swift cannot write: the process's malloc in-use bytes for leak checks
 * (appstore_debug_malloc_in_use; a struct returned by value from a function looked up at run time). mallinfo2 is
 * glibc >= 2.33, so it is found with dlsym (the libraries link against glibc 2.28's symbols); mallinfo's int fields
 * are the fallback. -1 where neither exists. */
#include <dlfcn.h>
#include <malloc.h>
static inline long long appstore_shim_malloc_in_use(void) {
    void *v2 = dlsym((void *)0 /* RTLD_DEFAULT */, "mallinfo2");
    if (v2) {
        struct mallinfo2 m = ((struct mallinfo2 (*)(void))v2)();
        return (long long)(m.uordblks + m.hblkhd);
    }
    void *v1 = dlsym((void *)0, "mallinfo");
    if (v1) {
        struct mallinfo m = ((struct mallinfo (*)(void))v1)();
        return (long long)(unsigned)m.uordblks + (long long)(unsigned)m.hblkhd;
    }
    return -1;
}

#endif
