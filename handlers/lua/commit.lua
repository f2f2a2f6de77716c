-- Commit a batch of state-machine transitions of one partition; each is atomic on its
-- own (a Lua script runs whole), and every key is in the partition's slot.
-- KEYS[1] the partition's step stream; KEYS[2..] keys named by the records
-- ARGV[1] group  ARGV[2] done ttl (s)
-- ARGV[3] msgpack array of records:
--   {ack id|'', done key idx|0, expect key idx|0, expected version|'', answers 0|1, root id,
--    deadlines key idx|0, ops}
--   op = {name, key idx, a, b, c}; 'guardnx' and 'expect' ops are checked before any write
-- Returns one verdict per record: 1 committed, 0 tree already answered, -1 stale, 2 duplicate.
local function ack(id)
  if id ~= '' then
    redis.call('XACK', KEYS[1], ARGV[1], id)
    redis.call('XDEL', KEYS[1], id)
  end
end

local expiring = {}

local function apply(o)
  local op, key = o[1], KEYS[o[2]]
  if op == 'state' then
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

local function commit(r)
  local id, done, expect, version, answers, root, deadlines, ops =
    r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]
  if done ~= 0 and redis.call('EXISTS', KEYS[done]) == 1 then ack(id) return 0 end
  if expect ~= 0 and redis.call('HGET', KEYS[expect], 'v') ~= version then ack(id) return -1 end
  for _, o in ipairs(ops) do
    if o[1] == 'guardnx' and not redis.call('SET', KEYS[o[2]], o[3], 'NX', 'EX', o[4]) then
      ack(id) return 2
    end
    if o[1] == 'expect' and redis.call('HGET', KEYS[o[2]], 'v') ~= o[3] then
      ack(id) return -1
    end
  end
  if answers == 1 then
    redis.call('SET', KEYS[done], '1', 'EX', ARGV[2])
    redis.call('ZREM', KEYS[deadlines], root)
  end
  for _, o in ipairs(ops) do
    if o[1] ~= 'guardnx' and o[1] ~= 'expect' then apply(o) end
  end
  ack(id)
  return 1
end

local verdicts = {}
for i, r in ipairs(cmsgpack.unpack(ARGV[3])) do verdicts[i] = commit(r) end
return verdicts
