-- wrk's results as one JSON line after its text report (wrk prints only text otherwise), for
-- `echomark import --from wrk`: keep-alive POST requests carrying BODY_BYTES bytes (env, default 1,024), and at
-- the end the requests, bytes, errors, status-code failures and latency percentiles wrk
-- measured, in microseconds. wrk does not tell a script its connection count: pass it as
-- CONNECTIONS. Usage: CONNECTIONS=16 wrk -s scripts/wrk-json.lua -t1 -c16 -d2s URL
local body_bytes = tonumber(os.getenv("BODY_BYTES") or "1024")
wrk.method = "POST"
wrk.body = string.rep("x", body_bytes)
wrk.headers["Content-Type"] = "application/octet-stream"

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local percentiles = {}
  for _, p in ipairs({ 50, 75, 90, 99, 99.9, 99.99 }) do
    table.insert(percentiles, string.format('"%s": %d', tostring(p), latency:percentile(p)))
  end
  local e = summary.errors
  io.write(string.format(
    '{"format": "echomark-wrk-json", "format_version": 1, "threads": %d, "connections": %d, '
      .. '"body_bytes": %d, "duration_us": %d, "requests": %d, "bytes": %d, '
      .. '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, '
      .. '"latency_us": {"min": %d, "max": %d, "mean": %.3f, "stdev": %.3f, "percentiles": {%s}}}\n',
    #threads, tonumber(os.getenv("CONNECTIONS") or "0"), body_bytes, summary.duration,
    summary.requests, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.max, latency.mean, latency.stdev, table.concat(percentiles, ", ")))
end
