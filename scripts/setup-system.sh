#!/usr/bin/env bash
# Installs the system libraries Viper uses when they are missing (idempotent). UCX is optional at
# run time: without it the ucx:// transport reports itself unavailable and tcp:// is used instead.
# OpenBLAS (libopenblas.so) backs Smile's LAPACK calls in viper-predictor's curve fitting and cost
# model; without it fitting a loss curve fails with a message saying so (--curve still works).
# Debian's python3-torch and python3-numpy (for /usr/bin/python3) run the Python client's tests and
# examples/python/train_publish.py; without them those tests abort naming what is missing.
# Debian's slurm-wlm and munge let SlurmRecipeIT start a one-node Slurm cluster and submit
# deploy/slurm/viper-kafka.sbatch to it; without them that test is skipped, saying so.
# fio gives `viper bench pfs` the disk's own bound beside its plain direct I/O; without it those
# columns print "-".
set -u
need=()
ldconfig -p 2>/dev/null | grep -q 'libucp\.so' || need+=(libucx0)
[ -e /usr/include/ucp/api/ucp.h ] || need+=(libucx-dev)
ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so ' || need+=(libopenblas-dev)
[ -e /usr/lib/python3/dist-packages/numpy/__init__.py ] || need+=(python3-numpy)
[ -e /usr/lib/python3/dist-packages/torch/__init__.py ] || need+=(python3-torch)
command -v sbatch >/dev/null 2>&1 && [ -x /usr/sbin/slurmd ] && [ -x /usr/sbin/slurmctld ] || need+=(slurm-wlm)
[ -x /usr/sbin/munged ] || need+=(munge)
command -v fio >/dev/null 2>&1 || need+=(fio)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "viper: system packages missing (${need[*]}); without UCX the ucx:// transport is unavailable, without OpenBLAS curve fitting is, without python3-torch/python3-numpy the Python client tests are skipped, without slurm-wlm/munge the Slurm recipe's test is, without fio the PFS bench's fio bound is (install them with apt-get as root)" >&2
  exit 0
fi
echo "viper: installing ${need[*]} (UCX for the ucx:// transport, OpenBLAS for curve fitting, torch and numpy for the Python client, Slurm for the Slurm recipe's test, fio for the PFS bench's bound)..." >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }; then
  echo "viper: could not install ${need[*]}; the ucx:// transport, curve fitting, the Python client, the Slurm recipe's tests or the PFS bench's fio bound will be unavailable" >&2
fi
exit 0
