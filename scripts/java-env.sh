# Sourced by ./viper, ./scripts/test and .ci/run: finds a JDK 25+ and exports JAVA_HOME.
# Order: $JAVA_HOME if it is 25 or newer, else the newest JDK 25+ under /usr/lib/jvm.
# On failure it prints one line saying what to install and returns 1.

viper_java_major() { # prints the feature version of the java binary $1, or nothing
  "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9][0-9]*\).*/\1/p' | head -n 1
}

viper_find_jdk() {
  local candidate major best="" best_major=0
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
    major=$(viper_java_major "$JAVA_HOME/bin/java")
    if [ -n "$major" ] && [ "$major" -ge 25 ]; then echo "$JAVA_HOME"; return 0; fi
  fi
  for candidate in /usr/lib/jvm/*/; do
    candidate=${candidate%/}
    [ -x "$candidate/bin/java" ] && [ -x "$candidate/bin/javac" ] || continue
    major=$(viper_java_major "$candidate/bin/java")
    [ -n "$major" ] || continue
    if [ "$major" -ge 25 ] && [ "$major" -gt "$best_major" ]; then best=$candidate; best_major=$major; fi
  done
  [ -n "$best" ] && { echo "$best"; return 0; }
  return 1
}

if VIPER_JAVA_HOME=$(viper_find_jdk); then
  export JAVA_HOME="$VIPER_JAVA_HOME"
  export PATH="$JAVA_HOME/bin:$PATH"
else
  echo "viper: no JDK 25 found (JAVA_HOME is '${JAVA_HOME:-unset}', nothing 25+ under /usr/lib/jvm); install one, e.g. Temurin 25 (apt-get install temurin-25-jdk) or set JAVA_HOME to it" >&2
  return 1 2>/dev/null || exit 1
fi
