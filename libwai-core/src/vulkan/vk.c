/* The Vulkan compute backend: h_s and g_s on a GPU, the same integers as the reference kernels.
 *
 * One run_layers() call is one command buffer and one submit: the input is copied to a device
 * buffer, every layer is one dispatch (an invocation per 4 output channels of a position; per
 * element for leaky ReLU) from one activation buffer into the other (ping-pong, also for the
 * layers the CPU runs in place), and the last tensor is copied back. Layer parameters (weights
 * widened to int32, biases, shifts, IGDN beta and gamma, output channels padded to 4 with
 * zeros) live in one device buffer per layer, uploaded in the same command buffer the first
 * time a layer is seen and kept until wai_vk_close() or until evicted (cache_trim).
 *
 * For g_s, synthesis_rgb() adds one more dispatch to the same command buffer: the RGB8 output
 * of spec 8 (shaders/rgb.comp), from the last activation buffer into the other one (free by
 * then, and always large enough: 3 bytes per position against 12), so only the display
 * window's 3 dw dh bytes are read back instead of the 12 Hp Wp of the int32 tensor.
 *
 * Anything the shaders cannot do exactly or the device cannot hold (a tensor beyond
 * maxStorageBufferRange, a layer beyond the spec's bounds, device memory exhausted) runs on
 * the CPU kernels the WaiDsp had before wai_vk_attach(): same integers, counted in the stats.
 *
 * The cache is keyed by the WaiLayer pointer, but a pointer alone is not an identity: a model
 * freed and another parsed can get the same addresses. So each entry also keeps the layer's
 * dimensions (compared exactly: they size the buffers) and a 64-bit fingerprint of its
 * parameter arrays, recomputed each run (a few ms for the largest models); a mismatch
 * re-uploads. Every run waits for its fence, so no device work is in flight between calls. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <vulkan/vulkan.h>

#include "graph.h"
#include "vulkan/vk.h"

/* SPIR-V made by glslc at build time from shaders/<name>.comp (-mfmt=c: a braced word list). */
static const uint32_t spv_conv[] =
#include "conv.spv.h"
;
static const uint32_t spv_convt[] =
#include "convt.spv.h"
;
static const uint32_t spv_lrelu[] =
#include "lrelu.spv.h"
;
static const uint32_t spv_igdn[] =
#include "igdn.spv.h"
;
static const uint32_t spv_rgb[] =
#include "rgb.spv.h"
;

enum { K_CONV, K_CONVT, K_LRELU, K_IGDN, K_RGB, K_COUNT };
#define N_BINDINGS 5
#define GROUP 64               /* local_size_x of every shader */
#define MAX_CACHE 512          /* layer entries kept; the least recently used goes first */
#define CACHE_BYTES ((VkDeviceSize)256 << 20) /* parameter bytes kept (at least; see trim) */
#define STAGE_ROUND ((VkDeviceSize)1 << 20)

/* Mirrors the push constant block of shaders/common.glsl. */
typedef struct WaiVkPush {
    int32_t cin, cout, ih, iw, oh, ow, kh, kw, stride, pad;
    int32_t n, slope, shift;
} WaiVkPush;
_Static_assert(sizeof(WaiVkPush) == 13 * 4, "push constants must match common.glsl");

typedef struct Buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    void *map;                 /* host-visible buffers only */
} Buf;

/* Parameters of one conv / convT / IGDN layer on the device: bindings 2, 3, 4. */
typedef struct LayerEntry {
    const WaiLayer *key;
    uint64_t fp;
    int type, cin, cout, kh, kw;
    Buf buf;
    VkDeviceSize off[3], len[3];
    uint64_t last_use;
    int valid;                 /* uploaded by a run that completed */
} LayerEntry;

struct WaiVk {
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t qfam;
    VkPhysicalDeviceMemoryProperties mem;
    VkDeviceSize max_range, real_max_range, max_alloc, align;
    uint32_t max_groups[2];
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];

    VkCommandPool cpool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipe[K_COUNT];
    VkDescriptorPool dpool;
    uint32_t dpool_cap;
    VkDescriptorSet *sets;

    Buf act[2];                /* activations, device local */
    Buf stage;                 /* input upload and output readback, host visible */
    Buf upstage;               /* parameter uploads of one run, host visible, freed after */
    Buf dummy;                 /* bindings a kernel does not use */

    LayerEntry *cache;
    size_t n_cache;
    uint64_t clock;
    VkDeviceSize cache_budget;

    WaiDsp cpu;                /* the kernels the dsp had before attach: the fallback */
    int have_cpu;
    WaiVkStats stats;
    int rgb_off;               /* wai_vk_set_rgb(vk, 0): synthesis_rgb declines */
    pthread_mutex_t lock;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static const char *vk_result_name(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    default: return "VkResult error";
    }
}

static int vk_err(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return 0;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return WAI_ERR_NOMEM;
    case VK_ERROR_DEVICE_LOST: return WAI_ERR_NO_DEVICE;
    default: return WAI_ERR_INTERNAL;
    }
}

static int setmsg(char *msg, size_t size, int err, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int setmsg(char *msg, size_t size, int err, const char *fmt, ...)
{
    if (msg && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, size, fmt, ap);
        va_end(ap);
    }
    return err;
}

static VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }

/* A 64-bit fingerprint of a byte array (not cryptographic: it tells a re-used pointer with new
 * contents from the same layer; buffer sizes never depend on it). */
static uint64_t fp_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        h = (h ^ v) * UINT64_C(0x9E3779B97F4A7C15);
        h ^= h >> 29;
        b += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, b, n);
    h = (h ^ v ^ ((uint64_t)n << 56)) * UINT64_C(0xBF58476D1CE4E5B9);
    return h ^ (h >> 31);
}

/* ---- buffers ---------------------------------------------------------------------------- */

static int find_mem_type(const WaiVk *vk, uint32_t bits, VkMemoryPropertyFlags need,
                         VkMemoryPropertyFlags want)
{
    for (int pass = 0; pass < 2; pass++) {
        const VkMemoryPropertyFlags f = pass ? need : need | want;
        for (uint32_t i = 0; i < vk->mem.memoryTypeCount; i++)
            if ((bits & (1u << i)) && (vk->mem.memoryTypes[i].propertyFlags & f) == f) return (int)i;
    }
    return -1;
}

