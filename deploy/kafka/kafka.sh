#!/usr/bin/env bash
# Starts, stops and reports a Kafka KRaft cluster on this machine, without containers and without a
# Kafka download: the broker's jars come from Maven (through the project's ./mvnw, the version
# pinned in the parent POM) and run as `java kafka.Kafka server.properties`.
#
#   deploy/kafka/kafka.sh start  [--nodes 1|3] [--port 9092]   start (idempotent: a running cluster is left alone)
#   deploy/kafka/kafka.sh stop                                 stop every node (SIGTERM, SIGKILL after 30 s)
#   deploy/kafka/kafka.sh status                               one line per node; exit 0 when all run, 3 when not
#   deploy/kafka/kafka.sh restart                              stop, then start with the same settings and data
#   deploy/kafka/kafka.sh clean                                stop and delete the data (the jars are kept)
#
# Each node is a combined broker+controller. Node i (1-based) listens for clients on port
# PORT + 2*(i-1) and for the controller quorum on the port after it: the single node uses 9092 and
# 9093, the 3-node variant 9092/9093, 9094/9095 and 9096/9097. The topic replication the Viper
# producer picks follows the cluster size (replication factor min(3, brokers)).
#
# Environment:
#   VIPER_KAFKA_HOME            state directory (default deploy/kafka/.state): jars, configs, data, logs, pid files
#   VIPER_KAFKA_HOST            address to listen on (default 127.0.0.1; use 0.0.0.0 to serve other nodes)
#   VIPER_KAFKA_ADVERTISED_HOST address clients are told to use (default: VIPER_KAFKA_HOST, or `hostname -f` for 0.0.0.0)
#   VIPER_KAFKA_PORT            first client port (default 9092); --port overrides
#   VIPER_KAFKA_NODES           number of nodes, 1 or 3 (default 1); --nodes overrides
#   VIPER_KAFKA_HEAP            heap per node (default 512m)
#   VIPER_KAFKA_START_TIMEOUT   seconds to wait for each node to listen (default 90)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
STATE=${VIPER_KAFKA_HOME:-$SCRIPT_DIR/.state}
HOST=${VIPER_KAFKA_HOST:-127.0.0.1}
PORT=${VIPER_KAFKA_PORT:-9092}
NODES=${VIPER_KAFKA_NODES:-1}
HEAP=${VIPER_KAFKA_HEAP:-512m}
START_TIMEOUT=${VIPER_KAFKA_START_TIMEOUT:-90}

die() { echo "kafka.sh: $*" >&2; exit 1; }

usage() {
  sed -n '6,11p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

parse_options() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) [ $# -ge 2 ] || die "--nodes needs a value (1 or 3)"; NODES=$2; shift 2 ;;
      --nodes=*) NODES=${1#--nodes=}; shift ;;
      --port) [ $# -ge 2 ] || die "--port needs a value"; PORT=$2; shift 2 ;;
      --port=*) PORT=${1#--port=}; shift ;;
      -h|--help) usage 0 ;;
      *) die "unknown option '$1' (see kafka.sh --help)" ;;
    esac
  done
  case "$NODES" in 1|3) ;; *) die "the number of nodes must be 1 or 3, got '$NODES'" ;; esac
  case "$PORT" in ''|*[!0-9]*) die "the port must be a number, got '$PORT'" ;; esac
  [ "$PORT" -ge 1024 ] && [ "$PORT" -le 65000 ] || die "the port must be between 1024 and 65000, got $PORT"
}

advertised_host() {
  if [ -n "${VIPER_KAFKA_ADVERTISED_HOST:-}" ]; then echo "$VIPER_KAFKA_ADVERTISED_HOST"
  elif [ "$HOST" = "0.0.0.0" ]; then hostname -f 2>/dev/null || hostname
  else echo "$HOST"; fi
}

broker_port() { echo $((PORT + 2 * ($1 - 1))); }
controller_port() { echo $((PORT + 2 * ($1 - 1) + 1)); }

# The recorded settings of an existing cluster win over defaults, so that stop/status/restart
# find what start made.
load_recorded() {
  if [ -f "$STATE/cluster.env" ]; then
    # shellcheck disable=SC1091
    . "$STATE/cluster.env"
  fi
}

