// AES-128 with the AES-NI instructions, handed to OpenSSL's GCM mode (CRYPTO_gcm128_*), for
// SRTP's AEAD_AES_128_GCM. See caesgcm.h for why this exists instead of EVP.
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/modes.h>

#include "caesgcm.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#define CHORUS_AESNI __attribute__((target("aes,sse4.1")))

struct chorus_aes128gcm {
    /// FIPS 197 §5.2: the 11 round keys of AES-128. First, so the aligned allocation aligns it.
    __m128i round_keys[11];
    GCM128_CONTEXT *gcm;
};

int chorus_aes128gcm_available(void) {
    // Asked once per key, not per packet, so no cached answer (and no shared state) is needed.
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    // CPUID.1:ECX bit 25 AES, bit 1 PCLMULQDQ (OpenSSL's fast GHASH), bit 19 SSE4.1.
    return (ecx & (1u << 25)) && (ecx & (1u << 1)) && (ecx & (1u << 19));
}

// One step of the AES-128 key expansion: the previous round key's words XORed cumulatively,
// then with SubWord(RotWord(w3)) ^ Rcon, which AESKEYGENASSIST leaves in the top word.
CHORUS_AESNI static __m128i chorus_expand_step(__m128i key, __m128i assist) {
    assist = _mm_shuffle_epi32(assist, 0xff);
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    return _mm_xor_si128(key, assist);
}

#define CHORUS_EXPAND(i, rcon) \
    k[i] = chorus_expand_step(k[i - 1], _mm_aeskeygenassist_si128(k[i - 1], rcon))

CHORUS_AESNI static void chorus_aes128_expand(__m128i k[11], const uint8_t key[16]) {
    k[0] = _mm_loadu_si128((const __m128i *)key);
    CHORUS_EXPAND(1, 0x01); CHORUS_EXPAND(2, 0x02); CHORUS_EXPAND(3, 0x04); CHORUS_EXPAND(4, 0x08);
    CHORUS_EXPAND(5, 0x10); CHORUS_EXPAND(6, 0x20); CHORUS_EXPAND(7, 0x40); CHORUS_EXPAND(8, 0x80);
    CHORUS_EXPAND(9, 0x1b); CHORUS_EXPAND(10, 0x36);
}

CHORUS_AESNI static inline __m128i chorus_aes128_rounds(__m128i block, const __m128i k[11]) {
    block = _mm_xor_si128(block, k[0]);
    for (int round = 1; round < 10; round++) block = _mm_aesenc_si128(block, k[round]);
    return _mm_aesenclast_si128(block, k[10]);
}

/// GCM's block128_f: one block (the hash key H and the tag mask E(K, Y0)).
CHORUS_AESNI static void chorus_aes128_block(const unsigned char in[16], unsigned char out[16], const void *key) {
    const __m128i *k = key;
    _mm_storeu_si128((__m128i *)out, chorus_aes128_rounds(_mm_loadu_si128((const __m128i *)in), k));
}

/// GCM's ctr128_f: `blocks` blocks of counter mode from `ivec`, whose last 32 bits are a
/// big-endian counter that wraps without carrying (NIST SP 800-38D inc32). Four blocks at a
/// time keep the AES unit's pipeline full. Each group is read before it is written, so
/// in-place use is safe.
CHORUS_AESNI static void chorus_aes128_ctr32(const unsigned char *in, unsigned char *out, size_t blocks,
                                            const void *key, const unsigned char ivec[16]) {
    const __m128i *k = key;
    const __m128i base = _mm_loadu_si128((const __m128i *)ivec);
    uint32_t counter = ((uint32_t)ivec[12] << 24) | ((uint32_t)ivec[13] << 16) | ((uint32_t)ivec[14] << 8) | ivec[15];
    while (blocks > 0) {
        size_t group = blocks < 4 ? blocks : 4;
        __m128i stream[4];
        for (size_t i = 0; i < group; i++) {
            uint32_t value = counter + (uint32_t)i;
            stream[i] = _mm_insert_epi32(base, (int)__builtin_bswap32(value), 3);
        }
        for (size_t i = 0; i < group; i++) stream[i] = _mm_xor_si128(stream[i], k[0]);
        for (int round = 1; round < 10; round++)
            for (size_t i = 0; i < group; i++) stream[i] = _mm_aesenc_si128(stream[i], k[round]);
        for (size_t i = 0; i < group; i++) {
            __m128i pad = _mm_aesenclast_si128(stream[i], k[10]);
            __m128i data = _mm_loadu_si128((const __m128i *)(in + 16 * i));
            _mm_storeu_si128((__m128i *)(out + 16 * i), _mm_xor_si128(data, pad));
        }
        counter += (uint32_t)group;
        in += 16 * group;
        out += 16 * group;
        blocks -= group;
    }
}

