-- token_bucket.lua: holds up to burst tokens and gains one every interval, refilled lazily
-- when the key is next used. Part of decide.lua, which defines now, idiv, get and set;
-- tokenBucket.try in algorithms.go is its Go twin.
--
-- State: "tokens last", a STRING; last is when the bucket started counting toward its next
-- token. An absent key is a full bucket.

algorithms.token_bucket = function(key, limit, window, burst, cost)
  local every = math.max(1, idiv(window, limit)) -- µs per token
  local tokens, last = get(key)
  if not tokens then
    tokens, last = burst, now
  end
  local n = idiv(now - last, every)
  if tokens < burst and n > 0 then
    tokens = math.min(burst, tokens + n)
    last = last + n * every
  end
  if tokens >= burst then -- a full bucket does not save up time
    tokens, last = burst, now
  end
  local allowed = cost <= tokens
  local left, reset, retry = tokens, 0, 0
  if allowed then
    left = left - cost
  end
  if left < burst then
    reset = last + (burst - left) * every - now
  end
  if not allowed then
    retry = last + (cost - tokens) * every - now
    if cost > burst then -- never fits: come back after a full window
      retry = window
    end
  end
  return allowed, left, reset, retry, function()
    -- below zero after a charge: a debt the refill pays back
    set(key, last + (burst - tokens + cost) * every - now, tokens - cost, last)
  end
end
