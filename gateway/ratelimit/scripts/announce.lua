-- announce.lua: renews one gateway replica's entry and counts the live replicas.
--
-- KEYS[1]  the sorted set of replicas, scored by when each entry expires (µs, server TIME)
-- ARGV[1]  this replica's id
-- ARGV[2]  how long an entry lives without renewal (µs)
--
-- One key with scores, rather than one key per replica: counting is a ZCARD, not a SCAN.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], string.format('%d', now + ttl), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
-- The set itself expires when every replica has gone quiet.
redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil(ttl / 1000)))
return redis.call('ZCARD', KEYS[1])
