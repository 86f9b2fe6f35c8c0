#!/bin/bash
# bench/syscalls.sh: system calls per proxied request, counted exactly.
#
# Each proxy (nginx, the gateway on each HTTP/1.1 engine, the bare engine
# proxies of test/interop/cmd/engineproxy) forwards GET /http/users/42 to
# the harness's echo upstream while `harness load` drives it closed-loop
# on 64 keep-alive connections for 4 s, one proxy at a time; `perf stat`
# counts the proxy process's system calls over that window. Counts do not
# depend on how busy the machine is, unlike the harness's timings: this
# is what bounds a proxy where a system call costs microseconds (see
# docs/BENCHMARKS.md, "The loop wired in").
#
# Needs perf (linux-perf), nginx and root (or perf_event_paranoid <= 0).
# Usage: bench/syscalls.sh [conns]
set -euo pipefail
conns=${1:-64}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/harness" ./bench/harness && go build -o "$work/dubbogw" ./cmd/dubbogw)
(cd "$root/test/interop" && go build -o "$work/engineproxy" ./cmd/engineproxy)
mkdir -p "$work"/{cb,px,fc,uw,sc}
up=127.0.0.1:28100
cat > "$work/nginx.conf" <<CONF
daemon off;
worker_processes auto;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 8192; }
http {
    access_log $work/access.log combined buffer=64k flush=1s;
    client_body_temp_path $work/cb; proxy_temp_path $work/px; fastcgi_temp_path $work/fc;
    uwsgi_temp_path $work/uw; scgi_temp_path $work/sc;
    keepalive_timeout 120s; keepalive_requests 100000000;
    upstream echo { server $up; keepalive 512; keepalive_requests 100000000; keepalive_timeout 90s; }
    server { listen 127.0.0.1:28102; location / { proxy_pass http://echo; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
CONF
gateway_conf() { # engine listen admin
	cat <<CONF
listen: "$2"
admin: {listen: "$3"}
access_log: {output: "$work/access-${1//\//}.log"}
shutdown: {delay: 0s}
server: {engine: $1}
upstreams:
  echo: {targets: [{url: "http://$up"}], pool: {max_idle_per_target: 512}}
routes:
  - {name: http-users, match: {methods: [GET], path: "/http/users/{id}"}, upstream: echo}
CONF
}
gateway_conf loop 127.0.0.1:28111 127.0.0.1:28121 > "$work/gw-loop.yaml"
gateway_conf net/http 127.0.0.1:28112 127.0.0.1:28122 > "$work/gw-nethttp.yaml"

"$work/harness" upstream -listen $up > "$work/up.log" 2>&1 & pids+=($!)
nginx -c "$work/nginx.conf" & pids+=($!)
"$work/dubbogw" run --config "$work/gw-loop.yaml" > "$work/gwl.log" 2>&1 & gl=$!; pids+=($gl)
"$work/dubbogw" run --config "$work/gw-nethttp.yaml" > "$work/gwn.log" 2>&1 & gn=$!; pids+=($gn)
"$work/engineproxy" -engine loop -upstream $up -listen 127.0.0.1:28131 > "$work/el.log" 2>&1 & el=$!; pids+=($el)
"$work/engineproxy" -engine nethttp -upstream $up -listen 127.0.0.1:28132 > "$work/en.log" 2>&1 & en=$!; pids+=($en)
sleep 2
ng=$(pgrep -f "nginx: worker" | paste -sd, -)
printf '%-22s %10s %12s %s\n' proxy requests syscalls per_request
for t in "nginx 28102 $ng" "dubbogw(loop) 28111 $gl" "dubbogw(net/http) 28112 $gn" "bare-loop 28131 $el" "bare-nethttp 28132 $en"; do
	set -- $t
	"$work/harness" load -url "http://127.0.0.1:$2/http/users/42" -conns "$conns" -duration 1s -warmup 0 > /dev/null # warm
	perf stat -e raw_syscalls:sys_enter -p "$3" -x, -o "$work/perf.txt" -- sleep 4.6 &
	p=$!
	sleep 0.3
	"$work/harness" load -url "http://127.0.0.1:$2/http/users/42" -conns "$conns" -duration 4s -warmup 0 > "$work/load.json"
	wait $p
	ok=$(sed -n 's/.*"ok":\([0-9]*\).*/\1/p' "$work/load.json")
	sc=$(grep raw_syscalls "$work/perf.txt" | cut -d, -f1)
	printf '%-22s %10s %12s %s\n' "$1" "$ok" "$sc" "$(awk -v s="$sc" -v o="$ok" 'BEGIN{printf "%.2f", s/o}')"
done
