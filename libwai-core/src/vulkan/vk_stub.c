/* The Vulkan backend of a build without Vulkan (meson option vulkan=disabled, or no libvulkan /
 * glslc found): opening a device fails with WAI_ERR_NO_DEVICE and says why. */
#include <stdio.h>

#include "vulkan/vk.h"

int wai_vk_open(WaiVk **out, int device_index, char *msg, size_t msg_size)
{
    (void)device_index;
    if (out) *out = NULL;
    if (msg && msg_size) snprintf(msg, msg_size, "built without Vulkan");
    return out ? WAI_ERR_NO_DEVICE : WAI_ERR_INVALID_ARG;
}

void wai_vk_close(WaiVk *vk) { (void)vk; }

void wai_vk_attach(WaiVk *vk, WaiDsp *dsp) { (void)vk; (void)dsp; }

const char *wai_vk_device_name(const WaiVk *vk) { (void)vk; return "none"; }

void wai_vk_get_stats(const WaiVk *vk, WaiVkStats *st)
{
    (void)vk;
    memset(st, 0, sizeof(*st));
}

void wai_vk_set_rgb(WaiVk *vk, int on) { (void)vk; (void)on; }

void wai_vk_set_buffer_limit(WaiVk *vk, size_t max_bytes) { (void)vk; (void)max_bytes; }

void wai_vk_set_cache_budget(WaiVk *vk, size_t bytes) { (void)vk; (void)bytes; }