static void buf_free(WaiVk *vk, Buf *b)
{
    if (b->map) vkUnmapMemory(vk->dev, b->mem);
    if (b->buf) vkDestroyBuffer(vk->dev, b->buf, NULL);
    if (b->mem) vkFreeMemory(vk->dev, b->mem, NULL);
    memset(b, 0, sizeof(*b));
}

/* host: host-visible and coherent (cached preferred, for readback); else device-local
 * preferred. */
static VkResult buf_alloc(WaiVk *vk, Buf *b, VkDeviceSize size, VkBufferUsageFlags usage, int host)
{
    memset(b, 0, sizeof(*b));
    if (size > vk->max_alloc) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    const VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size, .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(vk->dev, &bi, NULL, &b->buf);
    if (r) return r;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->dev, b->buf, &req);
    const int t = host ? find_mem_type(vk, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                       VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                       : find_mem_type(vk, req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (t < 0) {
        buf_free(vk, b);
        return VK_ERROR_FEATURE_NOT_PRESENT;
    }
    const VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)t,
    };
    if ((r = vkAllocateMemory(vk->dev, &ai, NULL, &b->mem)) ||
        (r = vkBindBufferMemory(vk->dev, b->buf, b->mem, 0)) ||
        (host && (r = vkMapMemory(vk->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map)))) {
        buf_free(vk, b);
        return r;
    }
    b->size = size;
    return VK_SUCCESS;
}

/* Grow-only buffers, rounded up so that a few sizes settle quickly. */
static VkResult buf_ensure(WaiVk *vk, Buf *b, VkDeviceSize size, VkBufferUsageFlags usage, int host)
{
    if (b->buf && b->size >= size) return VK_SUCCESS;
    buf_free(vk, b);
    VkDeviceSize want = align_up(size ? size : 1, STAGE_ROUND);
    if (want > vk->max_alloc) want = size;
    return buf_alloc(vk, b, want, usage, host);
}

/* ---- setup ------------------------------------------------------------------------------ */

static int create_instance(WaiVk *vk, char *msg, size_t msg_size)
{
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "libwai",
        .pEngineName = "libwai", .apiVersion = VK_API_VERSION_1_2,
    };
    const VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app,
    };
    const VkResult r = vkCreateInstance(&ci, NULL, &vk->inst);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED)
        return setmsg(msg, msg_size, WAI_ERR_NO_DEVICE,
                      "no Vulkan 1.2 driver found (vkCreateInstance: %s)", vk_result_name(r));
    if (r) {
        vk->inst = VK_NULL_HANDLE;
        return setmsg(msg, msg_size, vk_err(r) == WAI_ERR_NOMEM ? WAI_ERR_NOMEM : WAI_ERR_NO_DEVICE,
                      "vkCreateInstance: %s", vk_result_name(r));
    }
    return 0;
}

static int pick_device(WaiVk *vk, int index, char *msg, size_t msg_size)
{
    uint32_t n = 0;
    VkResult r = vkEnumeratePhysicalDevices(vk->inst, &n, NULL);
    if (r && r != VK_INCOMPLETE)
        return setmsg(msg, msg_size, WAI_ERR_NO_DEVICE, "vkEnumeratePhysicalDevices: %s",
                      vk_result_name(r));
    if (!n) return setmsg(msg, msg_size, WAI_ERR_NO_DEVICE, "no Vulkan device found");
    if ((uint32_t)index >= n)
        return setmsg(msg, msg_size, WAI_ERR_NO_DEVICE,
                      "Vulkan device %d not found (%u device%s)", index, n, n == 1 ? "" : "s");
    VkPhysicalDevice *all = calloc(n, sizeof(*all));
    if (!all) return WAI_ERR_NOMEM;
    r = vkEnumeratePhysicalDevices(vk->inst, &n, all);
    if ((r && r != VK_INCOMPLETE) || (uint32_t)index >= n) {
        free(all);
        return setmsg(msg, msg_size, WAI_ERR_NO_DEVICE, "vkEnumeratePhysicalDevices: %s",
                      vk_result_name(r));
    }
    vk->phys = all[index];
    free(all);

    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 p2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3,
    };
    vkGetPhysicalDeviceProperties(vk->phys, &p2.properties);
    const VkPhysicalDeviceProperties *pr = &p2.properties;
    snprintf(vk->name, sizeof(vk->name), "%s", pr->deviceName);
    if (pr->apiVersion < VK_API_VERSION_1_2)
        return setmsg(msg, msg_size, WAI_ERR_NO_DEVICE, "Vulkan device %d (%s) supports Vulkan %u.%u; 1.2 is needed",
                      index, vk->name, VK_API_VERSION_MAJOR(pr->apiVersion),
                      VK_API_VERSION_MINOR(pr->apiVersion));
    vkGetPhysicalDeviceProperties2(vk->phys, &p2);

    VkPhysicalDeviceFeatures f;
    vkGetPhysicalDeviceFeatures(vk->phys, &f);
    if (!f.shaderInt64)
        return setmsg(msg, msg_size, WAI_ERR_NO_DEVICE,
                      "Vulkan device %d (%s) lacks shaderInt64", index, vk->name);

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, NULL);
    VkQueueFamilyProperties *q = calloc(nq ? nq : 1, sizeof(*q));
    if (!q) return WAI_ERR_NOMEM;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, q);
    uint32_t fam = UINT32_MAX;
    for (uint32_t i = 0; i < nq && fam == UINT32_MAX; i++)
        if (q[i].queueCount && (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) fam = i;
    free(q);
    if (fam == UINT32_MAX)
        return setmsg(msg, msg_size, WAI_ERR_NO_DEVICE,
                      "Vulkan device %d (%s) has no compute queue", index, vk->name);
    vk->qfam = fam;

    vk->real_max_range = vk->max_range = pr->limits.maxStorageBufferRange;
    vk->max_alloc = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize : ((VkDeviceSize)1 << 30);
    vk->align = pr->limits.minStorageBufferOffsetAlignment;
    if (vk->align < 16) vk->align = 16; /* int64 arrays start 8-aligned at least */
    vk->max_groups[0] = pr->limits.maxComputeWorkGroupCount[0];
    vk->max_groups[1] = pr->limits.maxComputeWorkGroupCount[1];
    vkGetPhysicalDeviceMemoryProperties(vk->phys, &vk->mem);
    return 0;
}

