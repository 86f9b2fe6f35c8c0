#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what is missing (Debian
# packages redis-server, zookeeper, a JRE, libhessian-java, chromium for the
# admin dashboard's headless browser test, nginx for the bench harness's
# smoke test), starts Redis and
# ZooKeeper on free loopback ports unless DUBBOGW_TEST_REDIS_ADDR /
# DUBBOGW_TEST_ZK_ADDR already point at running ones, runs the checks and the
# tests, and stops what it started. It also installs and runs the Hessian
# interop peers (test/peers: node + hessian.js, a JDK + Caucho Hessian) and
# the separate module in test/interop (dubbo-go-hessian2, and a real Apache
# dubbo-go v3.3.0 provider registered in the ZooKeeper started here), and
# the Dubbo peer (test/peers/node-dubbo: node + dubbo-remoting).
#
#   ./scripts/test.sh            everything (what CI runs)
#   ./scripts/test.sh -short     skip the slowest end-to-end tests
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
export CI="${CI:-}"
short="${1:-}"

log() { printf '\n== %s\n' "$*"; }

# --- install -----------------------------------------------------------------
need=()
command -v redis-server >/dev/null || need+=(redis-server)
[ -x /usr/share/zookeeper/bin/zkServer.sh ] || need+=(zookeeper)
command -v java >/dev/null || need+=(default-jre-headless)
command -v javac >/dev/null || need+=(default-jdk-headless)
[ -f /usr/share/java/hessian.jar ] || need+=(libhessian-java)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
command -v chromium >/dev/null || need+=(chromium)
command -v nginx >/dev/null || need+=(nginx)   # bench/harness: dubbogw side by side with nginx
command -v curl >/dev/null || need+=(curl)     # gateway: the TLS listener against an independent client
command -v podman >/dev/null || need+=(podman) # deploy: the image builds (scripts/image.sh)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  if [ "$(id -u)" != 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# hessian.js and dubbo-remoting for the interop tests, exactly as each
# package-lock.json pins them.
for peer in test/peers/node test/peers/node-dubbo; do
  if [ ! -d "$peer/node_modules" ] || [ "$peer/package-lock.json" -nt "$peer/node_modules/.package-lock.json" ]; then
    log "npm ci ($peer)"
    (cd "$peer" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done

# --- services ----------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/dubbogw-test.XXXXXX")
started=()
cleanup() {
  for s in "${started[@]:-}"; do
    case "$s" in
      redis) [ -f "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null || true ;;
      zookeeper) JMXDISABLE=true ZOO_LOG_DIR="$work/zk" /usr/share/zookeeper/bin/zkServer.sh stop "$work/zk/zoo.cfg" >/dev/null 2>&1 || true ;;
    esac
  done
  rm -rf "$work"
}
trap cleanup EXIT

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 20000 ))
    if port_free "$p"; then echo "$p"; return; fi
  done
  echo "no free port found" >&2; exit 1
}
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$(( SECONDS + $1 )) what=$2; shift 2
  until "$@" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then echo "$what did not come up" >&2; return 1; fi
    sleep 0.2
  done
}
redis_ping() { exec 3<>"/dev/tcp/127.0.0.1/$1"; printf 'PING\r\n' >&3; timeout 2 head -c 7 <&3 | grep -q PONG; }
zk_ruok() { exec 3<>"/dev/tcp/127.0.0.1/$1"; printf ruok >&3; timeout 2 cat <&3 | grep -q imok; }

if [ -z "${DUBBOGW_TEST_REDIS_ADDR:-}" ]; then
  port=$(free_port)
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --daemonize yes \
    --dir "$work" --pidfile "$work/redis.pid" --logfile "$work/redis.log"
  started+=(redis)
  wait_for 20 "redis on 127.0.0.1:$port" redis_ping "$port"
  export DUBBOGW_TEST_REDIS_ADDR="127.0.0.1:$port"
  log "redis on $DUBBOGW_TEST_REDIS_ADDR"
fi

if [ -z "${DUBBOGW_TEST_ZK_ADDR:-}" ]; then
  port=$(free_port)
  mkdir -p "$work/zk/data"
  cat >"$work/zk/zoo.cfg" <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$work/zk/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,stat,srvr,mntr,wchs,wchc,wchp,cons
