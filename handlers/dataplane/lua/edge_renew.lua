-- Renew the leases of the slots (and the half-open probe) a live worker holds under one
-- scope's limits, so only a dead worker's come back (handlers/dataplane/edge.py).
-- KEYS: 1 slots   2 the workspace's slots (or any key of the scope)   3 circuit
-- ARGV: 1 lease ms, then holders
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ = now + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', until_, ARGV[i])
  redis.call('ZADD', KEYS[2], 'XX', until_, ARGV[i])
  if redis.call('HGET', KEYS[3], 'probe') == ARGV[i] then
    redis.call('HSET', KEYS[3], 'probeUntil', until_)
  end
end
return #ARGV - 1
