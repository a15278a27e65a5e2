// Deterministic, platform-independent random numbers for the runtime (data
// shuffling, synthetic data). SplitMix64 (Steele, Lea, Flood 2014): a 64-bit
// counter advanced by the golden-ratio constant and passed through a
// bijective mixer. Not PyTorch's generator: tests that compare with PyTorch
// use --shuffle=false.
#pragma once

#include <cstdint>

namespace dtcrt {

// The SplitMix64 output function: a bijective 64-bit mixer.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Hash of two words (stream derivation: seed x epoch, seed x sample index).
inline uint64_t hash2(uint64_t a, uint64_t b) {
  return mix64(mix64(a + 0x9e3779b97f4a7c15ULL) ^ (b * 0xd6e8feb86659fd93ULL + 0x632be59bd9b4e019ULL));
}

class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix64(state_);
  }
  // Uniform in [0, n) by Lemire's multiply-shift (bias < n / 2^64, negligible).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

private:
  uint64_t state_;
};

// Uniform float in [0, 1) from the top 24 bits of a 64-bit word.
inline float unitFloat(uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

} // namespace dtcrt
