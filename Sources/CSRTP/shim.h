// libsrtp2 (Debian's libsrtp2-dev). srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80 is a macro,
// so it is wrapped; the rest imports as is.
#ifndef CHORUS_CSRTP_SHIM_H
#define CHORUS_CSRTP_SHIM_H
#include <srtp2/srtp.h>

static inline void chorus_srtp_policy_aes_cm_128_hmac_sha1_80(srtp_crypto_policy_t *p) {
    srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(p);
}
static inline int chorus_srtp_max_trailer_len(void) { return SRTP_MAX_TRAILER_LEN; }
#endif