static int create_device(WaiVk *vk, char *msg, size_t msg_size)
{
    const float prio = 1.0f;
    const VkDeviceQueueCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = vk->qfam,
        .queueCount = 1, .pQueuePriorities = &prio,
    };
    const VkPhysicalDeviceFeatures feat = { .shaderInt64 = VK_TRUE };
    const VkDeviceCreateInfo di = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qi, .pEnabledFeatures = &feat,
    };
    VkResult r = vkCreateDevice(vk->phys, &di, NULL, &vk->dev);
    if (r) {
        vk->dev = VK_NULL_HANDLE;
        return setmsg(msg, msg_size, WAI_ERR_NO_DEVICE, "vkCreateDevice (%s): %s", vk->name,
                      vk_result_name(r));
    }
    vkGetDeviceQueue(vk->dev, vk->qfam, 0, &vk->queue);

    const VkCommandPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = vk->qfam,
    };
    if ((r = vkCreateCommandPool(vk->dev, &pi, NULL, &vk->cpool))) goto fail;
    const VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = vk->cpool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1,
    };
    if ((r = vkAllocateCommandBuffers(vk->dev, &ai, &vk->cmd))) goto fail;
    const VkFenceCreateInfo fi = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    if ((r = vkCreateFence(vk->dev, &fi, NULL, &vk->fence))) goto fail;
    if ((r = buf_alloc(vk, &vk->dummy, 64, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, 0))) goto fail;
    return 0;
fail:
    return setmsg(msg, msg_size, vk_err(r) == WAI_ERR_NOMEM ? WAI_ERR_NOMEM : WAI_ERR_NO_DEVICE,
                  "Vulkan setup (%s): %s", vk->name, vk_result_name(r));
}

static int create_pipelines(WaiVk *vk, char *msg, size_t msg_size)
{
    VkDescriptorSetLayoutBinding b[N_BINDINGS];
    for (uint32_t i = 0; i < N_BINDINGS; i++)
        b[i] = (VkDescriptorSetLayoutBinding){
            .binding = i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    const VkDescriptorSetLayoutCreateInfo li = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = N_BINDINGS,
        .pBindings = b,
    };
    VkResult r = vkCreateDescriptorSetLayout(vk->dev, &li, NULL, &vk->dsl);
    if (r) goto fail;
    const VkPushConstantRange pc = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = sizeof(WaiVkPush),
    };
    const VkPipelineLayoutCreateInfo pli = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1,
        .pSetLayouts = &vk->dsl, .pushConstantRangeCount = 1, .pPushConstantRanges = &pc,
    };
    if ((r = vkCreatePipelineLayout(vk->dev, &pli, NULL, &vk->layout))) goto fail;

    static const struct { const uint32_t *code; size_t size; } src[K_COUNT] = {
        [K_CONV] = { spv_conv, sizeof(spv_conv) },
        [K_CONVT] = { spv_convt, sizeof(spv_convt) },
        [K_LRELU] = { spv_lrelu, sizeof(spv_lrelu) },
        [K_IGDN] = { spv_igdn, sizeof(spv_igdn) },
        [K_RGB] = { spv_rgb, sizeof(spv_rgb) },
    };
    VkShaderModule mod[K_COUNT] = { 0 };
    VkComputePipelineCreateInfo ci[K_COUNT];
    for (int k = 0; k < K_COUNT && !r; k++) {
        const VkShaderModuleCreateInfo mi = {
            .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = src[k].size,
            .pCode = src[k].code,
        };
        r = vkCreateShaderModule(vk->dev, &mi, NULL, &mod[k]);
        ci[k] = (VkComputePipelineCreateInfo){
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                       .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = mod[k], .pName = "main" },
            .layout = vk->layout,
        };
    }
    if (!r) r = vkCreateComputePipelines(vk->dev, VK_NULL_HANDLE, K_COUNT, ci, NULL, vk->pipe);
    for (int k = 0; k < K_COUNT; k++)
        if (mod[k]) vkDestroyShaderModule(vk->dev, mod[k], NULL);
    if (r) {
        memset(vk->pipe, 0, sizeof(vk->pipe));
        goto fail;
    }
    return 0;
fail:
    return setmsg(msg, msg_size, vk_err(r) == WAI_ERR_NOMEM ? WAI_ERR_NOMEM : WAI_ERR_NO_DEVICE,
                  "Vulkan pipelines (%s): %s", vk->name, vk_result_name(r));
}

int wai_vk_open(WaiVk **out, int device_index, char *msg, size_t msg_size)
{
    if (msg && msg_size) msg[0] = 0;
    if (!out) return WAI_ERR_INVALID_ARG;
    *out = NULL;
    if (device_index < 0)
        return setmsg(msg, msg_size, WAI_ERR_INVALID_ARG, "bad Vulkan device index %d", device_index);
    WaiVk *vk = calloc(1, sizeof(*vk));
    if (!vk) return WAI_ERR_NOMEM;
    if (pthread_mutex_init(&vk->lock, NULL)) {
        free(vk);
        return WAI_ERR_NOMEM;
    }
    int r;
    if ((r = create_instance(vk, msg, msg_size)) < 0 ||
        (r = pick_device(vk, device_index, msg, msg_size)) < 0 ||
        (r = create_device(vk, msg, msg_size)) < 0 ||
        (r = create_pipelines(vk, msg, msg_size)) < 0) {
        wai_vk_close(vk);
        return r;
    }
    vk->cache_budget = CACHE_BYTES;
    setmsg(msg, msg_size, 0, "%s", vk->name);
    *out = vk;
    return 0;
}

