-- wrk: GET the URL with a different session's bearer token on each request, round robin over the tokens in the file
-- (one per line), each thread starting at its own offset, so that the check is asked for many sessions at once rather
-- than one. Argument: the file of tokens.
local tokens = {}
local next_index = 1
local thread_count = 0

function setup(thread)
  thread:set("offset", thread_count)
  thread_count = thread_count + 1
end

function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then tokens[#tokens + 1] = line end
  end
  next_index = ((offset or 0) * 7) % #tokens + 1
end

function request()
  local token = tokens[next_index]
  next_index = next_index % #tokens + 1
  return wrk.format(nil, nil, { ["Authorization"] = "Bearer " .. token })
end
