-- fixed_window.lua: counts the units spent in the current window; windows are aligned on
-- multiples of their length since the epoch. Part of decide.lua, which defines now, idiv,
-- get and set; fixedWindow.try in algorithms.go is its Go twin.
--
-- State: "start count", a STRING. A key that holds an older window counts nothing.

algorithms.fixed_window = function(key, limit, window, _, cost)
  local start = idiv(now, window) * window
  local sstart, scount = get(key)
  local count = 0
  if sstart == start then
    count = scount
  end
  local stop = start + window
  local allowed = count + cost <= limit
  local used, reset, retry = count, 0, 0
  if allowed then
    used = used + cost
  end
  if used > 0 then
    reset = stop - now
  end
  if not allowed then
    retry = stop - now
    if cost > limit then -- never fits: come back after a full window
      retry = window
    end
  end
  return allowed, limit - used, reset, retry, function()
    if sstart == start then
      set(key, nil, start, count + cost) -- the window's end, so the key's expiry, stays
    else
      set(key, stop - now, start, count + cost)
    end
  end
end
