-- sliding_counter.lua: estimates the units spent in the sliding window from two fixed
-- windows: estimate = cur + floor(prev × share of the previous window still inside the
-- sliding window). Part of decide.lua, which defines now, idiv, get and set;
-- slidingCounter.try in algorithms.go is its Go twin.
--
-- State: "start cur prev", a STRING: the current window's start and both windows' counts.

algorithms.sliding_counter = function(key, limit, window, _, cost)
  local start = idiv(now, window) * window
  local sstart, scur, sprev = get(key)
  local cur, prev = 0, 0
  if sstart == start then
    cur, prev = scur, sprev
  elseif sstart == start - window then
    prev = scur
  end
  local function est(c, pr)
    return c + idiv(pr * (window - (now - start)), window)
  end
  -- wait: the time until the estimate falls to target or below if nothing is spent.
  -- idiv(x + d - 1, d) is x / d rounded up.
  local function wait(c, pr, target)
    if est(c, pr) <= target then
      return 0
    elseif c <= target then -- later in this window, as the previous window's weight fades
      return start + window - idiv((target - c + 1) * window + pr - 1, pr) + 1 - now
    end
    -- in the next window, where the current count becomes the previous one
    return start + 2 * window - idiv((target + 1) * window + c - 1, c) + 1 - now
  end
  local allowed = est(cur, prev) + cost <= limit
  local c, retry = cur, 0
  if allowed then
    c = c + cost
  end
  if not allowed then
    if cost > limit then
      retry = window
    else
      retry = wait(cur, prev, limit - cost)
    end
  end
  return allowed, limit - est(c, prev), wait(c, prev, 0), retry, function()
    if sstart == start then
      set(key, nil, start, cur + cost, prev) -- the same window: the key's expiry stays
    else
      set(key, start + 2 * window - now, start, cur + cost, prev)
    end
  end
end
