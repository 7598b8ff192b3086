// The binary units PyTorch's allocator and logs count in, and most published runs state.
#pragma once

namespace trainmem {

inline constexpr double kMebibyte = 1024.0 * 1024.0;
inline constexpr double kGibibyte = 1024.0 * kMebibyte;

}  // namespace trainmem
