-- Commit a batch of state-machine transitions of one partition; each is atomic on its
-- own (a Lua script runs whole), and every key is in the partition's slot.
-- KEYS[1] the partition's step stream; KEYS[2..] keys named by the records
-- ARGV[1] group  ARGV[2] done ttl (s)
-- ARGV[3] msgpack array of records:
--   {ack id|'', done key idx|0, expect key idx|0, expected version|'', answers 0|1, root id,
--    deadlines key idx|0, ops}
--   op = {name, key idx, a, b, c}
-- Returns one verdict per record, from the table V that handlers/store.py renders above
-- this line out of its Verdict enum (the one definition both sides read).
-- A record never fails halfway: every check (key types, the done key, every expected
-- version, the commandId guard) runs before its first write. A record refused for a key
-- of the wrong type (WRONG_TYPE) is not acked: the caller may redirect and retry it.
local function ack(id)
  if id ~= '' then
    redis.call('XACK', KEYS[1], ARGV[1], id)
    redis.call('XDEL', KEYS[1], id)
  end
end

-- The type each op needs its key to be (absent is fine: the write creates it).
local WANTS = {state = 'hash', expect = 'hash', step = 'stream', pub = 'stream',
               xadd = 'stream', log = 'stream', zadd = 'zset', guardnx = 'string',
               setex = 'string'}
local types = {}

local function fits(key, want)
  local t = types[key]
  if t == nil then
    t = redis.call('TYPE', key)['ok']
    types[key] = t
  end
  return t == 'none' or t == want
end

local expiring = {}

local function apply(o)
  local op, key = o[1], KEYS[o[2]]
  if op == 'guardnx' then
    redis.call('SET', key, o[3], 'EX', o[4])
  elseif op == 'state' then
    redis.call('HSET', key, 'v', o[3], 's', o[4])
    redis.call('EXPIRE', key, o[5])
  elseif op == 'step' then
    redis.call('XADD', key, '*', 'd', o[3])
  elseif op == 'pub' then
    if o[4] ~= 0 then
      redis.call('XADD', key, 'MAXLEN', '~', o[4], '*', 'data', o[3])
    else
      redis.call('XADD', key, '*', 'data', o[3])
    end
    if o[5] ~= '' and o[5] ~= 0 then redis.call('EXPIRE', key, o[5]) end  -- a debug stream's ttl
  elseif op == 'xadd' then
    redis.call('XADD', key, '*', 'k', o[3], 't', o[4], 'd', o[5])
  elseif op == 'log' then
    redis.call('XADD', key, 'MAXLEN', '~', '512', '*', 'd', o[3])
    if not expiring[key] then  -- once per event stream and call: one execution logs many
      redis.call('EXPIRE', key, o[4])
      expiring[key] = true
    end
  elseif op == 'setex' then
    redis.call('SET', key, o[3], 'EX', o[4])
  elseif op == 'zadd' then
    redis.call('ZADD', key, o[3], o[4])
  end
end

-- The verdict of a record's checks, or nil when it may be written. Reads only.
local function check(id, done, expect, version, answers, deadlines, ops)
  if done ~= 0 and redis.call('EXISTS', KEYS[done]) == 1 then return V.ALREADY_ANSWERED end
  if (expect ~= 0 and not fits(KEYS[expect], 'hash'))
      or (answers == 1 and deadlines ~= 0 and not fits(KEYS[deadlines], 'zset')) then
    return V.WRONG_TYPE
  end
  for _, o in ipairs(ops) do
    if not fits(KEYS[o[2]], WANTS[o[1]]) then return V.WRONG_TYPE end
  end
  for _, o in ipairs(ops) do
    if o[1] == 'guardnx' and redis.call('EXISTS', KEYS[o[2]]) == 1 then return V.DUPLICATE end
  end
  if expect ~= 0 and redis.call('HGET', KEYS[expect], 'v') ~= version then return V.STALE end
  for _, o in ipairs(ops) do
    if o[1] == 'expect' and redis.call('HGET', KEYS[o[2]], 'v') ~= o[3] then return V.STALE end
  end
  return nil
end

local function commit(r)
  local id, done, expect, version, answers, root, deadlines, ops =
    r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]
  local refused = check(id, done, expect, version, answers, deadlines, ops)
  if refused == V.WRONG_TYPE then return refused end
  if refused ~= nil then ack(id) return refused end
  if answers == 1 then
    redis.call('SET', KEYS[done], '1', 'EX', ARGV[2])
    redis.call('ZREM', KEYS[deadlines], root)
  end
  for _, o in ipairs(ops) do
    if o[1] ~= 'expect' then apply(o) end
  end
  ack(id)
  return V.COMMITTED
end

local verdicts = {}
for i, r in ipairs(cmsgpack.unpack(ARGV[3])) do verdicts[i] = commit(r) end
return verdicts
