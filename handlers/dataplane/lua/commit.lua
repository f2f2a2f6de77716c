-- Commit a batch of state-machine transitions. The script runs whole, so each record is
-- atomic with its ack. On a cluster a call holds one partition's records (every key in its
-- slot); on one node, an intake batch's records of every partition share one call.
-- KEYS[1] a step stream (the partition's); KEYS[2..] keys named by the records.
-- ARGV is flat, no msgpack (unpacking a batch's table of tables cost Valkey more than the
-- writes it carried), and says each constant once per call, not once per record:
--   ARGV[1] ttl (s) of a commandId guard and of a done key
--   ARGV[2] ttl (s) of a state and of a log   ARGV[3] ttl (s) of a definition copy
--   ARGV[4] m, then m pairs: key idx of a stream records ack, its group
--   then s, then s triples: key idx of a stream records publish to, MAXLEN ~ (0: none),
--     ttl (0: none; a debug stream's)
--   then the records, one after another:
--     record = ack id ('' for none), ack stream key idx (0), the checks' length, the
--              writes' length (in arguments), the checks, the writes
--     op = key idx * 16 + op (the table OP), then its fields: N[op] arguments in all.
--          OP and N are rendered above this line from handlers/dataplane/store.py's Op and ARITY,
--          which say what each op's fields are.
-- Returns one verdict per record, from the table V that handlers/dataplane/store.py renders above
-- this line out of its Verdict enum (the one definition both sides read).
-- A record never fails halfway: every check (the done key, every expected version, the
-- type of a stream a command named, the commandId guard) runs before its first write. The
-- writer (Store._record) puts the checks in the order of their verdicts' precedence (done
-- key, types, versions) and the guard first among the writes.
-- Keys the runtime owns are not type-checked: only the runtime writes them. A record
-- refused for a key of the wrong type (WRONG_TYPE) is not acked: the caller may redirect
-- and retry it. Acks are gathered and sent once per stream at the end of the call.

local call, A = redis.call, ARGV

local types = {}  -- TYPE of a stream a command named, once per key and call

local function fits(key)
  local t = types[key]
  if t == nil then
    t = call('TYPE', key)['ok']
    types[key] = t
  end
  return t == 'none' or t == 'stream'
end

local acks, order = {}, {}
local i = 5
for _ = 1, tonumber(A[4]) do
  acks[A[i]] = {A[i + 1]}  -- the group first: XACK's argument before the ids
  order[#order + 1] = A[i]
  i = i + 2
end
local maxlen, ttl = {}, {}
local streams = tonumber(A[i])
i = i + 1
for _ = 1, streams do
  local k = tonumber(A[i])
  maxlen[k], ttl[k] = A[i + 1], A[i + 2]
  i = i + 3
end

local expiring = {}
local DONE, TYPE, EXPECT, GUARD, ANSWER = OP.DONE, OP.TYPE, OP.EXPECT, OP.GUARD, OP.ANSWER
local DEFINITION, STATE, DELETE, STEP = OP.DEFINITION, OP.STATE, OP.DELETE, OP.STEP
local PUBLISH, OUTBOX, LOG, APPEND, DEADLINE = OP.PUBLISH, OP.OUTBOX, OP.LOG, OP.APPEND, OP.DEADLINE

-- The verdict of a record's checks, or nil when it may be written. Reads only.
local function check(j, last)
  while j < last do
    local c = tonumber(A[j])
    local op = c % 16
    local key = KEYS[(c - op) / 16]
    if op == DONE then
      if call('EXISTS', key) == 1 then return V.ALREADY_ANSWERED end
    elseif op == TYPE then
      if not fits(key) then return V.WRONG_TYPE end
    elseif op == EXPECT then
      if call('HGET', key, 'v') ~= A[j + 1] then return V.STALE end
    end
    j = j + N[op]
  end
  return nil
end

-- Writes a record whose checks held, in order; DUPLICATE when its commandId guard (its first
-- write: SET NX both checks and claims it) was set before.
local function write(j, last)
  while j < last do
    local c = tonumber(A[j])
    local op = c % 16
    local k = (c - op) / 16
    local key = KEYS[k]
    if op == PUBLISH then  -- data
      local limit = maxlen[k]
      if limit ~= '0' then
        call('XADD', key, 'MAXLEN', '~', limit, '*', 'data', A[j + 1])
      else
        call('XADD', key, '*', 'data', A[j + 1])
      end
      if ttl[k] ~= '0' then call('EXPIRE', key, ttl[k]) end  -- a debug stream's ttl
    elseif op == GUARD then  -- the first write
      if not call('SET', key, A[j + 1], 'NX', 'EX', A[1]) then return V.DUPLICATE end
    elseif op == LOG then  -- the tree's first transition: its log starts here
      call('SET', key, A[j + 1], 'EX', A[2])
    elseif op == ANSWER then  -- the tree's one outcome is claimed: done key, deadline removed
      call('SET', key, '1', 'EX', A[1])
      if A[j + 1] ~= '0' then call('ZREM', KEYS[tonumber(A[j + 1])], A[j + 2]) end
    elseif op == STATE then  -- version, blob
      call('HSET', key, 'v', A[j + 1], 's', A[j + 2])
      call('EXPIRE', key, A[2])
    elseif op == STEP then
      call('XADD', key, '*', 'd', A[j + 1])
    elseif op == OUTBOX then  -- kind, target, data
      call('XADD', key, '*', 'k', A[j + 1], 't', A[j + 2], 'd', A[j + 3])
    elseif op == APPEND then  -- a line; 1: renew the log's ttl
      call('APPEND', key, A[j + 1])
      if A[j + 2] ~= '0' and not expiring[k] then  -- once per log and call: a tree may
        call('EXPIRE', key, A[2])                  -- commit several transitions here
        expiring[k] = true
      end
    elseif op == DELETE then
      call('DEL', key)
    elseif op == DEFINITION then
      call('SET', key, A[j + 1], 'EX', A[3])
    elseif op == DEADLINE then  -- score, root id
      call('ZADD', key, A[j + 1], A[j + 2])
    end
    j = j + N[op]
  end
  return V.COMMITTED
end

local verdicts = {}
local size = #A
while i <= size do
  local id, stream = A[i], A[i + 1]
  local first = i + 4
  local writes = first + tonumber(A[i + 2])
  i = writes + tonumber(A[i + 3])
  local verdict = check(first, writes) or write(writes, i)
  if verdict ~= V.WRONG_TYPE and id ~= '' then
    local ids = acks[stream]
    ids[#ids + 1] = id
  end
  verdicts[#verdicts + 1] = verdict
end
for _, stream in ipairs(order) do
  local ids = acks[stream]
  if #ids > 1 then
    local key = KEYS[tonumber(stream)]
    call('XACK', key, unpack(ids))  -- ids[1] is the group
    call('XDEL', key, unpack(ids, 2))
  end
end
return verdicts
