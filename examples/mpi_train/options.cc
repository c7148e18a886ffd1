#include "options.h"

#include <charconv>
#include <string_view>
#include <system_error>

namespace mpi_train {
namespace {

bool ParseInt(std::string_view text, int* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool ParseMs(std::string_view text, double* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && *out >= 0.0;
}

bool IsValueOption(std::string_view name) {
  static constexpr std::string_view kValueOptions[] = {
      "--steps",      "--compute-ms",       "--elems",     "--slow-rank",   "--slow-ms",
      "--slow-mode",  "--slow-loader-rank", "--loader-ms", "--loader-mode", "--crash-rank",
      "--crash-step", "--compute-name"};
  for (std::string_view option : kValueOptions) {
    if (name == option) return true;
  }
  return false;
}

}  // namespace

std::string Usage() {
  return "usage: mpi_train [options]    (run under mpirun/srun)\n"
         "  A CPU training loop annotated with NVTX: per step the ranges\n"
         "  step > data, compute, allreduce (MPI_Allreduce of --elems floats).\n"
         "  --steps N              steps to run (default 20)\n"
         "  --compute-ms MS        compute time per step, calibrated at start (default 2)\n"
         "  --elems N              floats per allreduce (default 65536)\n"
         "  --slow-rank R          rank R computes --slow-ms longer every step\n"
         "  --slow-ms MS           extra compute on the slow rank (default 30)\n"
         "  --slow-mode spin|sleep busy work (default) or sleep for the extra time\n"
         "  --slow-loader-rank R   rank R's data loading sleeps --loader-ms longer\n"
         "  --loader-ms MS         extra data-loading time (default 25)\n"
         "  --loader-mode M        how the slow loader spends it: sleep (default), read\n"
         "                         (read() from /dev/zero, as a loader reading files does) or\n"
         "                         spin (CPU work, as decoding does)\n"
         "  --crash-rank R         rank R calls abort() at --crash-step\n"
         "  --crash-step S         step of the crash (default steps/2)\n"
         "  --compute-name NAME    the compute phase's NVTX range name (default compute), as\n"
         "                         your code names it (any bytes: what a C string holds)\n"
         "  --pipeline             pipeline stages instead: step > recv (MPI_Recv of --elems\n"
         "                         floats from rank-1), data, compute, send (MPI_Send to rank+1)\n"
         "  --quiet                no progress lines, only the final summary\n"
         "  --help                 this text\n"
         "Rank 0 prints a progress line every 10 steps and a final line\n"
         "  mpi_train: N steps, world W, checksum X, wall Y s\n"
         "whose checksum depends only on steps, world size and elems.\n";
}

std::string ParseOptions(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--quiet") {
      options->quiet = true;
      continue;
    }
    if (arg == "--pipeline") {
      options->pipeline = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      options->help = true;
      continue;
    }
    // Every other option takes a value: "--name value" or "--name=value".
    std::string_view name = arg;
    std::string_view value;
    const size_t eq = arg.find('=');
    if (eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (!IsValueOption(name)) return "unknown option " + std::string(name);
    if (eq == std::string_view::npos) {
      if (i + 1 >= argc) return "option " + std::string(name) + " needs a value";
      value = argv[++i];
    }

    bool ok = false;
    if (name == "--steps") {
      ok = ParseInt(value, &options->steps) && options->steps > 0;
    } else if (name == "--compute-ms") {
      ok = ParseMs(value, &options->compute_ms);
    } else if (name == "--elems") {
      ok = ParseInt(value, &options->elems) && options->elems > 0;
    } else if (name == "--slow-rank") {
      ok = ParseInt(value, &options->slow_rank) && options->slow_rank >= 0;
    } else if (name == "--slow-ms") {
      ok = ParseMs(value, &options->slow_ms);
    } else if (name == "--slow-mode") {
      ok = value == "spin" || value == "sleep";
      options->slow_mode = value == "sleep" ? SlowMode::kSleep : SlowMode::kSpin;
    } else if (name == "--slow-loader-rank") {
      ok = ParseInt(value, &options->slow_loader_rank) && options->slow_loader_rank >= 0;
    } else if (name == "--loader-ms") {
      ok = ParseMs(value, &options->loader_ms);
    } else if (name == "--loader-mode") {
      ok = value == "sleep" || value == "read" || value == "spin";
      options->loader_mode = value == "read"   ? LoaderMode::kRead
                             : value == "spin" ? LoaderMode::kSpin
                                               : LoaderMode::kSleep;
    } else if (name == "--crash-rank") {
      ok = ParseInt(value, &options->crash_rank) && options->crash_rank >= 0;
    } else if (name == "--crash-step") {
      ok = ParseInt(value, &options->crash_step) && options->crash_step >= 0;
    } else if (name == "--compute-name") {
      ok = !value.empty();
      options->compute_name = std::string(value);
    }
    if (!ok) {
      return "bad value '" + std::string(value) + "' for " + std::string(name);
    }
  }

  if (options->crash_step < 0) options->crash_step = options->steps / 2;
  if (options->crash_rank >= 0 && options->crash_step >= options->steps) {
    return "--crash-step " + std::to_string(options->crash_step) + " is not below --steps " +
           std::to_string(options->steps);
  }
  return "";
}

}  // namespace mpi_train
