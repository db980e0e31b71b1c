// libopus (Debian's libopus-dev, 1.3.x). opus_encoder_ctl/opus_decoder_ctl are variadic and the
// OPUS_SET_* request macros are function-like, so neither imports into Swift: each request the
// AudioMixer uses is wrapped here in a typed static inline function. All return an OPUS_* code
// (OPUS_OK == 0), except where a value is returned through a pointer.
#ifndef CHORUS_COPUS_SHIM_H
#define CHORUS_COPUS_SHIM_H
#include <opus/opus.h>
#include <string.h>

// MARK: Encoder requests
static inline int chorus_opus_encoder_set_bitrate(OpusEncoder *st, opus_int32 bitsPerSecond) {
    return opus_encoder_ctl(st, OPUS_SET_BITRATE(bitsPerSecond));
}
static inline int chorus_opus_encoder_get_bitrate(OpusEncoder *st, opus_int32 *bitsPerSecond) {
    return opus_encoder_ctl(st, OPUS_GET_BITRATE(bitsPerSecond));
}
static inline int chorus_opus_encoder_set_complexity(OpusEncoder *st, opus_int32 complexity) {
    return opus_encoder_ctl(st, OPUS_SET_COMPLEXITY(complexity));
}
static inline int chorus_opus_encoder_set_inband_fec(OpusEncoder *st, opus_int32 enabled) {
    return opus_encoder_ctl(st, OPUS_SET_INBAND_FEC(enabled));
}
static inline int chorus_opus_encoder_set_packet_loss_perc(OpusEncoder *st, opus_int32 percent) {
    return opus_encoder_ctl(st, OPUS_SET_PACKET_LOSS_PERC(percent));
}
static inline int chorus_opus_encoder_set_dtx(OpusEncoder *st, opus_int32 enabled) {
    return opus_encoder_ctl(st, OPUS_SET_DTX(enabled));
}
/// OPUS_SIGNAL_VOICE, OPUS_SIGNAL_MUSIC or OPUS_AUTO.
static inline int chorus_opus_encoder_set_signal(OpusEncoder *st, opus_int32 signal) {
    return opus_encoder_ctl(st, OPUS_SET_SIGNAL(signal));
}
/// OPUS_APPLICATION_VOIP, OPUS_APPLICATION_AUDIO or OPUS_APPLICATION_RESTRICTED_LOWDELAY.
static inline int chorus_opus_encoder_set_application(OpusEncoder *st, opus_int32 application) {
    return opus_encoder_ctl(st, OPUS_SET_APPLICATION(application));
}
static inline int chorus_opus_encoder_set_vbr(OpusEncoder *st, opus_int32 enabled) {
    return opus_encoder_ctl(st, OPUS_SET_VBR(enabled));
}
/// OPUS_BANDWIDTH_NARROWBAND … OPUS_BANDWIDTH_FULLBAND.
static inline int chorus_opus_encoder_set_max_bandwidth(OpusEncoder *st, opus_int32 bandwidth) {
    return opus_encoder_ctl(st, OPUS_SET_MAX_BANDWIDTH(bandwidth));
}
static inline int chorus_opus_encoder_get_lookahead(OpusEncoder *st, opus_int32 *samples) {
    return opus_encoder_ctl(st, OPUS_GET_LOOKAHEAD(samples));
}
static inline int chorus_opus_encoder_get_in_dtx(OpusEncoder *st, opus_int32 *inDTX) {
    return opus_encoder_ctl(st, OPUS_GET_IN_DTX(inDTX));
}
static inline int chorus_opus_encoder_get_final_range(OpusEncoder *st, opus_uint32 *range) {
    return opus_encoder_ctl(st, OPUS_GET_FINAL_RANGE(range));
}
static inline int chorus_opus_encoder_reset_state(OpusEncoder *st) {
    return opus_encoder_ctl(st, OPUS_RESET_STATE);
}
/// Makes `destination` a copy of `source` (signal history and settings). libopus documents the
/// encoder state as one position-independent block that can be copied; both must have been
/// created by opus_encoder_create with the same channel count, which allocates
/// opus_encoder_get_size(channels) bytes whatever the application.
static inline void chorus_opus_encoder_copy_state(OpusEncoder *destination, const OpusEncoder *source, int channels) {
    memcpy(destination, source, (size_t)opus_encoder_get_size(channels));
}

// MARK: Decoder requests
static inline int chorus_opus_decoder_reset_state(OpusDecoder *st) {
    return opus_decoder_ctl(st, OPUS_RESET_STATE);
}
static inline int chorus_opus_decoder_get_last_packet_duration(OpusDecoder *st, opus_int32 *samples) {
    return opus_decoder_ctl(st, OPUS_GET_LAST_PACKET_DURATION(samples));
}
static inline int chorus_opus_decoder_get_final_range(OpusDecoder *st, opus_uint32 *range) {
    return opus_decoder_ctl(st, OPUS_GET_FINAL_RANGE(range));
}
static inline int chorus_opus_decoder_set_gain(OpusDecoder *st, opus_int32 q8dB) {
    return opus_decoder_ctl(st, OPUS_SET_GAIN(q8dB));
}
#endif
