-- Move the delayed steps of one partition that are due onto its step stream, atomically:
-- a step is either still waiting in the zset or on the stream, never both, never lost.
-- KEYS[1] the partition's delayed zset (member: a step entry's data; score: due, ms)
-- KEYS[2] the partition's step stream
-- ARGV[1] now (ms)   ARGV[2] at most this many steps
-- Returns how many were moved.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, data in ipairs(due) do
  redis.call('XADD', KEYS[2], '*', 'd', data)
end
if #due > 0 then
  redis.call('ZREM', KEYS[1], unpack(due))
end
return #due
