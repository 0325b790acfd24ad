#!/usr/bin/env bash
# Runs Viper's GPU tests (JUnit tag "gpu") from a bundle made by scripts/gpu-bundle.sh, on a machine
# with an NVIDIA driver and no Java. Run it inside the unpacked bundle (it is copied there as
# gpu-tests.sh), or from the repository after scripts/gpu-bundle.sh (it then uses target/gpu-bundle).
# Extra arguments go to the JUnit console launcher, e.g. --select-class io.viper.transfer.cuda.GpuProviderGpuTest
# Environment: VIPER_GPU_BENCH_SIZES (default 1g,4.6g), VIPER_GPU_FIGURES (file the latency table is appended to).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -d "$here/runtime" ]; then bundle=$here; else bundle=$here/../target/gpu-bundle; fi
[ -x "$bundle/runtime/bin/java" ] || { echo "gpu-tests: no bundle at $bundle: run scripts/gpu-bundle.sh first" >&2; exit 2; }
cd "$bundle"
if [ $# -eq 0 ]; then set -- --scan-classpath test-classes; fi
exec ./runtime/bin/java --enable-native-access=ALL-UNNAMED -Xmx4g -cp "lib/*:test-classes" \
  org.junit.platform.console.ConsoleLauncher execute --include-tag gpu --details=tree --disable-banner "$@"
