// The version of this rankscope build (the CMake project version), for reports and agents.
#pragma once

#ifndef RANKSCOPE_VERSION
#error "RANKSCOPE_VERSION is set by core/CMakeLists.txt for every target that links core"
#endif

namespace rankscope {

inline constexpr char kRankscopeVersion[] = RANKSCOPE_VERSION;

}  // namespace rankscope