java_env() {
  # shellcheck disable=SC1091
  . "$ROOT/scripts/java-env.sh" || die "no JDK 25 found (see scripts/java-env.sh)"
}

fetch_jars() {
  if [ -f "$STATE/lib/.complete" ]; then return 0; fi
  echo "kafka.sh: fetching the Kafka broker jars through Maven into $STATE/lib (once)"
  rm -rf "$STATE/lib"
  mkdir -p "$STATE/lib"
  (cd "$ROOT" && ./mvnw -B -q -ntp -f deploy/kafka/pom.xml dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$STATE/lib") >"$STATE/fetch.log" 2>&1 \
    || die "fetching the Kafka jars failed; see $STATE/fetch.log"
  ls "$STATE/lib"/kafka_2.13-*.jar >/dev/null 2>&1 || die "no kafka_2.13 jar in $STATE/lib; see $STATE/fetch.log"
  touch "$STATE/lib/.complete"
}

pid_of() { # prints the pid of node $1 when it runs
  local f="$STATE/node-$1/kafka.pid" pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  case "$pid" in ''|*[!0-9]*) return 1 ;; esac
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka" || return 1
  echo "$pid"
}

listening() { # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

probe_host() { if [ "$HOST" = "0.0.0.0" ]; then echo 127.0.0.1; else echo "$HOST"; fi; }

write_config() { # node
  local i=$1 dir="$STATE/node-$1" voters="" j adv
  adv=$(advertised_host)
  for j in $(seq 1 "$NODES"); do
    voters="${voters:+$voters,}$j@$(advertised_host):$(controller_port "$j")"
  done
  local rf=$(( NODES < 3 ? NODES : 3 ))
  mkdir -p "$dir/data"
  cat >"$dir/server.properties" <<EOF
# Written by deploy/kafka/kafka.sh; rewritten on every start.
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://$HOST:$(broker_port "$i"),CONTROLLER://$HOST:$(controller_port "$i")
advertised.listeners=PLAINTEXT://$adv:$(broker_port "$i")
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
log.cleaner.dedupe.buffer.size=16777216
EOF
}

format_node() { # node
  local i=$1 dir="$STATE/node-$1"
  [ -f "$dir/data/meta.properties" ] && return 0
  java -cp "$STATE/lib/*" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn kafka.tools.StorageTool format \
      -t "$(cat "$STATE/cluster.id")" -c "$dir/server.properties" >"$dir/format.log" 2>&1 \
    || die "formatting the storage of node $i failed; see $dir/format.log"
}

cmd_start() {
  parse_options "$@"
  mkdir -p "$STATE"
  if [ -f "$STATE/cluster.env" ]; then
    local want_nodes=$NODES want_port=$PORT
    load_recorded
    if [ "$want_nodes" != "$NODES" ] || [ "$want_port" != "$PORT" ]; then
      die "the cluster in $STATE was made with $NODES node(s) on port $PORT; run 'kafka.sh clean' first to change that"
    fi
  fi
  java_env
  fetch_jars
  if [ ! -f "$STATE/cluster.id" ]; then
    java -cp "$STATE/lib/*" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn kafka.tools.StorageTool random-uuid >"$STATE/cluster.id" 2>"$STATE/uuid.log" \
      || die "cannot make a cluster id; see $STATE/uuid.log"
  fi
  printf 'NODES=%s\nPORT=%s\nHOST=%s\n' "$NODES" "$PORT" "$HOST" >"$STATE/cluster.env"
  local i pid started=()
  for i in $(seq 1 "$NODES"); do
    if pid=$(pid_of "$i"); then
      echo "kafka node $i already running (pid $pid) on $(advertised_host):$(broker_port "$i")"
      continue
    fi
    rm -f "$STATE/node-$i/kafka.pid"
    if listening "$(probe_host)" "$(broker_port "$i")" || listening "$(probe_host)" "$(controller_port "$i")"; then
      die "port $(broker_port "$i") or $(controller_port "$i") is taken by another process; stop it or use --port"
    fi
    write_config "$i"
    format_node "$i"
    local dir="$STATE/node-$i"
    nohup java -Xms128m -Xmx"$HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=info -Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd\'T\'HH:mm:ss.SSS \
        -cp "$STATE/lib/*" kafka.Kafka "$dir/server.properties" >>"$dir/server.log" 2>&1 </dev/null &
    echo $! >"$dir/kafka.pid"
    started+=("$i")
  done
  for i in "${started[@]}"; do
    local waited=0
    until listening "$(probe_host)" "$(broker_port "$i")"; do
      # kill -0, not pid_of: until the background child has exec'd java its command line is still this
      # script's, and pid_of took a node starting on a busy machine for one that had exited.
      if ! kill -0 "$(cat "$STATE/node-$i/kafka.pid")" 2>/dev/null; then
        echo "kafka.sh: node $i exited during start; last lines of $STATE/node-$i/server.log:" >&2
        tail -n 20 "$STATE/node-$i/server.log" >&2
        exit 1
      fi
      [ "$waited" -lt "$((START_TIMEOUT * 2))" ] || die "node $i did not listen on port $(broker_port "$i") within $START_TIMEOUT s; see $STATE/node-$i/server.log"
      sleep 0.5
      waited=$((waited + 1))
    done
    echo "kafka node $i started (pid $(cat "$STATE/node-$i/kafka.pid")) on $(advertised_host):$(broker_port "$i")"
  done
  echo "notifier URI: kafka://$(bootstrap)"
}

bootstrap() {
  local i out=""
  for i in $(seq 1 "$NODES"); do out="${out:+$out,}$(advertised_host):$(broker_port "$i")"; done
  echo "$out"
}

cmd_stop() {
  load_recorded
  local i pid pids=()
  for i in $(seq 1 "$NODES"); do
    if pid=$(pid_of "$i"); then
      kill -TERM "$pid"
      pids+=("$i:$pid")
    else
      rm -f "$STATE/node-$i/kafka.pid"
    fi
  done
  if [ ${#pids[@]} -eq 0 ]; then
    echo "kafka is not running"
    return 0
  fi
  local entry waited
  for entry in "${pids[@]}"; do
    i=${entry%%:*}; pid=${entry#*:}
    waited=0
    while kill -0 "$pid" 2>/dev/null; do
      if [ "$waited" -ge 60 ]; then
        echo "kafka.sh: node $i (pid $pid) did not stop within 30 s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
        break
      fi
      sleep 0.5
      waited=$((waited + 1))
    done
    rm -f "$STATE/node-$i/kafka.pid"
    echo "kafka node $i stopped (pid $pid)"
  done
}

cmd_status() {
  load_recorded
  if [ ! -f "$STATE/cluster.env" ]; then
    echo "kafka is not running (no cluster in $STATE)"
    return 3
  fi
  local i pid all=0
  for i in $(seq 1 "$NODES"); do
    if pid=$(pid_of "$i"); then
      if listening "$(probe_host)" "$(broker_port "$i")"; then
        echo "kafka node $i running (pid $pid) on $(advertised_host):$(broker_port "$i")"
      else
        echo "kafka node $i starting (pid $pid), not yet listening on $(advertised_host):$(broker_port "$i")"
        all=3
      fi
    else
      echo "kafka node $i not running (port $(broker_port "$i"))"
      all=3
    fi
  done
  [ "$all" -eq 0 ] && echo "notifier URI: kafka://$(bootstrap)"
  return "$all"
}

cmd_clean() {
  cmd_stop
  rm -rf "$STATE"/node-* "$STATE/cluster.id" "$STATE/cluster.env"
  echo "kafka data in $STATE deleted"
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) shift; [ $# -eq 0 ] || die "stop takes no options"; cmd_stop ;;
  status) shift; [ $# -eq 0 ] || die "status takes no options"; cmd_status ;;
  restart) shift; [ $# -eq 0 ] || die "restart takes no options (the recorded settings are used)"; cmd_stop; load_recorded; cmd_start --nodes "$NODES" --port "$PORT" ;;
  clean) shift; [ $# -eq 0 ] || die "clean takes no options"; cmd_clean ;;
  -h|--help|help) usage 0 ;;
  "") usage 2 ;;
  *) die "unknown command '$1' (start, stop, status, restart, clean)" ;;
esac
