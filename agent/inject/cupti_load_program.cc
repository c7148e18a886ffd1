// Plays the CUDA driver for cupti_injection_test on a machine without a GPU: dlopens the
// library named in argv[1] and calls its InitializeInjection twice (the driver calls it once; a
// second call must be harmless), printing each result, then returns from main so the library's
// exit path runs as it would in a real program.
//
// usage: cupti_load_program LIBRARY
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cupti_load_program LIBRARY\n");
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "cupti_load_program: %s\n", dlerror());
    return 3;
  }
  using InitializeFn = int (*)();
  auto initialize = reinterpret_cast<InitializeFn>(dlsym(library, "InitializeInjection"));
  if (initialize == nullptr) {
    std::fprintf(stderr, "cupti_load_program: no InitializeInjection in %s\n", argv[1]);
    return 4;
  }
  int first = initialize();
  int second = initialize();
  std::printf("InitializeInjection: %d %d\n", first, second);
  return 0;
}
