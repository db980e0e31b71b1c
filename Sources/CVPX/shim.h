// libvpx (Debian's libvpx-dev, 1.12). vpx_codec_enc_init and vpx_codec_control are function-like
// macros, and the encoder's output is a tagged union: the load generator's VP8 encoder uses these
// typed static inline wrappers instead.
#ifndef CHORUS_CVPX_SHIM_H
#define CHORUS_CVPX_SHIM_H
#include <vpx/vpx_encoder.h>
#include <vpx/vp8cx.h>

/// The VP8 encoder's defaults (then adjusted by the caller before init).
static inline vpx_codec_err_t chorus_vpx_vp8_default_config(vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
}
static inline vpx_codec_err_t chorus_vpx_vp8_encoder_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, 0);
}
/// VP8E_SET_CPUUSED: -16…16; higher is faster (realtime uses 4…16).
static inline vpx_codec_err_t chorus_vpx_set_cpu_used(vpx_codec_ctx_t *ctx, int value) {
    return vpx_codec_control(ctx, VP8E_SET_CPUUSED, value);
}
/// The next compressed frame of the last encode call, or 0 when there is none.
static inline int chorus_vpx_next_frame(vpx_codec_ctx_t *ctx, vpx_codec_iter_t *iter, const void **data,
                                        size_t *size, int *isKeyFrame) {
    const vpx_codec_cx_pkt_t *pkt;
    while ((pkt = vpx_codec_get_cx_data(ctx, iter)) != NULL) {
        if (pkt->kind == VPX_CODEC_CX_FRAME_PKT) {
            *data = pkt->data.frame.buf;
            *size = pkt->data.frame.sz;
            *isKeyFrame = (pkt->data.frame.flags & VPX_FRAME_IS_KEY) != 0;
            return 1;
        }
    }
    return 0;
}
/// VPX_DL_REALTIME is a cast constant in some versions.
static inline unsigned long chorus_vpx_deadline_realtime(void) { return VPX_DL_REALTIME; }
#endif