maxClientCnxns=200
CFG
  JMXDISABLE=true ZOO_LOG_DIR="$work/zk" /usr/share/zookeeper/bin/zkServer.sh start "$work/zk/zoo.cfg" >/dev/null
  started+=(zookeeper)
  wait_for 60 "zookeeper on 127.0.0.1:$port" zk_ruok "$port"
  export DUBBOGW_TEST_ZK_ADDR="127.0.0.1:$port"
  log "zookeeper on $DUBBOGW_TEST_ZK_ADDR"
fi

# --- checks ------------------------------------------------------------------
log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; exit 1; fi

log "go vet"
go vet ./...

log "staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# --- tests -------------------------------------------------------------------
log "go test -race"
go test -race -count=1 -timeout 15m $short ./...

# Tests that measure time under load, or allocations, skip themselves (or
# those checks) under the race detector (it slows everything 5-10x and
# makes sync.Pool drop items); they run here without it, one package at a
# time.
log "timed load tests (no race detector): seed incident 003, no lockout by a token flood or a Redis outage, absent interfaces"
go test -count=1 -timeout 10m $short -run 'TestSeedIncident003|TestNoLockout|TestPassthroughAbsentInterfaces' ./gateway/
log "timed test (no race detector): a config push served by three instances within 1 s"
go test -count=1 -timeout 5m $short -run 'TestFleetPushWithinOneSecond' ./configsource/
log "allocation checks (no race detector)"
go test -count=1 -timeout 5m $short -run 'TestSelectAllocatesNothing|TestInvokeAllocations' ./cluster/
go test -count=1 -timeout 5m $short -run 'TestRouteAllocatesNothing' ./governance/
go test -count=1 -timeout 5m $short -run 'Hostile' ./hessian/
log "timed test (no race detector): Dubbo governance rules applied within 1 s of their write"
go test -count=1 -timeout 5m $short -run 'TestZooKeeperGovernanceWithin1s' ./registry/zookeeper/
log "timed load tests (no race detector): SIGTERM under load, 20 drains in a row"
DUBBOGW_DRAIN_RUNS=20 go test -count=1 -timeout 10m $short -run 'TestSIGTERMDrainsUnderLoad' ./cmd/dubbogw/

log "interop module (test/interop): vet, staticcheck, race tests, one pass of each benchmark"
(
  cd test/interop
  go vet ./...
  go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
  go test -race -count=1 -timeout 10m ./...
  go test -run '^$' -bench . -benchtime 1x -count=1 ./...
)

log "fuzz (bounded)"
# Go 1.26's fuzz coordinator may end a run with a bare "context deadline
# exceeded" when -fuzztime expires while a worker is mid-input
# (golang/go#75804, fixed in Go 1.27): no input failed, none is written.
# Exactly that outcome is fuzzed again once; a failing input (written to
# testdata/fuzz and named in the output) or any other failure stops here.
fuzz_target() { # package, target
  local out rc=0
  out=$(go test -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME:-10s}" "$1" 2>&1) || rc=$?
  printf '%s\n' "$out"
  if [ "$rc" -ne 0 ] && ! grep -qE 'Failing input written|panic:' <<<"$out" &&
    awk '/^--- FAIL: /{fails++; getline; if ($0 == "    context deadline exceeded") bare++} END{exit !(fails == 1 && bare == 1)}' <<<"$out"; then
    log "$2: the fuzz coordinator's deadline race (golang/go#75804), no failing input; once more"
    go test -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME:-10s}" "$1"
    return
  fi
  return "$rc"
}
for pkg in $(grep -rlE '^func Fuzz' --include='*_test.go' --exclude-dir=interop --exclude-dir=node_modules . | xargs -n1 dirname | sort -u); do
  for target in $(grep -hoE '^func Fuzz[A-Za-z0-9_]+' "$pkg"/*_test.go | sed 's/func //' | sort -u); do
    fuzz_target "$pkg" "$target"
  done
done
echo
echo "all checks passed"