void wai_vk_close(WaiVk *vk)
{
    if (!vk) return;
    if (vk->dev) {
        vkDeviceWaitIdle(vk->dev);
        for (size_t i = 0; i < vk->n_cache; i++) buf_free(vk, &vk->cache[i].buf);
        for (int k = 0; k < 2; k++) buf_free(vk, &vk->act[k]);
#ifndef WAI_PLANTED_FAULT_VK_LEAK_BUFFER   /* planted: a buffer and its memory never destroyed */
        buf_free(vk, &vk->stage);
#endif
        buf_free(vk, &vk->upstage);
        buf_free(vk, &vk->dummy);
        if (vk->dpool) vkDestroyDescriptorPool(vk->dev, vk->dpool, NULL);
        for (int k = 0; k < K_COUNT; k++)
            if (vk->pipe[k]) vkDestroyPipeline(vk->dev, vk->pipe[k], NULL);
        if (vk->layout) vkDestroyPipelineLayout(vk->dev, vk->layout, NULL);
        if (vk->dsl) vkDestroyDescriptorSetLayout(vk->dev, vk->dsl, NULL);
        if (vk->fence) vkDestroyFence(vk->dev, vk->fence, NULL);
        if (vk->cpool) vkDestroyCommandPool(vk->dev, vk->cpool, NULL);
        vkDestroyDevice(vk->dev, NULL);
    }
    if (vk->inst) vkDestroyInstance(vk->inst, NULL);
#ifndef WAI_PLANTED_FAULT_VK_LEAK_HOST   /* planted: the backend's own allocation never freed */
    free(vk->cache);
#endif
    free(vk->sets);
    pthread_mutex_destroy(&vk->lock);
    free(vk);
}

const char *wai_vk_device_name(const WaiVk *vk) { return vk ? vk->name : "none"; }

void wai_vk_get_stats(const WaiVk *vk, WaiVkStats *st)
{
    memset(st, 0, sizeof(*st));
    if (!vk) return;
    pthread_mutex_lock((pthread_mutex_t *)&vk->lock);
    *st = vk->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&vk->lock);
}

void wai_vk_set_cache_budget(WaiVk *vk, size_t bytes)
{
    pthread_mutex_lock(&vk->lock);
    vk->cache_budget = bytes ? bytes : CACHE_BYTES;
    pthread_mutex_unlock(&vk->lock);
}

void wai_vk_set_rgb(WaiVk *vk, int on)
{
    pthread_mutex_lock(&vk->lock);
    vk->rgb_off = !on;
    pthread_mutex_unlock(&vk->lock);
}

void wai_vk_set_buffer_limit(WaiVk *vk, size_t max_bytes)
{
    pthread_mutex_lock(&vk->lock);
    vk->max_range = max_bytes && max_bytes < vk->real_max_range ? max_bytes : vk->real_max_range;
    pthread_mutex_unlock(&vk->lock);
}

/* ---- layer parameters ------------------------------------------------------------------- */

static int kernel_of(int type)
{
    return type == WAI_LAYER_CONV ? K_CONV : type == WAI_LAYER_CONVT ? K_CONVT
         : type == WAI_LAYER_LRELU ? K_LRELU : K_IGDN;
}

static uint64_t layer_fp(const WaiLayer *l)
{
    const int32_t dims[5] = { l->type, l->cin, l->cout, l->kh, l->kw };
    uint64_t h = fp_bytes(UINT64_C(0x243F6A8885A308D3), dims, sizeof(dims));
    if (l->type == WAI_LAYER_IGDN) {
        const size_t c = (size_t)l->cin;
        h = fp_bytes(h, l->beta, c * sizeof(*l->beta));
        return fp_bytes(h, l->gamma, c * c * sizeof(*l->gamma));
    }
    const size_t co = (size_t)l->cout;
    h = fp_bytes(h, l->weight, co * l->cin * l->kh * l->kw * sizeof(*l->weight));
    h = fp_bytes(h, l->shift, co);
    return fp_bytes(h, l->bias, co * sizeof(*l->bias));
}

/* The shaders' 32-bit products need 12-bit weights (spec 4.1; model.c checks it, a hand-built
 * layer might not). */
static int weights_12bit(const WaiLayer *l)
{
    const size_t nw = (size_t)l->cout * l->cin * l->kh * l->kw;
    int lo = 0, hi = 0;
    for (size_t k = 0; k < nw; k++) {
        lo = l->weight[k] < lo ? l->weight[k] : lo;
        hi = l->weight[k] > hi ? l->weight[k] : hi;
    }
    return lo >= -2048 && hi <= 2047;
}

/* Sizes of the three parameter regions of a layer (bytes); 0 if the layer cannot run here:
 * beyond the device limits, or beyond the spec's bounds that the shaders rely on (12-bit
 * weights; taps per output <= 2^16 and C <= 512, because lavapipe ends a shader's loops after
 * 65535 iterations in all). */
static int layer_regions(const WaiVk *vk, const WaiLayer *l, VkDeviceSize off[3], VkDeviceSize len[3],
                         VkDeviceSize *total)
{
    if (l->type == WAI_LAYER_IGDN ? l->cin > 512
                                  : (int64_t)l->cin * l->kh * l->kw > ((int64_t)1 << 16) ||
                                    !weights_12bit(l))
        return 0;
    /* output channels padded to the shaders' tile of 4, with zeros */
    if (l->type == WAI_LAYER_IGDN) {
        const VkDeviceSize c4 = ((VkDeviceSize)l->cin + 3) & ~(VkDeviceSize)3;
        len[0] = c4 * l->cin * 4;
        len[1] = c4 * 8;
        len[2] = 4;
    } else {
        const VkDeviceSize co4 = ((VkDeviceSize)l->cout + 3) & ~(VkDeviceSize)3;
        len[0] = co4 * l->cin * l->kh * l->kw * 4;
        len[1] = co4 * 8;
        len[2] = co4 * 4;
    }
    VkDeviceSize o = 0;
    for (int k = 0; k < 3; k++) {
        if (len[k] > vk->max_range) return 0;
        off[k] = o;
        o = align_up(o + len[k], vk->align);
    }
    *total = o;
    return o <= vk->max_alloc;
}

/* The parameter bytes of a layer into dst (the layout of layer_regions, padding zeroed). */
static void layer_pack(const WaiLayer *l, uint8_t *dst, const VkDeviceSize off[3], const VkDeviceSize len[3])
{
    for (int k = 0; k < 3; k++) memset(dst + off[k], 0, (size_t)len[k]);
    if (l->type == WAI_LAYER_IGDN) {
        const size_t c = (size_t)l->cin;
        memcpy(dst + off[0], l->gamma, c * c * 4);
        memcpy(dst + off[1], l->beta, c * 8);
        return;
    }
    const size_t nw = (size_t)l->cout * l->cin * l->kh * l->kw;
    int32_t *w = (int32_t *)(void *)(dst + off[0]);
    for (size_t k = 0; k < nw; k++) w[k] = l->weight[k];
    memcpy(dst + off[1], l->bias, (size_t)l->cout * 8);
    uint32_t *e = (uint32_t *)(void *)(dst + off[2]);
    for (int o = 0; o < l->cout; o++) e[o] = l->shift[o];
}

