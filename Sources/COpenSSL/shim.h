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

#endif
