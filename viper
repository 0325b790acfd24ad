#!/usr/bin/env bash
# The viper command: finds a JDK 25, builds the CLI on first use (or when sources changed), runs it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$root/scripts/java-env.sh"
lib="$root/viper-cli/target/viper-lib"
stamp="$lib/.built"
stale() {
  [ -f "$stamp" ] || return 0
  [ -n "$(find "$root" -path "$root/.git" -prune -o \( -name '*.java' -o -name 'pom.xml' -o -path '*/src/main/resources/*' \) -newer "$stamp" -print -quit 2>/dev/null)" ]
}
if stale; then
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
    # last build leaves no stale copy behind to shadow the new one.
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
  exec 9>&-
fi
# UCX writes its native log (a killed peer's ERROR lines, say) to stdout unless told; viper's stdout carries
# its results (consume's JSON lines), so UCX logs to stderr unless the user chose otherwise.
export UCX_LOG_FILE="${UCX_LOG_FILE:-stderr}"
# viper demo rewrites a live status line on stderr only when stderr is a terminal.
if [ -t 2 ]; then export VIPER_STDERR_TTY=1; fi
exec "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED ${VIPER_JAVA_OPTS:-} -cp "$root/viper-cli/target/viper-cli.jar:$lib/*" io.viper.cli.ViperMain "$@"
