-- Commit one state-machine transition atomically; every key is in one partition slot.
-- KEYS[1] step stream   KEYS[2] the tree's done key   KEYS[3] deadlines zset
-- KEYS[4] state key checked against the expected version (or any key, unused)
-- KEYS[5..] keys named by the ops
-- ARGV[1] group  ARGV[2] step entry id to ack ('' none)  ARGV[3] expected version ('' none)
-- ARGV[4] '1' when this transition answers the tree  ARGV[5] root id  ARGV[6] done ttl (s)
-- ARGV[7..] ops, five slots each: name, key index, a, b, c
-- Returns 1 committed, 0 tree already answered, -1 stale step, 2 duplicate command.
local function ack()
  if ARGV[2] ~= '' then
    redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
    redis.call('XDEL', KEYS[1], ARGV[2])
  end
end
if redis.call('EXISTS', KEYS[2]) == 1 then ack() return 0 end
if ARGV[3] ~= '' and redis.call('HGET', KEYS[4], 'v') ~= ARGV[3] then ack() return -1 end
for i = 7, #ARGV, 5 do
  if ARGV[i] == 'guardnx' then
    if not redis.call('SET', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], 'NX', 'EX', ARGV[i + 3]) then
      ack() return 2
    end
  end
end
if ARGV[4] == '1' then
  redis.call('SET', KEYS[2], '1', 'EX', ARGV[6])
  redis.call('ZREM', KEYS[3], ARGV[5])
end
for i = 7, #ARGV, 5 do
  local op, key, a, b, c = ARGV[i], KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  if op == 'state' then
    redis.call('HSET', key, 'v', a, 's', b)
    redis.call('EXPIRE', key, c)
  elseif op == 'xadd' then
    redis.call('XADD', key, '*', 'k', a, 't', b, 'd', c)
  elseif op == 'log' then
    redis.call('XADD', key, 'MAXLEN', '~', '512', '*', 'd', a)
    redis.call('EXPIRE', key, b)
  elseif op == 'step' then
    redis.call('XADD', key, '*', 'd', a)
  elseif op == 'setex' then
    redis.call('SET', key, a, 'EX', b)
  elseif op == 'zadd' then
    redis.call('ZADD', key, a, b)
  end
end
ack()
return 1
