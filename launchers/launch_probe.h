// What this machine says about a launch, asked before it is planned or run: the MPI flavour
// behind a plain mpirun (its --version), torchrun's interpreter, where a program is in PATH, and
// why a local mpirun's program cannot start. Reads files and runs `LAUNCHER --version`; the
// planning itself (launch_plan.h) stays pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launchers/launch_plan.h"

namespace rankscope {

// Asks this machine: `LAUNCHER --version` for a plain mpirun/mpiexec (HYDRA or Intel MPI:
// kHydra), and the interpreter of the torchrun found in PATH (ScriptPython).
LaunchContext DetectLaunchContext(const std::vector<std::string>& command);

// The first executable NAME in PATH (an empty entry is the current directory, as for execvp), NAME
// itself when it has a '/', or "" when there is none.
std::string InPath(const std::string& name);

// The Python interpreter a console script at `path` runs with: from its "#!" line
// (`#!/usr/bin/env [-S] python3` gives python3), or, under pip's "#!/bin/sh" for paths too long
// for a shebang, from its exec line; empty when neither names a Python.
std::string ScriptPython(const std::string& path);

// Why the program of an mpirun/mpiexec launch on this host alone cannot start here: it is neither
// in PATH nor in the working directory, or not an executable file ("/x/prog: No such file or
// directory", "...: Permission denied"). nullopt when it can, when the launch may run elsewhere
// (LaunchSpansHosts) or in another directory (-wdir, --path, ...), and for other launchers. mpirun
// then says why itself, with its own exit code (Open MPI: 132), once it is run as given.
std::optional<std::string> ProgramProblemHere(const LaunchPlan& plan, int slurm_nodes);

}  // namespace rankscope
