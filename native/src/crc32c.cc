// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of Kafka's RecordBatch v2.
// Two kernels: the SSE4.2 crc32 instruction, 8 bytes per step, picked at runtime when the CPU has it;
// and a table-driven slicing-by-8 fallback whose tables are computed at compile time (const, so the
// addon keeps no mutable globals and is safe in every worker thread).
#include "crc32c.h"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define SKEIN_HAVE_X86_CRC 1
#endif

#include <array>
#include <cstring>

namespace skein {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t crc = i;
    for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ kPolynomial : crc >> 1;
    t[0][i] = crc;
  }
  // t[k][i] is the CRC of byte i followed by k zero bytes: lets one step fold 8 input bytes.
  for (uint32_t i = 0; i < 256; i++) {
    for (int k = 1; k < 8; k++) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

inline uint32_t Load32LE(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

}  // namespace

uint32_t Crc32cSoftware(uint32_t crc, const uint8_t* p, size_t n) {
  const auto& t = kTables;
  while (n >= 8) {
    uint32_t lo = crc ^ Load32LE(p);
    uint32_t hi = Load32LE(p + 4);
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#ifdef SKEIN_HAVE_X86_CRC

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(uint32_t crc, const uint8_t* p, size_t n) {
  // Align first so the 8-byte loads never straddle a cache line more than they must.
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    crc = _mm_crc32_u8(crc, *p++);
    n--;
  }
#if defined(__x86_64__)
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  crc = static_cast<uint32_t>(c);
#endif
  while (n >= 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    crc = _mm_crc32_u32(crc, v);
    p += 4;
    n -= 4;
  }
  while (n-- > 0) crc = _mm_crc32_u8(crc, *p++);
  return crc;
}

bool CpuHasCrc32c() {
  return __builtin_cpu_supports("sse4.2");
}

#else

uint32_t Crc32cHardware(uint32_t crc, const uint8_t* p, size_t n) {
  return Crc32cSoftware(crc, p, n);
}

bool CpuHasCrc32c() {
  return false;
}

#endif

}  // namespace skein
