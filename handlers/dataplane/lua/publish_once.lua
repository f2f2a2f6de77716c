-- Write one message to a public stream exactly once.
-- KEYS[1] the stream  KEYS[2] its dedup marker (hash-tagged with the stream's name)
-- ARGV[1] the JSON  ARGV[2] marker ttl (s)  ARGV[3] approximate MAXLEN ('0' none)
-- ARGV[4] the stream's own ttl (s), renewed by every message ('0' none: a per-contact debug
-- stream has one, so contacts nobody debugs any more do not keep their streams forever)
-- Returns 1 written, 0 written before, -1 refused: KEYS[1] is not a stream (nothing written;
-- the marker is set only with the message, so a refused message can be sent again).
local t = redis.call('TYPE', KEYS[1])['ok']
if t ~= 'none' and t ~= 'stream' then return -1 end
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[2]) then return 0 end
if ARGV[3] ~= '0' then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'data', ARGV[1])
else
  redis.call('XADD', KEYS[1], '*', 'data', ARGV[1])
end
if ARGV[4] and ARGV[4] ~= '0' then redis.call('EXPIRE', KEYS[1], ARGV[4]) end
return 1
