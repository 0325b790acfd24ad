#!/usr/bin/env bash
# The viper command: finds a JDK 25, builds the CLI on first use (or when sources changed), trains the JVM's
# AOT cache once per build, runs it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$root/scripts/java-env.sh"
lib="$root/viper-cli/target/viper-lib"
stamp="$lib/.built"
classpath="$root/viper-cli/target/viper-cli.jar:$lib/*"
# JDK 25's AOT cache (JEPs 483, 515): the classes a run loads and links, and the profiles of its methods, from one
# training run, so that each command starts with them instead of finding them again (a process's first load of a
# version from the PFS: median 0.645 s without, 0.505 s with it; docs/benchmarks.md). VIPER_AOT=0 goes without.
aot="$lib/viper.aot"
aot_tried="$lib/.aot-trained"
stale() {
  [ -f "$stamp" ] || return 0
  [ -n "$(find "$root" -path "$root/.git" -prune -o \( -name '*.java' -o -name 'pom.xml' -o -path '*/src/main/resources/*' \) -newer "$stamp" -print -quit 2>/dev/null)" ]
}
untrained() {
  [ "${VIPER_AOT:-1}" != 0 ] && [ ! -e "$aot_tried" ]
}
# The training run: the PFS path of bench pfs (a producer's flushes with blocks and without, one consumer's load and
# two at once) at 64 MiB, its page cache left alone, in a directory of its own. A failed training leaves no cache:
# the commands run as they would without one, and the next build tries again.
train() {
  echo "training the JVM's AOT cache for this build (once; VIPER_AOT=0 skips it)..." >&2
  local dir log
  dir="$(mktemp -d)"
  log="$root/viper-cli/target/aot-training.log"
  # bounded: every ./viper started meanwhile waits for it (about 7 s here)
  if timeout 300 "$JAVA_HOME/bin/java" -XX:AOTCacheOutput="$aot" --enable-native-access=ALL-UNNAMED -cp "$classpath" \
      io.viper.cli.ViperMain bench pfs --size 64m --keep-cache --consumers 2 --dir "$dir" >"$log" 2>&1 \
      && [ -s "$aot" ]; then
    rm -f "$log"
  else
    rm -f "$aot"
    echo "viper: no AOT cache, its training failed (log: $log); commands start without one" >&2
  fi
  rm -rf "$dir"
  touch "$aot_tried"
}
if stale || untrained; then
  # One build at a time: a second ./viper started meanwhile waits here, then finds the build fresh
  # (without the lock both cleared viper-lib and built into it at once).
  mkdir -p "$root/viper-cli/target"
  exec 9>"$root/viper-cli/target/.viper-build.lock"
  flock 9
  if stale; then
    echo "building viper..." >&2
    "$root/scripts/setup-system.sh"
    log="$(mktemp)"
    # The class path is every jar in viper-lib: clear it, so that a module renamed or removed since the
    # last build leaves no stale copy behind to shadow the new one (and the AOT cache of the last build with it).
    rm -rf "$lib"
    # No javadoc or sources jars: those are for installing the SDK (scripts/install-sdk).
    if ! (cd "$root" && ./mvnw -B -q -ntp -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true \
        -pl viper-cli -am package >"$log" 2>&1); then
      cat "$log" >&2; rm -f "$log"
      echo "viper: build failed (log above)" >&2; exit 1
    fi
    rm -f "$log"
    touch "$stamp"
  fi
  if untrained; then
    train
  fi
  exec 9>&-
fi
# The cache only for the jars it was trained with: the JVM checks them too, but says so on stdout, which carries
# viper's results (consume's JSON lines); jars rebuilt since (./mvnw package) leave it unused until the next build.
aot_options=()
if [ "${VIPER_AOT:-1}" != 0 ] && [ -s "$aot" ] \
    && [ -z "$(find "$lib" "$root/viper-cli/target/viper-cli.jar" -name '*.jar' -newer "$aot" -print -quit 2>/dev/null)" ]; then
  aot_options=(-XX:AOTCache="$aot" -Xlog:aot*=off)
fi
# UCX writes its native log (a killed peer's ERROR lines, say) to stdout unless told; viper's stdout carries
# its results (consume's JSON lines), so UCX logs to stderr unless the user chose otherwise.
export UCX_LOG_FILE="${UCX_LOG_FILE:-stderr}"
# viper demo rewrites a live status line on stderr only when stderr is a terminal.
if [ -t 2 ]; then export VIPER_STDERR_TTY=1; fi
exec "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED "${aot_options[@]}" ${VIPER_JAVA_OPTS:-} -cp "$classpath" io.viper.cli.ViperMain "$@"
