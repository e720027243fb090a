// Whether this test binary runs under AddressSanitizer (scripts/sanitize.sh), for the few tests whose
// allocation failures or wall-time margins differ there.
#pragma once

namespace onnxserve::testing {

inline constexpr bool kUnderAddressSanitizer =
#if defined(__SANITIZE_ADDRESS__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

}  // namespace onnxserve::testing
