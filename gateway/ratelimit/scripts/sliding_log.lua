-- sliding_log.lua: keeps the time of every unit spent in the last window. An entry at t
-- counts while now < t + window. Part of decide.lua, which defines now and ttl_ms;
-- slidingLog.try in algorithms.go is its Go twin.
--
-- State: a ZSET of one member per unit spent, scored by its time.

algorithms.sliding_log = function(key, limit, window, _, cost)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local n = redis.call('ZCARD', key)
  local allowed = n + cost <= limit
  local remaining, reset, retry = limit - n, 0, 0
  if allowed and cost > 0 then
    remaining = remaining - cost
    reset = window
  elseif n > 0 then
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    reset = tonumber(newest[2]) + window - now
  end
  if not allowed then
    if cost > limit then
      retry = window
    else
      -- The request fits once the oldest n+cost-limit entries have left the window.
      local i = n + cost - limit - 1
      local e = redis.call('ZRANGE', key, i, i, 'WITHSCORES')
      retry = tonumber(e[2]) + window - now
    end
  end
  return allowed, remaining, reset, retry, function()
    -- Members must be unique: the time plus the entry's rank, which only grows within one
    -- microsecond. ZADD takes at most 500 members at a time, to bound its argument list.
    local args = {}
    for i = 1, cost do
      args[#args + 1] = string.format('%d', now)
      args[#args + 1] = string.format('%d-%d', now, n + i)
      if #args >= 1000 or i == cost then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
    redis.call('PEXPIRE', key, ttl_ms(window))
  end
end
