#!/usr/bin/env bash
# Fresh-machine set-up: installs the Debian packages DistOpt needs, configures
# and builds it, and runs dist-opt on the bundled example model.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DIST_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build" all
exec "$root/scripts/example.sh" "$build"
