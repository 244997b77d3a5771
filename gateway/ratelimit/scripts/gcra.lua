-- gcra.lua: the generic cell rate algorithm, a leaky bucket as a meter. A request passes if,
-- with its cost added, the theoretical arrival time (TAT) is at most burst intervals ahead of
-- now. Part of decide.lua, which defines now, idiv and ttl_ms; gcra.try in algorithms.go is
-- its Go twin.
--
-- With a queue, max_delay (µs, the rule's seventh argument; '' for none) bounds the wait: an
-- allowed request waits until the TAT, where the queue ends, and that wait is its retry.
--
-- State: the TAT in µs, a STRING holding one number.

algorithms.gcra = function(key, limit, window, burst, cost, max_delay)
  local every = math.max(1, idiv(window, limit)) -- µs per token
  local tat = math.max(tonumber(redis.call('GET', key)) or 0, now)
  local nxt = tat + cost * every
  local allow_at = nxt - burst * every
  max_delay = tonumber(max_delay)
  if max_delay then
    allow_at = math.max(allow_at, tat - max_delay)
  end
  local allowed, retry = now >= allow_at, 0
  if allowed then
    if max_delay and cost > 0 then -- its turn: once the requests ahead have left
      retry = tat - now
    end
    tat = nxt
  elseif cost > burst then -- never fits: come back after a full window
    retry = window
  else
    retry = allow_at - now
  end
  return allowed, idiv(now + burst * every - tat, every), tat - now, retry, function()
    redis.call('SET', key, string.format('%d', nxt), 'PX', ttl_ms(nxt - now))
  end
end
