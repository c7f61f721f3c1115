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
pid $tmp/$name.pid;
error_log $tmp/$name/error.log crit;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  $block
}
NGINX
  nginx -c "$tmp/$name/nginx.conf" -p "$tmp/$name"
}

# rss_kib PID...: resident set size summed over the processes and their children
rss_kib() {
  local total=0 p
  for p in "$@" $(for q in "$@"; do pgrep -P "$q"; done); do
    total=$((total + $(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

# wrk_row NAME URL [extra wrk args]: prints "| name | rps | p50 | p99 |" and sets rps/p50/p99
wrk_row() {
  local name="$1" url="$2"; shift 2
  local out; out="$(wrk -t"$threads" -c"$conns" -d"$duration" --latency "$@" "$url")"
  rps="$(awk '/^Requests\/sec/ {print $2}' <<<"$out")"
  p50="$(awk '$1=="50%" {print $2}' <<<"$out")"
  p99="$(awk '$1=="99%" {print $2}' <<<"$out")"
  local errors; errors="$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr '\n' ' ')"
  printf '| %s | %s | %s | %s | %s |\n' "$name" "$rps" "$p50" "$p99" "${errors:-none}"
}

# to_ms "1.23ms" | "850.00us" | "1.2s" -> milliseconds
to_ms() {
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n = n; else if (v ~ /s$/) n *= 1000; print n }'
}