/* Bounds the parameter memory of layers no longer used (a model freed, its WaiLayer pointers
 * never seen again): after a run, the least recently used entries that this run did not use go
 * while the total is above the budget. The budget is at least twice the largest run, so the h_s
 * and g_s of one model never evict each other. */
static void cache_trim(WaiVk *vk, uint64_t tick)
{
    VkDeviceSize total = 0, run = 0;
    for (size_t i = 0; i < vk->n_cache; i++) {
        total += vk->cache[i].buf.size;
        if (vk->cache[i].last_use == tick) run += vk->cache[i].buf.size;
    }
    if (vk->cache_budget < 2 * run) vk->cache_budget = 2 * run;
    while (total > vk->cache_budget) {
        LayerEntry *old = NULL;
        for (size_t i = 0; i < vk->n_cache; i++)
            if (vk->cache[i].buf.buf && vk->cache[i].last_use != tick &&
                (!old || vk->cache[i].last_use < old->last_use))
                old = &vk->cache[i];
        if (!old) break;
        total -= old->buf.size;
        buf_free(vk, &old->buf);
        memset(old, 0, sizeof(*old)); /* key NULL: found by nobody, reused by cache_add */
    }
    vk->stats.param_bytes = total;
}

static LayerEntry *cache_find(WaiVk *vk, const WaiLayer *l)
{
    for (size_t i = 0; i < vk->n_cache; i++)
        if (vk->cache[i].key == l) return &vk->cache[i];
    return NULL;
}

/* A free entry: an emptied one, a new one, or the least recently used one not used by this run
 * (tick), evicted. */
static LayerEntry *cache_add(WaiVk *vk, uint64_t tick)
{
    for (size_t i = 0; i < vk->n_cache; i++)
        if (!vk->cache[i].key && !vk->cache[i].buf.buf) return &vk->cache[i];
    if (vk->n_cache < MAX_CACHE) {
        if (!vk->cache && !(vk->cache = calloc(MAX_CACHE, sizeof(*vk->cache)))) return NULL;
        LayerEntry *e = &vk->cache[vk->n_cache++];
        memset(e, 0, sizeof(*e));
        return e;
    }
    LayerEntry *old = NULL;
    for (size_t i = 0; i < vk->n_cache; i++)
        if (vk->cache[i].last_use != tick && (!old || vk->cache[i].last_use < old->last_use))
            old = &vk->cache[i];
    if (!old) return NULL;
    buf_free(vk, &old->buf);
    memset(old, 0, sizeof(*old));
    return old;
}

/* ---- running a layer list --------------------------------------------------------------- */

typedef struct Step {
    const WaiLayer *l;
    LayerEntry *e;             /* NULL for leaky ReLU */
    WaiShape in, out;
    uint32_t invocations, gx, gy;
} Step;

/* Output shape of one layer (wai_run_layers() has checked the list already). */
static WaiShape step_shape(const WaiLayer *l, WaiShape s)
{
    if (l->type == WAI_LAYER_CONV)
        return (WaiShape){ l->cout, (s.h + 2 * l->pad - l->kh) / l->stride + 1,
                           (s.w + 2 * l->pad - l->kw) / l->stride + 1 };
    if (l->type == WAI_LAYER_CONVT)
        return (WaiShape){ l->cout, (s.h - 1) * l->stride - 2 * l->pad + l->kh + l->out_pad,
                           (s.w - 1) * l->stride - 2 * l->pad + l->kw + l->out_pad };
    return s;
}

static VkDeviceSize shape_bytes(WaiShape s) { return (VkDeviceSize)s.c * s.h * s.w * 4; }

/* The 2D grid of 64-wide groups for inv invocations (see element_index() in common.glsl);
 * 0 if the device cannot dispatch it. */
static int grid(const WaiVk *vk, uint64_t inv, uint32_t *gx, uint32_t *gy)
{
    if (inv > INT32_MAX) return 0;
    const uint64_t groups = (inv + GROUP - 1) / GROUP;
    const uint64_t x = groups < vk->max_groups[0] ? groups : vk->max_groups[0];
    const uint64_t y = (groups + x - 1) / x;
    if (y > vk->max_groups[1]) return 0;
    *gx = (uint32_t)x;
    *gy = (uint32_t)y;
    return 1;
}

/* The display window of a synthesis_rgb() run and the grid of rgb.comp: an invocation per
 * 4 pixels (12 bytes, 3 words); the bytes packed tightly into `words` words. */
typedef struct Window {
    uint32_t dx, dy, dw, dh;
    uint8_t *rgb;
    ptrdiff_t stride;
    uint32_t groups, words, gx, gy;
    WaiShape in;               /* the g_s output: 3 x Hp x Wp */
} Window;

/* 0 if the device cannot do it (the caller declines: the CPU converts). */
static int plan_window(const WaiVk *vk, Window *win, WaiShape in)
{
    const uint64_t px = (uint64_t)win->dw * win->dh;
    if (3 * px > INT32_MAX) return 0; /* rgb.comp counts bytes in uint */
    win->groups = (uint32_t)((px + 3) / 4);
    win->words = (uint32_t)((3 * px + 3) / 4);
    win->in = in;
    return grid(vk, win->groups, &win->gx, &win->gy);
}

/* Shapes and grid sizes of every step; 0 if a tensor is beyond the device limits. */
static int plan_steps(const WaiVk *vk, const WaiLayer *layers, uint32_t n, WaiShape s, Step *st,
                      VkDeviceSize *max_bytes)
{
    VkDeviceSize best = shape_bytes(s);
    if (best > vk->max_range) return 0;
    for (uint32_t k = 0; k < n; k++) {
        st[k].l = &layers[k];
        st[k].e = NULL;
        st[k].in = s;
        st[k].out = s = step_shape(&layers[k], s);
        const VkDeviceSize b = shape_bytes(s);
        if (b > vk->max_range) return 0;
        if (b > best) best = b;
        /* one invocation per element (leaky ReLU), per 4 channels of a position (conv, IGDN);
         * convT runs by output phase: s^2 grids of ceil(oh / s) x ceil(ow / s) */
        const uint64_t c4 = ((uint64_t)s.c + 3) / 4, hw = (uint64_t)s.h * s.w;
        uint64_t inv = b / 4;
        if (layers[k].type == WAI_LAYER_CONV || layers[k].type == WAI_LAYER_IGDN) {
            inv = c4 * hw;
        } else if (layers[k].type == WAI_LAYER_CONVT) {
            const uint64_t st2 = (uint64_t)layers[k].stride;
            inv = c4 * st2 * st2 * ((s.h + st2 - 1) / st2) * ((s.w + st2 - 1) / st2);
        }
        if (!grid(vk, inv, &st[k].gx, &st[k].gy)) return 0;
        st[k].invocations = (uint32_t)inv;
    }
    *max_bytes = best;
    return 1;
}

