-- decide.lua: decides every rule of one request in one atomic step.
--
-- This is algorithms.go written again for Redis, function for function; the Go tests replay
-- the same random traces through both and require the same decisions. Redis runs a script
-- alone, so the read-modify-write of every key below is atomic: two gateways can never both
-- spend the last token.
--
-- KEYS[i]  the state of rule i, "rl:{tag}:rule". Keys of one call share a slot in a Cluster.
-- ARGV[1]  now in microseconds, or "" to take the server's TIME. Production passes "": one
--          clock for every gateway. Tests pass a virtual time.
-- then 7 arguments per rule: algorithm, limit, window (µs), burst, cost, mode, lease id.
-- mode is enforce, shadow, or charge: spend the cost whatever the budget says (a cost known
-- only after the response), which may overdraw it.
--
-- Each algorithm returns its verdict and a commit function that spends the request and sets
-- the key's TTL.
--
-- Two passes: check every rule first; commit every rule only if all enforced ones allow, so a
-- request denied by one rule spends nothing from the others.
--
-- Returns {admitted, then allowed, remaining, reset (µs), retry-after (µs) per rule}.
--
-- Numbers are Lua doubles: exact for integers below 2^53, which microseconds since 1970 are.
-- Division goes through idiv so rounding can never differ from Go's integer division.

local function idiv(a, b) -- floor(a / b), exactly
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

local function ceildiv(a, b)
  return idiv(a + b - 1, b)
end

-- Numbers passed to redis.call are written by Redis as plain digits (below 1e17), but Lua's
-- own tostring, used by '..', would write 1.7e+15: int is for building strings.
local function int(x)
  return string.format('%d', x)
end

local now, slack
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
  -- Virtual time: Redis still expires keys on its own clock, so keep them an hour longer
  -- than they matter rather than lose state the virtual clock still needs.
  slack = 3600000
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  slack = 0
end

-- Every key gets a TTL: once it passes, the state would decide like an absent key anyway, so
-- an idle client costs no memory. ttl_ms turns microseconds into a TTL for PEXPIRE or PX.
-- A second at least: a fast bucket's state matters for a millisecond, and keys expiring by
-- the thousand every second keep Redis's expiry cycle busy and stall other commands; a
-- second of memory per idle client is the cheaper price.
local min_ttl_ms = 1000

local function ttl_ms(ttl)
  return math.max(min_ttl_ms, ceildiv(ttl, 1000)) + slack
end

-- The counters' state is a string of two or three numbers, "start count", rather than a
-- HASH: SET writes it and its TTL in one command where HSET needs a PEXPIRE after it, one
-- call fewer per rule and decision.
local function get(key)
  local s = redis.call('GET', key)
  if not s then
    return nil
  end
  local a, b, c = string.match(s, '^(-?%d+) (-?%d+) ?(-?%d*)$')
  return tonumber(a), tonumber(b), tonumber(c)
end

local function set(key, ttl, a, b, c)
  local s = int(a) .. ' ' .. int(b)
  if c then
    s = s .. ' ' .. int(c)
  end
  redis.call('SET', key, s, 'PX', ttl_ms(ttl))
end

-- A cost above what the key can ever hold never passes: come back after a full window.
local function impossible(never, p, retry)
  if never then
    return p.window
  end
  return retry
end

local algorithms = {}

-- fixed_window: "start count"; windows aligned on multiples of the window length.
algorithms.fixed_window = function(key, p, cost)
  local start = idiv(now, p.window) * p.window
  local sstart, scount = get(key)
  local count = 0
  if sstart == start then
    count = scount
  end
  local stop = start + p.window
  local v = {allowed = count + cost <= p.limit, remaining = 0, reset = 0, retry = 0}
  local used = count
  if v.allowed then
    used = used + cost
  end
  v.remaining = p.limit - used
  if used > 0 then
    v.reset = stop - now
  end
  if not v.allowed then
    v.retry = impossible(cost > p.limit, p, stop - now)
  end
  return v, function()
    set(key, stop - now, start, count + cost)
  end
end

