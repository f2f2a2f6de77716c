-- A call under limits or a circuit breaker ended (handlers/dataplane/edge.py): its slot is
-- given back and its outcome told to the circuit, atomically. TIME: Valkey's clock.
-- KEYS: 1 slots   2 this workspace's slots   3 circuit (hash)   4 failures (zset holder -> ms)
-- ARGV: 1 holder   2 outcome: 1 the upstream failed, 0 it answered, -1 never reached
--       3 circuit breaker (1/0)   4 failure threshold   5 window ms   6 cooldown ms
--       7 this call was the half-open probe (1/0)   8 it holds a slot: 0 none, 1 one,
--       2 one in its workspace's share too
-- Returns the state the circuit moved to ('open', 'closed'), or '' when it did not move.
local call, A = redis.call, ARGV
local holder, outcome = A[1], tonumber(A[2])
if A[8] ~= '0' then call('ZREM', KEYS[1], holder) end
if A[8] == '2' then call('ZREM', KEYS[2], holder) end
if A[3] ~= '1' or (outcome ~= 1 and A[7] ~= '1') then return '' end
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local C = KEYS[3]
local function open(failures)
  call('HSET', C, 'state', 'open', 'openedAt', now, 'cooldown', A[6], 'failures', failures)
  call('HDEL', C, 'probe', 'probeUntil')
  return 'open'
end
if A[7] == '1' and call('HGET', C, 'probe') == holder then
  if outcome == 1 then return open(tonumber(call('HGET', C, 'failures') or A[4])) end
  if outcome == 0 then
    call('DEL', C, KEYS[4])
    return 'closed'
  end
  call('HSET', C, 'probeUntil', 0)  -- it never reached the upstream: another call probes
  return ''
end
if outcome ~= 1 then return '' end
local state = call('HGET', C, 'state')
if state == 'open' or state == 'half_open' then return '' end
local window = tonumber(A[5])
call('ZADD', KEYS[4], now, holder)
call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - window)
call('PEXPIRE', KEYS[4], window)
local failures = call('ZCARD', KEYS[4])
if failures >= tonumber(A[4]) then return open(failures) end
return ''
