-- Commit a batch of state-machine transitions of one partition. The script runs whole, so
-- each record is atomic with its ack, and every key is in the partition's slot.
-- KEYS[1] the partition's step stream; KEYS[2..] keys named by the records
-- ARGV[1] the steps' group  ARGV[2] done ttl (s)  ARGV[3] msgpack array of records
-- ARGV[4] the group of any other stream a record acks (the commands stream, one node only)
--   record = {ack id|'', ack stream idx|0 (0: KEYS[1]), done key idx|0, expect key idx|0,
--             expected version|'', answers, root id, deadlines key idx|0, ops}
--   answers: 0 no; 1 claims the tree's one outcome (done key, deadline removed);
--            2 answers a tree born in this very record: nothing of it outlives the record,
--            so there is no done key to set and no deadline to remove
--   op = {name, key idx, a, b, c}
-- Returns one verdict per record, from the table V that handlers/store.py renders above
-- this line out of its Verdict enum (the one definition both sides read).
-- A record never fails halfway: every check (the done key, every expected version, the
-- type of a stream a command named, the commandId guard) runs before its first write.
-- Keys the runtime owns are not type-checked: only the runtime writes them. A record
-- refused for a key of the wrong type (WRONG_TYPE) is not acked: the caller may redirect
-- and retry it. Acks are gathered and sent once per stream at the end of the call.

local types = {}  -- TYPE of a stream a command named, once per key and call

local function fits(key)
  local t = types[key]
  if t == nil then
    t = redis.call('TYPE', key)['ok']
    types[key] = t
  end
  return t == 'none' or t == 'stream'
end

local acks, order = {}, {}

local function ack(id, stream)
  if id == '' then return end
  local key = stream == 0 and 1 or stream
  if acks[key] == nil then
    acks[key] = {}
    order[#order + 1] = key
  end
  local ids = acks[key]
  ids[#ids + 1] = id
end

local expiring = {}

local function apply(o)
  local op, key = o[1], KEYS[o[2]]
  if op == 'state' then
    redis.call('HSET', key, 'v', o[3], 's', o[4])
    redis.call('EXPIRE', key, o[5])
  elseif op == 'step' then
    redis.call('XADD', key, '*', 'd', o[3])
  elseif op == 'pub' or op == 'pubx' then
    if o[4] ~= 0 then
      redis.call('XADD', key, 'MAXLEN', '~', o[4], '*', 'data', o[3])
    else
      redis.call('XADD', key, '*', 'data', o[3])
    end
    if o[5] ~= '' and o[5] ~= 0 then redis.call('EXPIRE', key, o[5]) end  -- a debug stream's ttl
  elseif op == 'xadd' then
    redis.call('XADD', key, '*', 'k', o[3], 't', o[4], 'd', o[5])
  elseif op == 'logset' then  -- the tree's first transition: its log starts here
    redis.call('SET', key, o[3], 'EX', o[4])
  elseif op == 'logadd' then
    redis.call('APPEND', key, o[3])
    if o[4] ~= 0 and not expiring[key] then  -- once per log and call: a tree may commit
      redis.call('EXPIRE', key, o[4])          -- several transitions here
      expiring[key] = true
    end
  elseif op == 'del' then
    redis.call('DEL', key)
  elseif op == 'setex' then
    redis.call('SET', key, o[3], 'EX', o[4])
  elseif op == 'zadd' then
    redis.call('ZADD', key, o[3], o[4])
  end
end

-- The verdict of a record's checks, or nil when it may be written. Reads only.
local function check(done, expect, version, ops)
  if done ~= 0 and redis.call('EXISTS', KEYS[done]) == 1 then return V.ALREADY_ANSWERED end
  for _, o in ipairs(ops) do
    if o[1] == 'pubx' and not fits(KEYS[o[2]]) then return V.WRONG_TYPE end
  end
  if expect ~= 0 and redis.call('HGET', KEYS[expect], 'v') ~= version then return V.STALE end
  for _, o in ipairs(ops) do
    if o[1] == 'expect' and redis.call('HGET', KEYS[o[2]], 'v') ~= o[3] then return V.STALE end
  end
  return nil
end

local function commit(r)
  local id, stream, done, expect, version, answers, root, deadlines, ops =
    r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]
  local refused = check(done, expect, version, ops)
  if refused == V.WRONG_TYPE then return refused end
  if refused ~= nil then ack(id, stream) return refused end
  -- The commandId guard is the first write: SET NX both checks and claims it.
  for _, o in ipairs(ops) do
    if o[1] == 'guardnx' and not redis.call('SET', KEYS[o[2]], o[3], 'NX', 'EX', o[4]) then
      ack(id, stream)
      return V.DUPLICATE
    end
  end
  if answers == 1 then
    redis.call('SET', KEYS[done], '1', 'EX', ARGV[2])
    if deadlines ~= 0 then redis.call('ZREM', KEYS[deadlines], root) end
  end
  for _, o in ipairs(ops) do apply(o) end
  ack(id, stream)
  return V.COMMITTED
end

local verdicts = {}
for i, r in ipairs(cmsgpack.unpack(ARGV[3])) do verdicts[i] = commit(r) end
for _, key in ipairs(order) do
  local group = key == 1 and ARGV[1] or ARGV[4]
  redis.call('XACK', KEYS[key], group, unpack(acks[key]))
  redis.call('XDEL', KEYS[key], unpack(acks[key]))
end
return verdicts
