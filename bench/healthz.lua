-- wrk script for the HTTP ceiling: GET /healthz, same percentile line as replay.lua.
function done(summary, latency, requests)
  io.write(string.format(
    "RESULT requests=%d duration_s=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f non2xx=%d "
      .. "connect_errors=%d read_errors=%d write_errors=%d timeouts=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000, latency.max / 1000,
    summary.errors.status, summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
