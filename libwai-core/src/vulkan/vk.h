/* The Vulkan compute backend (issue 5): runs h_s and g_s (spec 5, 6) on a GPU with exactly the
 * reference integers. It plugs into a WaiDsp through its run_layers hook; the entropy decode
 * stays on the CPU. Built without Vulkan, wai_vk_open() returns WAI_ERR_NO_DEVICE. */
#ifndef WAI_VULKAN_VK_H
#define WAI_VULKAN_VK_H

#include "dsp.h"

typedef struct WaiVk WaiVk;

/* Open device `device_index` of vkEnumeratePhysicalDevices() (the Vulkan loader's order).
 * Returns 0, WAI_ERR_NO_DEVICE (no loader/driver, no such device, or the device lacks what the
 * shaders need: Vulkan 1.2, shaderInt64, a compute queue), WAI_ERR_INVALID_ARG or
 * WAI_ERR_NOMEM. msg (if not NULL) receives a one-line reason or the device name. */
int wai_vk_open(WaiVk **out, int device_index, char *msg, size_t msg_size);

/* Frees every device object; NULL is a no-op. A WaiDsp attached to it must not be used after. */
void wai_vk_close(WaiVk *vk);

/* Point dsp->run_layers / dsp->backend at this device, and dsp->synthesis_rgb (g_s and the
 * RGB8 output together; little-endian hosts). The kernels already in dsp are kept (copied) as
 * the fallback for tensors beyond the device's buffer limits. */
void wai_vk_attach(WaiVk *vk, WaiDsp *dsp);

/* The device name as the driver reports it ("llvmpipe (LLVM 15.0.6, 256 bits)"). */
const char *wai_vk_device_name(const WaiVk *vk);

/* Counters for tests and tools. */
typedef struct WaiVkStats {
    uint64_t gpu_runs;         /* layer lists run on the device */
    uint64_t cpu_fallbacks;    /* layer lists run on the kept CPU kernels (limits, memory) */
    uint64_t uploads;          /* layer parameter uploads (once per layer, again if it changed) */
    uint64_t dispatches;
    uint64_t param_bytes;      /* device bytes of cached layer parameters after the last run */
    uint64_t rgb_runs;         /* g_s runs with the RGB8 output on the device (synthesis_rgb) */
    uint64_t readback_bytes;   /* bytes copied back from the device, all runs */
} WaiVkStats;

void wai_vk_get_stats(const WaiVk *vk, WaiVkStats *st);

/* Testing and timing only: on = 0 makes synthesis_rgb decline, so g_s reads back the int32
 * tensor and the CPU converts (the path before the RGB8 pass); on = 1 (the default) undoes it. */
void wai_vk_set_rgb(WaiVk *vk, int on);

/* Testing only: pretend the device's largest storage buffer is max_bytes (0 = the real limit),
 * to exercise the CPU fallback. */
void wai_vk_set_buffer_limit(WaiVk *vk, size_t max_bytes);

/* Parameters of layers a run does not use are evicted, least recently used first, while the
 * cache holds more than this many bytes (default 256 MiB, 0 = the default; never below twice
 * the largest run, so one model's h_s and g_s stay). For tests, and for tight GPU memory. */
void wai_vk_set_cache_budget(WaiVk *vk, size_t bytes);

#endif
