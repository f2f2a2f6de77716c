-- Renew the leases of in-flight entries: XCLAIM ... JUSTID resets an entry's idle time
-- (without counting a delivery), but only for entries this consumer still owns, so a
-- worker never takes back what a reclaim gave another worker.
-- KEYS[1] stream  ARGV[1] group  ARGV[2] consumer  ARGV[3..] entry ids
-- Returns how many leases were renewed.
local owned = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then owned[#owned + 1] = ARGV[i] end
end
if #owned == 5 then return 0 end
owned[#owned + 1] = 'JUSTID'
return #redis.call(unpack(owned))