/* The cache entry of every parameterised step. Entries that are new or whose layer changed get
 * a fresh buffer and go into up[] (distinct entries, packed into upstage later). Sets
 * *fallback if a layer cannot live on the device; returns a VkResult. */
static VkResult bind_params(WaiVk *vk, Step *st, uint32_t n, uint64_t tick, LayerEntry **up,
                            uint32_t *n_up, VkDeviceSize *up_bytes, int *fallback)
{
    VkDeviceSize off[3], len[3], total;
    *n_up = 0;
    *up_bytes = 0;
    for (uint32_t k = 0; k < n; k++) /* first: is every layer within the limits? */
        if (st[k].l->type != WAI_LAYER_LRELU && !layer_regions(vk, st[k].l, off, len, &total)) {
            *fallback = 1;
            return VK_SUCCESS;
        }
    for (uint32_t k = 0; k < n; k++) {
        const WaiLayer *l = st[k].l;
        if (l->type == WAI_LAYER_LRELU) continue;
        LayerEntry *e = cache_find(vk, l);
        if (e && e->last_use == tick) { /* listed twice in this run */
            st[k].e = e;
            continue;
        }
        const uint64_t fp = layer_fp(l);
#ifdef WAI_PLANTED_FAULT_VK_CACHE_STALE
        if (e) e->fp = fp; /* planted: trust the pointer alone */
#endif
        if (e && e->valid && e->fp == fp && e->type == l->type && e->cin == l->cin &&
            e->cout == l->cout && e->kh == l->kh && e->kw == l->kw) {
            e->last_use = tick;
            st[k].e = e;
            continue;
        }
        layer_regions(vk, l, off, len, &total);
        if (e) buf_free(vk, &e->buf);
        else if (!(e = cache_add(vk, tick))) return VK_ERROR_OUT_OF_HOST_MEMORY;
        memset(e, 0, sizeof(*e));
        VkResult r = buf_alloc(vk, &e->buf, total, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                               VK_BUFFER_USAGE_TRANSFER_DST_BIT, 0);
        if (r) return r; /* an empty entry (key NULL): found by nobody, reused by cache_add */
        e->key = l;
        e->last_use = tick;
        e->fp = fp;
        e->type = l->type; e->cin = l->cin; e->cout = l->cout; e->kh = l->kh; e->kw = l->kw;
        memcpy(e->off, off, sizeof(off));
        memcpy(e->len, len, sizeof(len));
        e->valid = 0;          /* until the run that uploads it completes */
        st[k].e = e;
        up[(*n_up)++] = e;
        *up_bytes += total;
    }
    return VK_SUCCESS;
}

static VkResult ensure_sets(WaiVk *vk, uint32_t n)
{
    if (n > vk->dpool_cap) {
        if (vk->dpool) vkDestroyDescriptorPool(vk->dev, vk->dpool, NULL);
        vk->dpool = VK_NULL_HANDLE;
        vk->dpool_cap = 0;
        const uint32_t cap = n < 32 ? 32 : n;
        VkDescriptorSet *sets = realloc(vk->sets, cap * sizeof(*sets));
        if (!sets) return VK_ERROR_OUT_OF_HOST_MEMORY;
        vk->sets = sets;
        const VkDescriptorPoolSize ps = {
            .type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = cap * N_BINDINGS,
        };
        const VkDescriptorPoolCreateInfo pi = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = cap,
            .poolSizeCount = 1, .pPoolSizes = &ps,
        };
        VkResult r = vkCreateDescriptorPool(vk->dev, &pi, NULL, &vk->dpool);
        if (r) {
            vk->dpool = VK_NULL_HANDLE;
            return r;
        }
        vk->dpool_cap = cap;
    } else {
        VkResult r = vkResetDescriptorPool(vk->dev, vk->dpool, 0);
        if (r) return r;
    }
    VkDescriptorSetLayout *l = malloc(n * sizeof(*l));
    if (!l) return VK_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t k = 0; k < n; k++) l[k] = vk->dsl;
    const VkDescriptorSetAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = vk->dpool,
        .descriptorSetCount = n, .pSetLayouts = l,
    };
    VkResult r = vkAllocateDescriptorSets(vk->dev, &ai, vk->sets);
    free(l);
    return r;
}

/* Descriptor set of step k: input act[k & 1], output act[(k + 1) & 1], parameters. */
static void write_set(WaiVk *vk, const Step *s, uint32_t k)
{
    VkDescriptorBufferInfo bi[N_BINDINGS] = {
        { vk->act[k & 1].buf, 0, shape_bytes(s->in) },
        { vk->act[(k + 1) & 1].buf, 0, shape_bytes(s->out) },
    };
    for (int j = 0; j < 3; j++)
        bi[2 + j] = s->e ? (VkDescriptorBufferInfo){ s->e->buf.buf, s->e->off[j], s->e->len[j] }
                         : (VkDescriptorBufferInfo){ vk->dummy.buf, 0, VK_WHOLE_SIZE };
    VkWriteDescriptorSet w[N_BINDINGS];
    for (uint32_t j = 0; j < N_BINDINGS; j++)
        w[j] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = vk->sets[k], .dstBinding = j,
            .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &bi[j],
        };
    vkUpdateDescriptorSets(vk->dev, N_BINDINGS, w, 0, NULL);
}

/* Descriptor set of the RGB8 pass after n layers: the last output act[n & 1] into the other
 * activation buffer, free by then. */
