-- A call's turn under an integration server's or an origin's limits and circuit breaker
-- (handlers/dataplane/edge.py), decided in one atomic step shared by every worker. Reads
-- Valkey's own clock (TIME), so workers' clocks do not matter.
-- KEYS: 1 rate (GCRA: the theoretical arrival time, ms)   2 slots (zset holder -> lease end)
--       3 circuit (hash: state, openedAt, failures, probe, probeUntil)
--       4 active workspaces (zset ws -> last seen)   5 this workspace's rate   6 its slots
-- ARGV: 1 holder   2 lease ms   3 requests per second (0: no rate limit)   4 burst
--       5 max concurrent (0: none)   6 circuit breaker (1/0)   7 the longest wait this call
--       may have (ms)   8 share between workspaces (1/0; origins)   9 the workspace
-- Returns {verdict, ms, probe, to_half_open, slots}:
--   0 go, after ms (a reserved turn; probe 1: this call is the circuit's half-open probe;
--     slots: what it holds, for leave: 0 none, 1 a slot, 2 one in its workspace's share too)
--   1 every slot is taken: ask again in about ms
--   2 no turn within the wait allowed (ms: when one would come)
--   3 the circuit is open (ms: until its cooldown ends, or the probe's lease; the third
--     slot: its failure count, for the caller's message without another round trip)
local call, A = redis.call, ARGV
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holder, lease = A[1], tonumber(A[2])
local rps, burst, maxc = tonumber(A[3]), tonumber(A[4]), tonumber(A[5])
local breaker, max_wait, share = A[6] == '1', tonumber(A[7]), A[8] == '1'
local ACTIVE_MS = 2000  -- a workspace counts for fair sharing this long after its last call

-- 1. the circuit: open within its cooldown, or a probe in flight, stops the call here
local probe = nil
local function turned_away(left)  -- read only here: a call let through pays nothing for it
  return {3, left, tonumber(call('HGET', KEYS[3], 'failures') or 0), 0, 0}
end
if breaker then
  local state = call('HGET', KEYS[3], 'state')
  if state == 'open' then
    local left = tonumber(call('HGET', KEYS[3], 'openedAt') or 0)
      + tonumber(call('HGET', KEYS[3], 'cooldown') or 0) - now
    if left > 0 then return turned_away(left) end
    probe = 'half_open'
  elseif state == 'half_open' then
    local left = tonumber(call('HGET', KEYS[3], 'probeUntil') or 0) - now
    if left > 0 then return turned_away(left) end
    probe = 'again'  -- the probe's caller died: this call probes instead
  end
end

-- 2. fair sharing: how many workspaces call now
local n = 1
if share then
  -- Counted by score, not removed: the key expires when nobody calls, and holds at most
  -- the workspaces that called in its lifetime.
  call('ZADD', KEYS[4], now, A[9])
  call('PEXPIRE', KEYS[4], ACTIVE_MS * 2)
  n = call('ZCOUNT', KEYS[4], now - ACTIVE_MS, '+inf')
end

-- 3. concurrency: a slot is a holder whose lease has not ended (a dead worker's comes back
-- when its lease ends; a live one renews its own). Ended leases are removed only when the
-- slots look full: the usual call pays one ZCARD.
local function full(key, cap)
  if call('ZCARD', key) < cap then return false end
  call('ZREMRANGEBYSCORE', key, '-inf', now)
  return call('ZCARD', key) >= cap
end
if maxc > 0 then
  if full(KEYS[2], maxc) then return {1, 20, 0, 0, 0} end
  if n > 1 and full(KEYS[6], math.ceil(maxc / n)) then return {1, 20, 0, 0, 0} end
end

-- 4. rate: GCRA. A turn is reserved up to max_wait ahead (the caller sleeps until it);
-- shared between workspaces, a workspace gets 1/n of the rate and reserves at most one
-- interval ahead, so one that floods cannot queue turns far in front of another's.
local wait, tat, wtat, T = 0, 0, nil, 0
if rps > 0 then
  T = 1000 / rps
  if n > 1 then
    local wT, wburst = T * n, math.max(1, math.floor(burst / n))
    wtat = math.max(tonumber(call('GET', KEYS[5]) or 0), now)
    local wwait = wtat - wT * (wburst - 1) - now
    if wwait > 0 then return {2, math.ceil(wwait), 0, 0, 0} end
    wtat = wtat + wT
  end
  tat = math.max(tonumber(call('GET', KEYS[1]) or 0), now)
  wait = tat - T * (burst - 1) - now
  if wait < 0 then wait = 0 end
  local horizon = max_wait
  if share then horizon = math.min(max_wait, T) end
  if wait > horizon then return {2, math.ceil(wait), 0, 0, 0} end
  tat = tat + T
end

-- Every check held: take what this call uses.
if rps > 0 then
  call('SET', KEYS[1], tostring(tat), 'PX', math.ceil(tat - now + T * burst) + 1000)
  if wtat then call('SET', KEYS[5], tostring(wtat), 'PX', math.ceil(wtat - now) + ACTIVE_MS) end
end
if maxc > 0 then
  call('ZADD', KEYS[2], now + lease, holder)
  call('PEXPIRE', KEYS[2], lease * 2)  -- the set a dead worker's last slot keeps alive ends
  if n > 1 then
    call('ZADD', KEYS[6], now + lease, holder)
    call('PEXPIRE', KEYS[6], lease * 2)
  end
end
local slots = 0  -- what leave gives back: 1 a slot, 2 one in the workspace's share too
if maxc > 0 then slots = n > 1 and 2 or 1 end
if probe then
  call('HSET', KEYS[3], 'state', 'half_open', 'probe', holder, 'probeUntil', now + lease)
  return {0, math.ceil(wait), 1, probe == 'half_open' and 1 or 0, slots}
end
return {0, math.ceil(wait), 0, 0, slots}
