#!/usr/bin/env bash
# Installs the system libraries Viper uses when they are missing (idempotent). UCX is optional at
# run time: without it the ucx:// transport reports itself unavailable and tcp:// is used instead.
# OpenBLAS (libopenblas.so) backs Smile's LAPACK calls in viper-predictor's curve fitting and cost
# model; without it fitting a loss curve fails with a message saying so (--curve still works).
set -u
need=()
ldconfig -p 2>/dev/null | grep -q 'libucp\.so' || need+=(libucx0)
[ -e /usr/include/ucp/api/ucp.h ] || need+=(libucx-dev)
ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so ' || need+=(libopenblas-dev)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "viper: system libraries missing (${need[*]}); without UCX the ucx:// transport is unavailable, without OpenBLAS curve fitting is (install them with apt-get as root)" >&2
  exit 0
fi
echo "viper: installing ${need[*]} (UCX for the ucx:// transport, OpenBLAS for curve fitting)..." >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }; then
  echo "viper: could not install ${need[*]}; the ucx:// transport or curve fitting will be unavailable" >&2
fi
exit 0