chorus_aes128gcm *chorus_aes128gcm_new(const uint8_t key[16]) {
    if (!chorus_aes128gcm_available()) return NULL;
    chorus_aes128gcm *gcm = aligned_alloc(16, (sizeof(chorus_aes128gcm) + 15) & ~(size_t)15);
    if (gcm == NULL) return NULL;
    chorus_aes128_expand(gcm->round_keys, key);
    gcm->gcm = CRYPTO_gcm128_new(gcm->round_keys, chorus_aes128_block);
    if (gcm->gcm == NULL) {
        OPENSSL_cleanse(gcm->round_keys, sizeof(gcm->round_keys));
        free(gcm);
        return NULL;
    }
    return gcm;
}

void chorus_aes128gcm_free(chorus_aes128gcm *gcm) {
    if (gcm == NULL) return;
    CRYPTO_gcm128_release(gcm->gcm);  // wipes H, Xi and the other state before freeing
    OPENSSL_cleanse(gcm->round_keys, sizeof(gcm->round_keys));
    free(gcm);
}

// Nonce, then both AADs. CRYPTO_gcm128_setiv resets the lengths and the hash for each packet.
static int chorus_aes128gcm_start(chorus_aes128gcm *gcm, const uint8_t iv[12], const uint8_t *aad,
                                  size_t aad_length, const uint8_t *aad2, size_t aad2_length) {
    CRYPTO_gcm128_setiv(gcm->gcm, iv, 12);
    if (aad_length > 0 && CRYPTO_gcm128_aad(gcm->gcm, aad, aad_length) != 0) return 0;
    if (aad2_length > 0 && CRYPTO_gcm128_aad(gcm->gcm, aad2, aad2_length) != 0) return 0;
    return 1;
}

int chorus_aes128gcm_seal(chorus_aes128gcm *gcm, const uint8_t iv[12], const uint8_t *aad, size_t aad_length,
                          const uint8_t *aad2, size_t aad2_length, uint8_t *body, size_t count, uint8_t tag[16]) {
    if (!chorus_aes128gcm_start(gcm, iv, aad, aad_length, aad2, aad2_length)) return 0;
    if (count > 0 && CRYPTO_gcm128_encrypt_ctr32(gcm->gcm, body, body, count, chorus_aes128_ctr32) != 0) return 0;
    CRYPTO_gcm128_tag(gcm->gcm, tag, 16);
    return 1;
}

int chorus_aes128gcm_open(chorus_aes128gcm *gcm, const uint8_t iv[12], const uint8_t *aad, size_t aad_length,
                          const uint8_t *aad2, size_t aad2_length, uint8_t *body, size_t count,
                          const uint8_t tag[16]) {
    if (!chorus_aes128gcm_start(gcm, iv, aad, aad_length, aad2, aad2_length)) return -1;
    if (count > 0 && CRYPTO_gcm128_decrypt_ctr32(gcm->gcm, body, body, count, chorus_aes128_ctr32) != 0) return -1;
    if (CRYPTO_gcm128_finish(gcm->gcm, tag, 16) == 0) return 1;  // CRYPTO_memcmp inside
    if (count > 0) OPENSSL_cleanse(body, count);
    return 0;
}

#else  // not x86-64: EVP stays the only path

int chorus_aes128gcm_available(void) { return 0; }
chorus_aes128gcm *chorus_aes128gcm_new(const uint8_t key[16]) { (void)key; return NULL; }
void chorus_aes128gcm_free(chorus_aes128gcm *gcm) { (void)gcm; }
int chorus_aes128gcm_seal(chorus_aes128gcm *gcm, const uint8_t iv[12], const uint8_t *aad, size_t aad_length,
                          const uint8_t *aad2, size_t aad2_length, uint8_t *body, size_t count, uint8_t tag[16]) {
    (void)gcm; (void)iv; (void)aad; (void)aad_length; (void)aad2; (void)aad2_length;
    (void)body; (void)count; (void)tag;
    return 0;
}
int chorus_aes128gcm_open(chorus_aes128gcm *gcm, const uint8_t iv[12], const uint8_t *aad, size_t aad_length,
                          const uint8_t *aad2, size_t aad2_length, uint8_t *body, size_t count,
                          const uint8_t tag[16]) {
    (void)gcm; (void)iv; (void)aad; (void)aad_length; (void)aad2; (void)aad2_length;
    (void)body; (void)count; (void)tag;
    return -1;
}

#endif
