-- wrk: POST Apple notifications, a different signed JWS on every request.
-- Arguments: a file of JWSs, one per line; the number of wrk threads; optionally a pause in milliseconds before each
-- request of a connection (a paced burst; 0: none) and how many of the file's first lines to skip (those an earlier
-- run sent). Thread i of n sends lines i, i+n, i+2n, ... so no two threads send the same one; a thread that runs out
-- starts again at its first line (Orchard then answers "duplicate"), and reports how many times it wrapped.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  payloads, index, wraps = {}, 0, 0
  pace = tonumber(args[3] or "0")
  local skip = tonumber(args[4] or "0")
  local line_no = 0
  for line in io.lines(args[1]) do
    if line_no >= skip and line_no % tonumber(args[2]) == id then
      payloads[#payloads + 1] = '{"payload":"' .. line .. '"}'
    end
    line_no = line_no + 1
  end
  assert(#payloads > 0, "no payloads for thread " .. id)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function delay()
  return pace
end

function request()
  index = index + 1
  if index > #payloads then
    index, wraps = 1, wraps + 1
  end
  return wrk.format(nil, nil, nil, payloads[index])
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + (thread:get("wraps") or 0)
  end
  io.write(string.format("lua: wraps %d\n", total))
end
