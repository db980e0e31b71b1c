// Umbrella header for OpenSSL. Function-like macros and variadic functions do not import into
// Swift, so the few Chorus needs are wrapped here as static inline functions.
#ifndef CHORUS_COPENSSL_SHIM_H
#define CHORUS_COPENSSL_SHIM_H

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/asn1.h>

// --- DTLS helpers: macros and variadics that Swift cannot call directly ---

/// A fresh ECDSA P-256 key (EVP_EC_gen is a variadic macro).
static inline EVP_PKEY *chorus_generate_p256_key(void) {
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, NULL);
    if (ctx == NULL) return NULL;
    if (EVP_PKEY_keygen_init(ctx) <= 0
        || EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) <= 0
        || EVP_PKEY_keygen(ctx, &pkey) <= 0) {
        pkey = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

static inline void chorus_bio_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }
static inline void chorus_bio_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }
static inline long chorus_ssl_ctx_set_min_dtls12(SSL_CTX *ctx) {
    return SSL_CTX_set_min_proto_version(ctx, DTLS1_2_VERSION);
}
static inline void chorus_ssl_set_mtu(SSL *ssl, long mtu) {
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    DTLS_set_link_mtu(ssl, mtu);
}
static inline long chorus_dtls_get_timeout(SSL *ssl, struct timeval *tv) { return DTLSv1_get_timeout(ssl, tv); }
static inline long chorus_dtls_handle_timeout(SSL *ssl) { return DTLSv1_handle_timeout(ssl); }
static inline int chorus_ssl_ctx_set_ecdh_auto(SSL_CTX *ctx) { return (int)SSL_CTX_set_ecdh_auto(ctx, 1); }

#endif
