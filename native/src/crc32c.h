// CRC32C (Castagnoli) kernels shared by the addon entry points. See crc32c.cc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace skein {

// Both take and return the raw (pre-/post-inverted) register, so callers chain with ~seed / ~result.
uint32_t Crc32cSoftware(uint32_t crc, const uint8_t* data, size_t length);
uint32_t Crc32cHardware(uint32_t crc, const uint8_t* data, size_t length);

// True when this CPU has the SSE4.2 crc32 instruction (and the build targets x86-64).
bool CpuHasCrc32c();

}  // namespace skein