static void write_rgb_set(WaiVk *vk, const Window *win, uint32_t n)
{
    const VkDescriptorBufferInfo bi[N_BINDINGS] = {
        { vk->act[n & 1].buf, 0, shape_bytes(win->in) },
        { vk->act[(n + 1) & 1].buf, 0, (VkDeviceSize)win->words * 4 },
        { vk->dummy.buf, 0, VK_WHOLE_SIZE },
        { vk->dummy.buf, 0, VK_WHOLE_SIZE },
        { vk->dummy.buf, 0, VK_WHOLE_SIZE },
    };
    VkWriteDescriptorSet w[N_BINDINGS];
    for (uint32_t j = 0; j < N_BINDINGS; j++)
        w[j] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = vk->sets[n], .dstBinding = j,
            .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &bi[j],
        };
    vkUpdateDescriptorSets(vk->dev, N_BINDINGS, w, 0, NULL);
}

/* rgb.comp reads the push constants as its window (the names in rgb.comp). */
static WaiVkPush rgb_push(const Window *win)
{
    return (WaiVkPush){
        .cin = 3, .ih = win->in.h, .iw = win->in.w, .oh = (int32_t)win->dh,
        .ow = (int32_t)win->dw, .kh = (int32_t)win->dy, .kw = (int32_t)win->dx,
        .n = (int32_t)win->groups,
    };
}

static void barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags sa,
                    VkPipelineStageFlags dst, VkAccessFlags da)
{
    const VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = sa, .dstAccessMask = da,
    };
    vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

static WaiVkPush step_push(const Step *s)
{
    const WaiLayer *l = s->l;
    WaiVkPush p = {
        .cin = s->in.c, .cout = s->out.c, .ih = s->in.h, .iw = s->in.w, .oh = s->out.h,
        .ow = s->out.w, .n = (int32_t)s->invocations,
    };
    if (l->type == WAI_LAYER_CONV || l->type == WAI_LAYER_CONVT) {
        p.kh = l->kh; p.kw = l->kw; p.stride = l->stride; p.pad = l->pad;
    } else if (l->type == WAI_LAYER_LRELU) {
        p.slope = l->slope_q16;
    } else {
        p.shift = 6 + l->gamma_shift / 2;
    }
    return p;
}

/* win: the RGB8 pass after the layers (its bytes are read back), else NULL (the tensor). */
static VkResult record(WaiVk *vk, const Step *st, uint32_t n, LayerEntry *const *up, uint32_t n_up,
                       VkDeviceSize in_bytes, VkDeviceSize out_bytes, const Window *win)
{
    VkCommandBuffer cb = vk->cmd;
    VkResult r = vkResetCommandBuffer(cb, 0);
    if (r) return r;
    const VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if ((r = vkBeginCommandBuffer(cb, &bi))) return r;

    const VkBufferCopy in_copy = { 0, 0, in_bytes };
    vkCmdCopyBuffer(cb, vk->stage.buf, vk->act[0].buf, 1, &in_copy);
    VkDeviceSize src = 0;
    for (uint32_t k = 0; k < n_up; k++) {
        const VkBufferCopy c = { src, 0, up[k]->buf.size };
        vkCmdCopyBuffer(cb, vk->upstage.buf, up[k]->buf.buf, 1, &c);
        src += up[k]->buf.size;
    }
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);

    for (uint32_t k = 0; k < n; k++) {
        const Step *s = &st[k];
        const WaiVkPush p = step_push(s);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipe[kernel_of(s->l->type)]);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->layout, 0, 1, &vk->sets[k],
                                0, NULL);
        vkCmdPushConstants(cb, vk->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(p), &p);
        vkCmdDispatch(cb, s->gx, s->gy, 1);
        /* the next layer reads this output and overwrites this input */
        if (k + 1 < n)
            barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    }

    VkBuffer last = vk->act[n & 1].buf;
    if (win) {
        const WaiVkPush p = rgb_push(win);
        barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipe[K_RGB]);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->layout, 0, 1, &vk->sets[n],
                                0, NULL);
        vkCmdPushConstants(cb, vk->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(p), &p);
        vkCmdDispatch(cb, win->gx, win->gy, 1);
        last = vk->act[(n + 1) & 1].buf;
        out_bytes = (VkDeviceSize)win->words * 4;
    }
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    const VkBufferCopy out_copy = { 0, 0, out_bytes };
    vkCmdCopyBuffer(cb, last, vk->stage.buf, 1, &out_copy);
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    return vkEndCommandBuffer(cb);
}

static VkResult submit_wait(WaiVk *vk)
{
    const VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &vk->cmd,
    };
    VkResult r = vkQueueSubmit(vk->queue, 1, &si, vk->fence);
    if (r) return r;
    r = vkWaitForFences(vk->dev, 1, &vk->fence, VK_TRUE, UINT64_MAX);
    const VkResult r2 = vkResetFences(vk->dev, 1, &vk->fence);
    return r ? r : r2;
}

/* The bytes of the window's rows out of the tightly packed rows of the stage buffer. */
static void copy_rows(const Window *win, const uint8_t *src)
{
    const size_t row = (size_t)win->dw * 3;
    if ((size_t)win->stride == row) {
        memcpy(win->rgb, src, row * win->dh);
        return;
    }
    for (uint32_t k = 0; k < win->dh; k++) /* the caller's row padding is not written */
        memcpy(win->rgb + (ptrdiff_t)k * win->stride, src + k * row, row);
}

/* The device part of a run: a VkResult; *fallback set if the CPU must do it. With win, the
 * RGB8 pass follows and its bytes go to win->rgb (out, os unused); else the tensor to *out. */
