# Shared pieces of the benchmark scripts (sourced, not run).
# Loopback only; every wrk run is bounded by its duration.

bench_setup() {
  cd "$(dirname "$0")/.."
  duration="${DURATION:-10s}"
  conns="${CONNECTIONS:-64}"
  workers="${WORKERS:-$(nproc)}"
  threads="${WRK_THREADS:-$(nproc)}"
  scripts/install-deps >/dev/null
  swift build -c release --product bench-server >/dev/null
  bin="$(swift build -c release --show-bin-path)"
  tmp="$(mktemp -d)"
  pids=()
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for f in "$tmp"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  sleep 0.2
  rm -rf "$tmp"
}

# nginx_start NAME WORKERS 'server block'
nginx_start() {
  local name="$1" n="$2" block="$3"
  mkdir -p "$tmp/$name"
  cat > "$tmp/$name/nginx.conf" <<NGINX
worker_processes $n;
worker_rlimit_nofile 20000;
pid $tmp/$name.pid;
error_log $tmp/$name/error.log crit;
events { worker_connections ${NGINX_WORKER_CONNECTIONS:-4096}; }
http {
  access_log off;
  keepalive_requests 1000000;
  $block
}
NGINX
  nginx -c "$tmp/$name/nginx.conf" -p "$tmp/$name"
}

# haproxy_start NAME THREADS PORT UPSTREAM-PORT: HAProxy in front of 127.0.0.1:UPSTREAM-PORT,
# with the same work as the nginx front (a static Authorization header, kept-alive upstream
# connections reused across clients); its pid in $tmp/NAME.pid.
haproxy_start() {
  local name="$1" n="$2" port="$3" up="$4"
  cat > "$tmp/$name.cfg" <<HAPROXY
global
  nbthread $n
  maxconn 8000
  pidfile $tmp/$name.pid
defaults
  mode http
  maxconn 8000
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
  http-reuse always
frontend front
  bind 127.0.0.1:$port backlog 4096
  http-request set-header Authorization "Bearer benchmark-static-token"
  default_backend up
backend up
  server up 127.0.0.1:$up maxconn 64
HAPROXY
  haproxy -D -f "$tmp/$name.cfg"
  local i
  for i in $(seq 50); do [ -s "$tmp/$name.pid" ] && return 0; sleep 0.1; done
  echo "haproxy did not start"; return 1
}

