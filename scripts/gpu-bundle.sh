#!/usr/bin/env bash
# Builds a self-contained bundle for running Viper's GPU tests on a machine without Java:
#   target/gpu-bundle/runtime       a jlinked Java 25 runtime (only the modules the tests need)
#   target/gpu-bundle/lib           viper-core, the transports and their runtime/test dependencies,
#                                   the JUnit console launcher, jcuda with only its driver-API native
#   target/gpu-bundle/test-classes  viper-transfer-cuda's compiled tests (the gpu-tagged ones)
#   target/gpu-bundle/gpu-tests.sh  the command to run there (scripts/gpu-tests.sh)
#   target/gpu-bundle/viper         the CLI on that runtime (for `viper bench transfer --paths gpu,...`)
# and target/gpu-bundle.tar.gz of it. Copy the tarball over, unpack, run ./gpu-bundle/gpu-tests.sh.
# Usage: scripts/gpu-bundle.sh            (run from anywhere; needs JDK 25 with jlink, Maven Central)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/java-env.sh

JUNIT_CONSOLE_VERSION=1.14.1   # the JUnit Platform of the parent pom's junit 5.14.1
OUT=target/gpu-bundle
rm -rf "$OUT" target/gpu-bundle.tar.gz
mkdir -p "$OUT/lib" "$OUT/test-classes"

# Jars of viper-core and the cuda transport (package, never install) with every test-scope dependency
# (the other transports are test dependencies of viper-transfer-cuda: the GPU tests compare paths).
./mvnw -B -ntp -q -pl viper-transfer/cuda -am -DskipTests package \
  dependency:copy-dependencies -DincludeScope=test -DexcludeGroupIds=ai.djl -DoutputDirectory="$PWD/$OUT/lib"
# The CLI and its runtime dependencies (viper-cli's package step copies them to target/viper-lib).
./mvnw -B -ntp -q -pl viper-cli -am -DskipTests package
cp viper-cli/target/viper-lib/*.jar "$OUT/lib/"
cp viper-cli/target/viper-cli.jar "$OUT/lib/"
cp viper-core/target/viper-core-*.jar viper-transfer/*/target/viper-transfer-*.jar "$OUT/lib/"
rm -f "$OUT"/lib/viper-transfer-*-tests.jar
rm -f "$OUT"/lib/*-sources.jar "$OUT"/lib/*-javadoc.jar  # what package attaches for installing the SDK
cp -r viper-transfer/cuda/target/test-classes/. "$OUT/test-classes/"
./mvnw -B -ntp -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:$JUNIT_CONSOLE_VERSION \
  -DoutputDirectory="$PWD/$OUT/lib"
# The console launcher brings its own JUnit; drop the separate copies so only one version is on the path.
rm -f "$OUT"/lib/junit-jupiter-*.jar "$OUT"/lib/junit-platform-*.jar "$OUT"/lib/opentest4j-*.jar "$OUT"/lib/apiguardian-*.jar
cp "$HOME/.m2/repository/org/junit/platform/junit-platform-console-standalone/$JUNIT_CONSOLE_VERSION/junit-platform-console-standalone-$JUNIT_CONSOLE_VERSION.jar" "$OUT/lib/" 2>/dev/null || true

# jcuda's natives jar carries four libraries (26 MB); Viper uses only the driver API (JCudaDriver).
natives=$(ls "$OUT"/lib/jcuda-natives-*-linux-x86_64.jar)
work=$(mktemp -d)
(cd "$work" && jar xf "$OLDPWD/$natives" && rm -f lib/libJNvPTXCompiler-* lib/libJNvrtc-* lib/libJCudaRuntime-* && jar cfm "$OLDPWD/$natives.new" META-INF/MANIFEST.MF lib)
mv "$natives.new" "$natives"
rm -rf "$work"
# zstd-jni and snappy (Kafka's compression codecs) carry natives for every platform; keep linux x86-64's.
for jar in "$OUT"/lib/zstd-jni-*.jar "$OUT"/lib/snappy-java-*.jar; do
  zip -q -d "$jar" 'aix/*' 'darwin/*' 'freebsd/*' 'win/*' 'linux/aarch64/*' 'linux/arm*' 'linux/loongarch64/*' 'linux/mips64/*' \
    'linux/ppc64*' 'linux/riscv64/*' 'linux/s390x/*' 'linux/i386/*' 'linux/x86/*' 'org/xerial/snappy/native/[!L]*' \
    'org/xerial/snappy/native/Linux/[!x]*' >/dev/null 2>&1 || [ $? -eq 12 ]
done

# A Java 25 runtime with the modules the tests use (jlink from the running JDK; JDK 25 links without jmods).
jlink --add-modules java.base,java.logging,java.management,jdk.management,java.naming,java.sql,java.xml,jdk.unsupported,jdk.httpserver,jdk.net,java.security.jgss,java.security.sasl \
  --strip-java-debug-attributes --strip-native-debug-symbols objcopy=/usr/bin/objcopy --no-man-pages --no-header-files --compress=zip-9 --output "$OUT/runtime"

cp scripts/gpu-tests.sh "$OUT/gpu-tests.sh"
cat > "$OUT/viper" <<'LAUNCHER'
#!/usr/bin/env bash
# The viper CLI on the bundle's runtime (no ./viper rebuild, no Java needed on this machine).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/runtime/bin/java" --enable-native-access=ALL-UNNAMED ${VIPER_JAVA_OPTS:-} -cp "$here/lib/*" io.viper.cli.ViperMain "$@"
LAUNCHER
chmod +x "$OUT/gpu-tests.sh" "$OUT/viper"
tar -C target -czf target/gpu-bundle.tar.gz gpu-bundle
echo "bundle: $OUT ($(du -sh "$OUT" | cut -f1)), target/gpu-bundle.tar.gz ($(du -h target/gpu-bundle.tar.gz | cut -f1))"
