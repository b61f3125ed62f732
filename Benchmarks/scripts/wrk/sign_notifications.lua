-- wrk: have the emulator sign Apple notifications (POST /_emulator/notifications, not sent) and save the JWSs.
-- Arguments: a file of subjects (one per line), an output prefix, the number of JWSs each thread saves.
-- Thread i appends to PREFIX.i and, once it has its share, closes it, creates PREFIX.i.done and stops.
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  subjects, turn, saved = {}, 0, 0
  for line in io.lines(args[1]) do subjects[#subjects + 1] = line end
  prefix, share = args[2], tonumber(args[3])
  out = assert(io.open(prefix .. "." .. id, "w"))
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  turn = turn + 1
  local sub = subjects[(turn + id) % #subjects + 1]
  local kind = (turn % 2 == 0) and "email-disabled" or "email-enabled"
  return wrk.format(nil, nil, nil, string.format(
    '{"type":"%s","sub":"%s","email":"bench@privaterelay.appleid.com","is_private_email":true}', kind, sub))
end

function response(status, headers, body)
  if saved >= share then return end
  local payload = status == 200 and body:match('"payload":"([^"]+)"')
  if payload then
    out:write(payload, "\n")
    saved = saved + 1
    if saved >= share then
      out:close()
      io.open(prefix .. "." .. id .. ".done", "w"):close()
      wrk.thread:stop()
    end
  end
end
