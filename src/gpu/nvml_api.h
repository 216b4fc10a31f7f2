#pragma once
// Our own declarations of the NVML subset gpufleet uses. No NVIDIA header is available (or may be
// copied) here, so the types below are written from NVML's public API reference: value layouts and
// constants must match the driver's ABI exactly, since `libnvidia-ml.so.1` is loaded with dlopen
// and called through these signatures. The fake library in tests/fake_nvml implements the same
// declarations, so the two can never drift apart silently.
//
// Only plain C types appear here; nothing in this header allocates or calls anything.
#include <cstddef>

extern "C" {

using nvmlReturn_t = int;
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;
struct nvmlGpmSample_st;
using nvmlGpmSample_t = nvmlGpmSample_st*;

inline constexpr unsigned NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;
inline constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;

// nvmlIntNvLinkDeviceType_t: what is at the far end of an NVLink.
inline constexpr unsigned int NVML_NVLINK_DEVICE_TYPE_GPU = 0x00;
inline constexpr unsigned int NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01;
inline constexpr unsigned int NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02;
inline constexpr unsigned int NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF;

struct nvmlUtilization_t {
  unsigned int gpu;     // percent of time a kernel ran over the past sample period
  unsigned int memory;  // percent of time device memory was read or written
};

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlMemory_v2_t {
  unsigned int version;  // nvmlMemory_v2 below
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
// NVML's versioned-struct convention: the struct size in the low bits, the version in bits 24..31.
inline constexpr unsigned int NvmlStructVersion(std::size_t size, unsigned int version) {
  return static_cast<unsigned int>(size) | (version << 24U);
}
inline constexpr unsigned int nvmlMemory_v2 = NvmlStructVersion(sizeof(nvmlMemory_v2_t), 2);

struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "00000000:3B:00.0"
};

// Element of nvmlDeviceGetComputeRunningProcesses (unversioned, the oldest ABI).
struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; NVML_VALUE_NOT_AVAILABLE when unknown
};
// Element of the _v2 and _v3 entry points.
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;      // 0xFFFFFFFF when not on a MIG instance
  unsigned int computeInstanceId;  // 0xFFFFFFFF when not on a MIG instance
};
inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp in microseconds
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

inline constexpr unsigned int NVML_TEMPERATURE_GPU = 0;
inline constexpr unsigned int NVML_CLOCK_GRAPHICS = 0;
inline constexpr unsigned int NVML_CLOCK_SM = 1;
inline constexpr unsigned int NVML_CLOCK_MEM = 2;
inline constexpr unsigned int NVML_PCIE_UTIL_TX_BYTES = 0;
inline constexpr unsigned int NVML_PCIE_UTIL_RX_BYTES = 1;
inline constexpr unsigned int NVML_MEMORY_ERROR_TYPE_CORRECTED = 0;
inline constexpr unsigned int NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;
inline constexpr unsigned int NVML_VOLATILE_ECC = 0;
inline constexpr unsigned int NVML_AGGREGATE_ECC = 1;
inline constexpr unsigned int NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0;
inline constexpr unsigned int NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1;
inline constexpr unsigned int NVML_FEATURE_DISABLED = 0;
inline constexpr unsigned int NVML_FEATURE_ENABLED = 1;

// Clock-event (formerly "throttle") reasons, a bit mask.
inline constexpr unsigned long long nvmlClocksEventReasonGpuIdle = 0x1ULL;
inline constexpr unsigned long long nvmlClocksEventReasonApplicationsClocksSetting = 0x2ULL;
inline constexpr unsigned long long nvmlClocksEventReasonSwPowerCap = 0x4ULL;
inline constexpr unsigned long long nvmlClocksEventReasonHwSlowdown = 0x8ULL;
inline constexpr unsigned long long nvmlClocksEventReasonSyncBoost = 0x10ULL;
inline constexpr unsigned long long nvmlClocksEventReasonSwThermalSlowdown = 0x20ULL;
inline constexpr unsigned long long nvmlClocksEventReasonHwThermalSlowdown = 0x40ULL;
inline constexpr unsigned long long nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x80ULL;
inline constexpr unsigned long long nvmlClocksEventReasonDisplayClockSetting = 0x100ULL;

// Common-ancestor levels of nvmlDeviceGetTopologyCommonAncestor, nearest first.
inline constexpr unsigned int NVML_TOPOLOGY_INTERNAL = 0;
inline constexpr unsigned int NVML_TOPOLOGY_SINGLE = 10;
inline constexpr unsigned int NVML_TOPOLOGY_MULTIPLE = 20;
inline constexpr unsigned int NVML_TOPOLOGY_HOSTBRIDGE = 30;
inline constexpr unsigned int NVML_TOPOLOGY_NODE = 40;
inline constexpr unsigned int NVML_TOPOLOGY_SYSTEM = 50;

// Events.
inline constexpr unsigned long long nvmlEventTypeSingleBitEccError = 0x1ULL;
inline constexpr unsigned long long nvmlEventTypeDoubleBitEccError = 0x2ULL;
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID number for XID events
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// Field values: the memory temperature, which has no dedicated getter, and the NVLink data
// counters (cumulative KiB since the driver loaded; scopeId is a link number, or
// NVML_NVLINK_SCOPE_ALL_LINKS for the sum over every link).
inline constexpr unsigned int NVML_FI_DEV_MEMORY_TEMP = 82;
inline constexpr unsigned int NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138;
inline constexpr unsigned int NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139;
inline constexpr unsigned int NVML_NVLINK_SCOPE_ALL_LINKS = 0xFFFFFFFFU;
inline constexpr unsigned int NVML_VALUE_TYPE_DOUBLE = 0;
inline constexpr unsigned int NVML_VALUE_TYPE_UNSIGNED_INT = 1;
inline constexpr unsigned int NVML_VALUE_TYPE_UNSIGNED_LONG = 2;
inline constexpr unsigned int NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3;
inline constexpr unsigned int NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4;
inline constexpr unsigned int NVML_VALUE_TYPE_SIGNED_INT = 5;
union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
};
struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  unsigned int valueType;  // NVML_VALUE_TYPE_*
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};