# rss_kib PID...: resident set size summed over the processes and their children
rss_kib() {
  local total=0 p
  for p in "$@" $(for q in "$@"; do pgrep -P "$q"; done); do
    total=$((total + $(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

# wrk_parse WRK-OUTPUT: sets rps, p50, p99, requests and errors from wrk's report.
wrk_parse() {
  rps="$(awk '/^Requests\/sec/ {print $2}' <<<"$1")"
  p50="$(awk '$1=="50%" {print $2}' <<<"$1")"
  p99="$(awk '$1=="99%" {print $2}' <<<"$1")"
  requests="$(awk '/requests in/ {print $1}' <<<"$1")"
  errors="$(awk '/Non-2xx|Socket errors/ {print}' <<<"$1" | tr '\n' ' ')"
}

# wrk_row NAME URL [extra wrk args]: prints "| name | rps | p50 | p99 |" and sets rps/p50/p99
wrk_row() {
  local name="$1" url="$2"; shift 2
  wrk_parse "$(wrk -t"$threads" -c"$conns" -d"$duration" --latency "$@" "$url")"
  printf '| %s | %s | %s | %s | %s |\n' "$name" "$rps" "$p50" "$p99" "${errors:-none}"
}

# to_ms "1.23ms" | "850.00us" | "1.2s" -> milliseconds
to_ms() {
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n = n; else if (v ~ /s$/) n *= 1000; print n }'
}

# The cost model: figures noise moves little, from the proxy's own processes.

# proc_family PID...: the processes and their children (nginx's master and workers).
proc_family() {
  local q
  for q in "$@"; do echo "$q"; pgrep -P "$q" || true; done
}

# cpu_ticks PID...: user + system clock ticks of the processes and their children
# (/proc/PID/stat fields 14 and 15 include every thread of a process).
cpu_ticks() {
  local total=0 p
  for p in $(proc_family "$@"); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

# warm_up URL...: WARMUP (2s; 0: none) of the same wrk command on each URL, not recorded.
# Without it the first round also opens the proxies' upstream connections and grows their
# heaps (AuthGate's first round showed a p99 two to three times the second's).
warm_up() {
  [ "${WARMUP:-2s}" = 0 ] && return 0
  local url
  for url in "$@"; do wrk -t"$threads" -c"$conns" -d"${WARMUP:-2s}" "$url" > /dev/null; done
}

# wrk_cpu_row NAME URL PID...: like wrk_row, and also the CPU time the processes used per
# request wrk completed, in microseconds (sets cpu_us).
wrk_cpu_row() {
  local name="$1" url="$2"; shift 2
  local before after out
  before="$(cpu_ticks "$@")"
  out="$(wrk -t"$threads" -c"$conns" -d"$duration" --latency "$url")"
  after="$(cpu_ticks "$@")"
  wrk_parse "$out"
  cpu_us="$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$requests" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')"
  printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$rps" "$p50" "$p99" "$cpu_us" "${errors:-none}"
}

# syscall_row NAME URL REQUESTS PID...: runs exactly REQUESTS requests (wrk stops each
# thread after its share) with `strace -c -f` attached to the processes and their threads,
# and prints the system calls per request, in total and for the six most frequent.
syscall_row() {
  local name="$1" url="$2" n="$3"; shift 3
  local per=$((n / threads)) attach=() p
  cat > "$tmp/count.lua" <<LUA
local done = 0
function response(status, headers, body)
  done = done + 1
  if done >= $per then wrk.thread:stop() end
end
LUA
  for p in $(proc_family "$@"); do attach+=(-p "$p"); done
  strace -c -f -o "$tmp/strace.txt" "${attach[@]}" 2>/dev/null &
  local tracer=$!
  sleep 1
  wrk -t"$threads" -c"$conns" -d60s -s "$tmp/count.lua" "$url" > "$tmp/wrk-count.txt"
  kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
  wrk_parse "$(cat "$tmp/wrk-count.txt")"
  local done_requests=$requests
  awk -v n="$done_requests" -v name="$name" '
    $NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" { calls[$NF] = $4 }
    $NF == "total" { total = $4 }
    END {
      top = ""
      for (k = 0; k < 6; k++) {
        best = ""; for (s in calls) if (best == "" || calls[s] > calls[best]) best = s
        if (best == "") break
        top = top sprintf("%s %.2f, ", best, calls[best] / n); delete calls[best]
      }
      sub(/, $/, "", top)
      printf "| %s | %d | %.2f | %s |\n", name, n, total / n, top
    }' "$tmp/strace.txt"
}

# authgate_serve ROUTES-JSON [AUTHORIZATION-JSON] [MORE-FIELDS-JSON]: starts the release
# `authgate serve` with proxy 127.0.0.1:18102, admin 127.0.0.1:18103 (token in
# $tmp/admin-token), its state in $tmp/state and $workers loops; sets ag to its pid and
# waits until its admin listener answers. AUTHGATE_BIN=PATH serves with that binary instead
# of this checkout's release build.
authgate_serve() {
  local routes="$1"
  local authorization="${2:-{\"tokenEndpoint\": \"http://127.0.0.1:18109/token\", \"clientID\": \"bench\"\}}"
  local more="${3:-}"
  # AUTHGATE_BIN runs another build (say, an earlier commit's) under the same load.
  local exe="${AUTHGATE_BIN:-}"
  if [ -z "$exe" ]; then
    swift build -c release --product authgate >/dev/null
    exe="$bin/authgate"
  fi
  mkdir -p -m 700 "$tmp/state"
  [ -s "$tmp/admin-token" ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/admin-token"
  chmod 600 "$tmp/admin-token"
  cat > "$tmp/authgate.json" <<JSON
{
  "proxy": {"host": "127.0.0.1", "port": 18102},
  "admin": {"host": "127.0.0.1", "port": 18103},
  "adminTokenFile": "$tmp/admin-token",
  "authorization": $authorization,
  "routes": $routes,
  "stateDirectory": "$tmp/state", "createKey": true, "keyFile": "$tmp/state/key",
  "loops": $workers, "maxConnections": 30000${more:+, $more}
}
JSON
  "$exe" serve --config "$tmp/authgate.json" --log-level "${LOG_LEVEL:-info}" > "$tmp/ag.log" 2>&1 &
  ag=$!
  pids+=("$ag")
  local i
  for i in $(seq 200); do
    curl -fsS -o /dev/null http://127.0.0.1:18103/livez 2>/dev/null && return 0
    kill -0 "$ag" 2>/dev/null || { echo "authgate serve exited:"; cat "$tmp/ag.log"; return 1; }
    sleep 0.1
  done
  echo "authgate serve did not answer /livez:"; cat "$tmp/ag.log"; return 1
}
