-- wrk script: replays pre-generated raw HTTP requests (scripts/bench.sh writes them).
-- Usage: wrk -s bench/replay.lua ... -- FILE THREADS [LIMIT]
-- Each wrk thread takes every THREADS-th record, so no request is sent by two threads.
-- With LIMIT, a thread replays only its first LIMIT records, round and round (the duplicate pass).

local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  local path, nthreads, limit = args[1], tonumber(args[2]), tonumber(args[3] or "0")
  local file = assert(io.open(path, "rb"))
  requests = {}
  local index = 0
  while true do
    local header = file:read("*l")
    if not header then break end
    local data = file:read(tonumber(header))
    if index % nthreads == id then
      if limit == 0 or #requests < limit then requests[#requests + 1] = data end
    end
    index = index + 1
  end
  file:close()
  issued = 0
  wrapped = 0
end

function request()
  issued = issued + 1
  local position = issued
  if position > #requests then
    wrapped = 1
    position = (position - 1) % #requests + 1
  end
  return requests[position]
end

function done(summary, latency, requests)
  local issued_total, min_issued, wrapped_any = 0, nil, 0
  for _, thread in ipairs(threads) do
    local count = thread:get("issued")
    issued_total = issued_total + count
    if min_issued == nil or count < min_issued then min_issued = count end
    wrapped_any = math.max(wrapped_any, thread:get("wrapped"))
  end
  local errors = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_s=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f non2xx=%d "
      .. "connect_errors=%d read_errors=%d write_errors=%d timeouts=%d issued=%d min_issued_per_thread=%d wrapped=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000, latency.max / 1000,
    errors.status, errors.connect, errors.read, errors.write, errors.timeout, issued_total, min_issued or 0, wrapped_any))
end