// GPM (Hopper and later): activity ratios from two samples taken apart in time, each in percent.
// GRAPHICS_UTIL is dcgm-exporter's DCGM_FI_PROF_GR_ENGINE_ACTIVE, SM_UTIL its SM_ACTIVE,
// ANY_TENSOR_UTIL its PIPE_TENSOR_ACTIVE and DRAM_BW_UTIL its DRAM_ACTIVE.
inline constexpr unsigned int NVML_GPM_METRIC_GRAPHICS_UTIL = 1;
inline constexpr unsigned int NVML_GPM_METRIC_SM_UTIL = 2;
inline constexpr unsigned int NVML_GPM_METRIC_SM_OCCUPANCY = 3;
inline constexpr unsigned int NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5;
inline constexpr unsigned int NVML_GPM_METRIC_DRAM_BW_UTIL = 10;
inline constexpr unsigned int NVML_GPM_METRIC_MAX = 210;
inline constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;
inline constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;
struct nvmlGpmSupport_t {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
};
struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};
struct nvmlGpmMetricsGet_t {
  unsigned int version;  // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
};

// vGPU (a host running NVIDIA's vGPU manager): instances are plain numbers.
using nvmlVgpuInstance_t = unsigned int;

}  // extern "C"

namespace gpufleet::gpu {

// The function-pointer types of every NVML entry point gpufleet may call. One alias per symbol
// family; versioned symbols that share a signature share an alias.
extern "C" {
using NvmlInitFn = nvmlReturn_t (*)();
using NvmlShutdownFn = nvmlReturn_t (*)();
using NvmlErrorStringFn = const char* (*)(nvmlReturn_t);
using NvmlSystemGetDriverVersionFn = nvmlReturn_t (*)(char*, unsigned int);
using NvmlDeviceGetCountFn = nvmlReturn_t (*)(unsigned int*);
using NvmlDeviceGetHandleByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using NvmlDeviceGetStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using NvmlDeviceGetPciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using NvmlDeviceGetUtilizationRatesFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using NvmlDeviceGetMemoryInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using NvmlDeviceGetMemoryInfoV2Fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*);
using NvmlDeviceGetTemperatureFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*);
using NvmlDeviceGetUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using NvmlDeviceGetUllFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using NvmlDeviceGetClockInfoFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*);
using NvmlDeviceGetPcieThroughputFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*);
using NvmlDeviceGetTotalEccErrorsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int,
                                                       unsigned long long*);
using NvmlDeviceGetRetiredPagesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*,
                                                     unsigned long long*);
using NvmlDeviceGetRemappedRowsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*,
                                                     unsigned int*, unsigned int*);
using NvmlDeviceGetProcessesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
using NvmlDeviceGetProcessesV1Fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*,
                                                    nvmlProcessInfo_v1_t*);
using NvmlDeviceGetProcessUtilizationFn = nvmlReturn_t (*)(nvmlDevice_t,
                                                           nvmlProcessUtilizationSample_t*,
                                                           unsigned int*, unsigned long long);
using NvmlDeviceGetMigModeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using NvmlDeviceGetMigDeviceHandleByIndexFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                               nvmlDevice_t*);
using NvmlDeviceGetTopologyCommonAncestorFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlDevice_t,
                                                               unsigned int*);
using NvmlDeviceGetNvLinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned int*);
using NvmlDeviceGetNvLinkRemotePciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                            nvmlPciInfo_t*);
// The enum out-parameter is written as unsigned int: the C enum has that size and ABI.
using NvmlDeviceGetNvLinkRemoteDeviceTypeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                               unsigned int*);
using NvmlDeviceGetFieldValuesFn = nvmlReturn_t (*)(nvmlDevice_t, int, nvmlFieldValue_t*);
using NvmlEventSetCreateFn = nvmlReturn_t (*)(nvmlEventSet_t*);
using NvmlDeviceRegisterEventsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long,
                                                    nvmlEventSet_t);
using NvmlEventSetWaitFn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using NvmlEventSetFreeFn = nvmlReturn_t (*)(nvmlEventSet_t);
using NvmlGpmQueryDeviceSupportFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSupport_t*);
using NvmlGpmSampleAllocFn = nvmlReturn_t (*)(nvmlGpmSample_t*);
using NvmlGpmSampleFreeFn = nvmlReturn_t (*)(nvmlGpmSample_t);
using NvmlGpmSampleGetFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpmSample_t);
using NvmlGpmMetricsGetFn = nvmlReturn_t (*)(nvmlGpmMetricsGet_t*);
// nvmlDeviceGetEncoderUtilization / nvmlDeviceGetDecoderUtilization: percent, sampling period (us).
using NvmlDeviceGetCodecUtilizationFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*,
                                                         unsigned int*);
using NvmlDeviceGetActiveVgpusFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*,
                                                    nvmlVgpuInstance_t*);
using NvmlVgpuInstanceGetLicenseStatusFn = nvmlReturn_t (*)(nvmlVgpuInstance_t, unsigned int*);
}

}  // namespace gpufleet::gpu
