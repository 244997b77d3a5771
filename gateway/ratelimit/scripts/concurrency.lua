-- concurrency.lua: counts the requests in flight. Each allowed request holds a lease until it
-- is released (ZREM, see Redis.Release) or, if its holder crashed, until window has passed.
-- Part of decide.lua, which defines now and ttl_ms; concurrency.try in algorithms.go is its
-- Go twin.
--
-- State: a ZSET of lease ids scored by when each expires if never released. Expired leases
-- are purged on every call: a gateway that crashed holding a slot frees it by itself.

algorithms.concurrency = function(key, limit, window, _, cost, lease)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local n = redis.call('ZCARD', key)
  local allowed = n + cost <= limit
  local remaining, reset, retry = limit - n, 0, 0
  if allowed and cost > 0 then
    remaining = remaining - cost
    reset = window
  elseif n > 0 then
    local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    reset = tonumber(last[2]) - now
  end
  if not allowed then
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    retry = tonumber(first[2]) - now -- a release may free a slot sooner
  end
  return allowed, remaining, reset, retry, function()
    redis.call('ZADD', key, now + window, lease)
    redis.call('PEXPIRE', key, ttl_ms(window))
  end
end
