#ifndef CHORUS_CAESGCM_H
#define CHORUS_CAESGCM_H

#include <stddef.h>
#include <stdint.h>

/// AEAD_AES_128_GCM for SRTP's per-packet path without OpenSSL 3's EVP parameter handling.
///
/// Why: through EVP, setting a packet's nonce (`EVP_EncryptInit_ex`) and reading its tag
/// (`EVP_CIPHER_CTX_ctrl`) look parameters up by string on every call (openssl/openssl#20171):
/// protecting a listener's audio packet took about 4,370 instructions through EVP, about 2,360
/// through this (callgrind, `TickProfile`, a room of 1,000). Here GCM itself is
/// OpenSSL's (`CRYPTO_gcm128_*`, with its CLMUL/AVX GHASH); only the AES-128 block function it
/// is handed is ours, written with the AES-NI instructions (constant time, no tables).
///
/// Available on x86-64 CPUs with AES-NI and PCLMULQDQ; elsewhere `chorus_aes128gcm_new`
/// returns NULL and the caller keeps EVP. One key per object; not thread-safe (one owner).
typedef struct chorus_aes128gcm chorus_aes128gcm;

/// Whether this CPU runs the AES-NI path (checked once with CPUID).
int chorus_aes128gcm_available(void);

/// A GCM context keyed with the 16-byte `key`; NULL when unavailable or out of memory.
chorus_aes128gcm *chorus_aes128gcm_new(const uint8_t key[16]);

/// Wipes the key schedule and GCM state and frees them.
void chorus_aes128gcm_free(chorus_aes128gcm *gcm);

/// Encrypts `count` bytes at `body` in place and writes the 16-byte tag to `tag`, with the
/// 12-byte nonce `iv` and AAD `aad[0..<aad_length]` followed by `aad2[0..<aad2_length]` (SRTCP's
/// E‖index word; `aad2` may be NULL when its length is 0). Returns 1 on success.
int chorus_aes128gcm_seal(chorus_aes128gcm *gcm, const uint8_t iv[12],
                          const uint8_t *aad, size_t aad_length,
                          const uint8_t *aad2, size_t aad2_length,
                          uint8_t *body, size_t count, uint8_t tag[16]);

/// Verifies `tag` (constant-time compare) and decrypts `count` bytes at `body` in place.
/// Returns 1 when authentic; 0 when the tag does not match, and then the decrypted bytes are
/// wiped (unauthenticated plaintext is never handed out); -1 on an internal failure.
int chorus_aes128gcm_open(chorus_aes128gcm *gcm, const uint8_t iv[12],
                          const uint8_t *aad, size_t aad_length,
                          const uint8_t *aad2, size_t aad2_length,
                          uint8_t *body, size_t count, const uint8_t tag[16]);

#endif