static VkResult gpu_run(WaiVk *vk, const WaiLayer *layers, uint32_t n, const int32_t *in,
                        WaiShape s, int32_t **out, WaiShape *os, Window *win, int *fallback)
{
    Step *st = calloc(n, sizeof(*st));
    LayerEntry **up = calloc(n, sizeof(*up));
    VkDeviceSize max_bytes, up_bytes = 0;
    uint32_t n_up = 0;
    VkResult r = VK_SUCCESS;
    const uint64_t tick = ++vk->clock;
    if (!st || !up) {
        r = VK_ERROR_OUT_OF_HOST_MEMORY;
        goto done;
    }
    if (!plan_steps(vk, layers, n, s, st, &max_bytes) ||
        (win && !plan_window(vk, win, st[n - 1].out))) {
        *fallback = 1;
        goto done;
    }
    if ((r = bind_params(vk, st, n, tick, up, &n_up, &up_bytes, fallback)) || *fallback) goto done;

    const VkDeviceSize in_bytes = shape_bytes(s), out_bytes = shape_bytes(st[n - 1].out);
    const VkDeviceSize back = win ? (VkDeviceSize)win->words * 4 : out_bytes; /* read back */
    const VkBufferUsageFlags act_use = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
        VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    const VkBufferUsageFlags stage_use = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
        VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if ((r = buf_ensure(vk, &vk->act[0], max_bytes, act_use, 0)) ||
        (r = buf_ensure(vk, &vk->act[1], max_bytes, act_use, 0)) ||
        (r = buf_ensure(vk, &vk->stage, in_bytes > back ? in_bytes : back, stage_use, 1)) ||
        (n_up && (r = buf_ensure(vk, &vk->upstage, up_bytes, stage_use, 1))) ||
        (r = ensure_sets(vk, n + (win != NULL))))
        goto done;

    memcpy(vk->stage.map, in, (size_t)in_bytes);
    VkDeviceSize at = 0;
    for (uint32_t k = 0; k < n_up; k++) {
        layer_pack(up[k]->key, (uint8_t *)vk->upstage.map + at, up[k]->off, up[k]->len);
        at += up[k]->buf.size;
    }
    for (uint32_t k = 0; k < n; k++) write_set(vk, &st[k], k);
    if (win) write_rgb_set(vk, win, n);
    if ((r = record(vk, st, n, up, n_up, in_bytes, out_bytes, win)) || (r = submit_wait(vk)))
        goto done;

    for (uint32_t k = 0; k < n_up; k++) up[k]->valid = 1;
    vk->stats.uploads += n_up;
    cache_trim(vk, tick);
    vk->stats.dispatches += n + (win != NULL);
    vk->stats.readback_bytes += back;
    if (win) {
        copy_rows(win, vk->stage.map);
        goto done;
    }
    int32_t *o = malloc((size_t)out_bytes);
    if (!o) {
        r = VK_ERROR_OUT_OF_HOST_MEMORY;
        goto done;
    }
    memcpy(o, vk->stage.map, (size_t)out_bytes);
    *out = o;
    *os = st[n - 1].out;
done:
    /* parameter staging is needed once per model: do not keep it */
    if (vk->upstage.buf) buf_free(vk, &vk->upstage);
    free(up);
    free(st);
    return r;
}

static int vk_run_layers(void *backend, const WaiLayer *layers, uint32_t n, const int32_t *in,
                         const int shape[3], int32_t **out, int out_shape[3])
{
    WaiVk *vk = backend;
    const WaiShape s = { shape[0], shape[1], shape[2] };
    WaiShape os = s;
    int fallback = 0, ret = 0;
    *out = NULL;

    pthread_mutex_lock(&vk->lock);
    if (!n) {
        fallback = 1; /* nothing to compute: the CPU path copies */
    } else {
        const VkResult r = gpu_run(vk, layers, n, in, s, out, &os, NULL, &fallback);
        /* device memory running out is a limit of this device, not of the stream */
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY) fallback = 1;
        else if (r) ret = vk_err(r);
    }
    if (fallback && !ret) {
        vk->stats.cpu_fallbacks++;
        pthread_mutex_unlock(&vk->lock);
        if (!vk->have_cpu) return WAI_ERR_INTERNAL;
        ret = wai_run_layers(&vk->cpu, layers, n, in, s, out, &os);
    } else {
        if (!ret) vk->stats.gpu_runs++;
        pthread_mutex_unlock(&vk->lock);
    }
    if (ret < 0) return ret;
    out_shape[0] = os.c;
    out_shape[1] = os.h;
    out_shape[2] = os.w;
    return 0;
}

/* g_s and the RGB8 output in one submit (the synthesis_rgb hook of dsp.h). Declines (1) where
 * the device cannot do it; wai_synthesis() then takes run_layers, whose own fallback rules
 * apply. */
static int vk_synthesis_rgb(void *backend, const WaiLayer *layers, uint32_t n, const int32_t *in,
                            const int shape[3], uint32_t dx, uint32_t dy, uint32_t dw, uint32_t dh,
                            uint8_t *rgb, ptrdiff_t stride)
{
    WaiVk *vk = backend;
    const WaiShape s = { shape[0], shape[1], shape[2] };
    if (!n) return 1;
    WaiShape fs = s; /* wai_synthesis() has checked the list; the window is checked again */
    for (uint32_t k = 0; k < n; k++) fs = step_shape(&layers[k], fs);
    if (fs.c != 3 || !dw || !dh || (uint64_t)dx + dw > (uint64_t)fs.w ||
        (uint64_t)dy + dh > (uint64_t)fs.h || stride < 0 || (uint64_t)stride < (uint64_t)dw * 3)
        return WAI_ERR_INVALID_ARG;

    Window win = { .dx = dx, .dy = dy, .dw = dw, .dh = dh, .rgb = rgb, .stride = stride };
    int fallback = 0, ret = 0;
    pthread_mutex_lock(&vk->lock);
    const VkResult r = vk->rgb_off ? VK_SUCCESS
                                   : gpu_run(vk, layers, n, in, s, NULL, NULL, &win, &fallback);
    if (vk->rgb_off || r == VK_ERROR_OUT_OF_DEVICE_MEMORY) fallback = 1;
    else if (r) ret = vk_err(r);
    if (!ret && !fallback) {
        vk->stats.gpu_runs++;
        vk->stats.rgb_runs++;
    }
    pthread_mutex_unlock(&vk->lock);
    return ret < 0 ? ret : fallback;
}

void wai_vk_attach(WaiVk *vk, WaiDsp *dsp)
{
    if (!vk || !dsp) return;
    if (dsp->run_layers != vk_run_layers || dsp->backend != vk) {
        vk->cpu = *dsp;
        vk->cpu.run_layers = NULL; /* the fallback must not come back here */
        vk->cpu.synthesis_rgb = NULL;
        vk->cpu.backend = NULL;
        vk->have_cpu = vk->cpu.conv && vk->cpu.convt && vk->cpu.igdn && vk->cpu.lrelu;
    }
    dsp->run_layers = vk_run_layers;
    dsp->backend = vk;
    /* rgb.comp packs byte j of a word at bits 8j, which the host reads as memory order on
     * little-endian hosts only; elsewhere the CPU converts */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    dsp->synthesis_rgb = vk_synthesis_rgb;
#else
    dsp->synthesis_rgb = NULL;
#endif
}