-- sliding_log: ZSET of one member per unit spent, scored by its time. An entry at t counts
-- while now < t + window.
algorithms.sliding_log = function(key, p, cost)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - p.window)
  local n = redis.call('ZCARD', key)
  local v = {allowed = n + cost <= p.limit, remaining = p.limit - n, reset = 0, retry = 0}
  if v.allowed and cost > 0 then
    v.remaining = v.remaining - cost
    v.reset = p.window
  elseif n > 0 then
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    v.reset = tonumber(newest[2]) + p.window - now
  end
  if not v.allowed then
    if cost > p.limit then
      v.retry = p.window
    else
      -- The request fits once the oldest n+cost-limit entries have left the window.
      local i = n + cost - p.limit - 1
      local e = redis.call('ZRANGE', key, i, i, 'WITHSCORES')
      v.retry = tonumber(e[2]) + p.window - now
    end
  end
  return v, function()
    -- Members must be unique: the time plus the entry's rank, which only grows within
    -- one microsecond.
    local args = {}
    for i = 1, cost do
      args[#args + 1] = int(now)
      args[#args + 1] = int(now) .. '-' .. int(n + i)
      if #args >= 1000 or i == cost then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
    redis.call('PEXPIRE', key, ttl_ms(p.window))
  end
end

-- sliding_counter: "start cur prev". estimate = cur + floor(prev × share of the previous
-- window still inside the sliding window).
algorithms.sliding_counter = function(key, p, cost)
  local start = idiv(now, p.window) * p.window
  local sstart, scur, sprev = get(key)
  local cur, prev = 0, 0
  if sstart == start then
    cur, prev = scur, sprev
  elseif sstart == start - p.window then
    prev = scur
  end
  local function est(c, pr)
    return c + idiv(pr * (p.window - (now - start)), p.window)
  end
  -- wait: the time until the estimate falls to target or below if nothing is spent.
  local function wait(c, pr, target)
    if est(c, pr) <= target then
      return 0
    elseif c <= target then -- later in this window, as the previous window's weight fades
      return start + p.window - ceildiv((target - c + 1) * p.window, pr) + 1 - now
    end
    -- in the next window, where the current count becomes the previous one
    return start + 2 * p.window - ceildiv((target + 1) * p.window, c) + 1 - now
  end
  local v = {allowed = est(cur, prev) + cost <= p.limit, remaining = 0, reset = 0, retry = 0}
  local c = cur
  if v.allowed then
    c = c + cost
  end
  v.remaining = p.limit - est(c, prev)
  v.reset = wait(c, prev, 0)
  if not v.allowed then
    if cost > p.limit then
      v.retry = p.window
    else
      v.retry = wait(cur, prev, p.limit - cost)
    end
  end
  return v, function()
    set(key, start + 2 * p.window - now, start, cur + cost, prev)
  end
end

-- token_bucket: "tokens last". One token every interval, refilled lazily; last is when the
-- bucket started counting toward its next token. An absent key is a full bucket.
algorithms.token_bucket = function(key, p, cost)
  local tokens, last = get(key)
  if not tokens then
    tokens, last = p.burst, now
  end
  local n = idiv(now - last, p.interval)
  if tokens < p.burst and n > 0 then
    tokens = math.min(p.burst, tokens + n)
    last = last + n * p.interval
  end
  if tokens >= p.burst then -- a full bucket does not save up time
    tokens, last = p.burst, now
  end
  local v = {allowed = cost <= tokens, remaining = 0, reset = 0, retry = 0}
  local left = tokens
  if v.allowed then
    left = left - cost
  end
  v.remaining = left
  if left < p.burst then
    v.reset = last + (p.burst - left) * p.interval - now
  end
  if not v.allowed then
    v.retry = impossible(cost > p.burst, p, last + (cost - tokens) * p.interval - now)
  end
  return v, function()
    -- below zero after a charge: a debt the refill pays back
    set(key, last + (p.burst - tokens + cost) * p.interval - now, tokens - cost, last)
  end
end

-- gcra: STRING holding the theoretical arrival time (TAT). A request passes if, with its
-- cost added, the TAT is at most burst intervals ahead of now.
algorithms.gcra = function(key, p, cost)
  local tat = math.max(tonumber(redis.call('GET', key)) or 0, now)
  local nxt = tat + cost * p.interval
  local allow_at = nxt - p.burst * p.interval
  local v = {allowed = now >= allow_at, remaining = 0, reset = 0, retry = 0}
  if v.allowed then
    tat = nxt
  end
  v.remaining = idiv(now + p.burst * p.interval - tat, p.interval)
  v.reset = tat - now
  if not v.allowed then
    v.retry = impossible(cost > p.burst, p, allow_at - now)
  end
  return v, function()
    redis.call('SET', key, nxt, 'PX', ttl_ms(nxt - now))
  end
end

-- concurrency: ZSET of lease ids scored by when each expires if never released. Expired
-- leases are purged on every call: a gateway that crashed holding a slot frees it by itself.
algorithms.concurrency = function(key, p, cost, lease)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local n = redis.call('ZCARD', key)
  local v = {allowed = n + cost <= p.limit, remaining = p.limit - n, reset = 0, retry = 0}
  if v.allowed and cost > 0 then
    v.remaining = v.remaining - cost
    v.reset = p.window
  elseif n > 0 then
    local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    v.reset = tonumber(last[2]) - now
  end
  if not v.allowed then
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    v.retry = tonumber(first[2]) - now -- a release may free a slot sooner
  end
  return v, function()
    redis.call('ZADD', key, now + p.window, lease)
    redis.call('PEXPIRE', key, ttl_ms(p.window))
  end
end

-- Pass 1: check every rule.
local rules, verdicts, commits = {}, {}, {}
local admitted = true
for i = 1, #KEYS do
  local o = 1 + (i - 1) * 7
  local p = {
    algorithm = ARGV[o + 1],
    limit = tonumber(ARGV[o + 2]),
    window = tonumber(ARGV[o + 3]),
    burst = tonumber(ARGV[o + 4]),
    cost = tonumber(ARGV[o + 5]),
    shadow = ARGV[o + 6] == 'shadow',
    charge = ARGV[o + 6] == 'charge',
    lease = ARGV[o + 7],
  }
  p.interval = math.max(1, idiv(p.window, p.limit))
  local fn = algorithms[p.algorithm]
  if not fn then
    return redis.error_reply('unknown algorithm ' .. p.algorithm)
  end
  rules[i] = p
  verdicts[i], commits[i] = fn(KEYS[i], p, p.cost, p.lease)
  if not verdicts[i].allowed and not p.shadow and not p.charge then
    admitted = false
  end
end

-- Pass 2: spend every rule that allowed, or, if the request is denied, report the budgets of
-- the rules that allowed as they stand (a cost of 0 only reads). Charges are always spent and
-- report the budget they leave.
local out = {admitted and 1 or 0}
for i = 1, #KEYS do
  local v = verdicts[i]
  if rules[i].charge then
    commits[i]()
    v = algorithms[rules[i].algorithm](KEYS[i], rules[i], 0, '')
  elseif v.allowed then
    if admitted then
      commits[i]()
    else
      v = algorithms[rules[i].algorithm](KEYS[i], rules[i], 0, '')
    end
  end
  out[#out + 1] = v.allowed and 1 or 0
  out[#out + 1] = v.remaining
  out[#out + 1] = v.reset
  out[#out + 1] = v.retry
end
return out
