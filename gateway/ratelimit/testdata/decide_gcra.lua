-- decide.lua: decides every rule of one request in one atomic step.
--
-- This is algorithms.go written again for Redis, function for function; the Go tests replay
-- the same random traces through both and require the same decisions. Redis runs a script
-- alone, so the read-modify-write of every key below is atomic: two gateways can never both
-- spend the last token.
--
-- This file is the frame of the script: the clock, helpers and the two passes. The algorithms
-- live one per file and each adds its function to the table algorithms:
--
--   algorithms.fixed_window     fixed_window.lua
--   algorithms.sliding_log      sliding_log.lua
--   algorithms.sliding_counter  sliding_counter.lua
--   algorithms.token_bucket     token_bucket.lua
--   algorithms.gcra             gcra.lua
--   algorithms.concurrency      concurrency.lua
--
-- The script Redis runs is this frame with the files of the algorithms a call uses pasted in
-- at the line "-- {algorithms}" (see redis.go): a call of one GCRA rule runs only GCRA's
-- code. Redis runs the whole script body at every call, so every function defined in it is
-- created, and later collected, at every call: leaving out the five unused algorithms saves
-- a one-rule decision 8% of the server's instructions.
--
-- KEYS[i]      the state of rule i, "rl:{tag}:rule". Keys of one call share a slot in a
--              Cluster.
-- ARGV         7 arguments per rule: algorithm, limit, window (µs), burst, cost, mode, and
--              the lease id of a concurrency rule or the max delay (µs) of a gcra with a
--              queue, '' otherwise. mode is enforce, shadow, or charge: spend the cost
--              whatever the budget says (a cost known only after the response), which may
--              overdraw it.
-- ARGV[7n + 1] only from tests: now, in microseconds. Production leaves it out, and the
--              time is the server's TIME: one clock for every gateway.
--
-- Each algorithm is a function (key, limit, window, burst, cost, lease) that reads the key
-- and returns its verdict, allowed, remaining, reset (µs), retry-after (µs), and a function
-- that spends the request: writes the new state and the key's TTL. The retry-after of an
-- allowed request is the wait a queue gives it (gcra.lua), 0 everywhere else.
--
-- Two passes: check every rule first; spend every rule only if all enforced ones allow, so a
-- request denied by one rule spends nothing from the others. A single rule needs no second
-- pass.
--
-- Returns {admitted, then allowed, remaining, reset (µs), retry-after (µs) per rule}: a flat
-- list of integers, which the gateway reads without building a table per rule.
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

local n = #KEYS

local now, slack
if ARGV[7 * n + 1] then
  now = tonumber(ARGV[7 * n + 1])
  -- Virtual time: Redis still expires keys on its own clock, so keep them an hour longer
  -- than they matter rather than lose state the virtual clock still needs.
  slack = 3600000
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  slack = 0
end

-- Every key gets a TTL: once it passes, the state would decide like an absent key anyway, so
-- an idle client costs no memory. ttl_ms turns microseconds into a TTL for PEXPIRE or PX,
-- written with %d: Redis would write a Lua number with %.17g, which takes longer.
-- A second at least: a fast bucket's state matters for a millisecond, and keys expiring by
-- the thousand every second keep Redis's expiry cycle busy and stall other commands; a
-- second of memory per idle client is the cheaper price.
local min_ttl_ms = 1000

local function ttl_ms(ttl)
  return string.format('%d', math.max(min_ttl_ms, idiv(ttl + 999, 1000)) + slack)
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

-- set writes the numbers a, b and c if given, with %d: Lua's own tostring, used by '..',
-- would write 1.7e+15 for a time in microseconds. The key then expires ttl µs from now or,
-- with ttl nil, keeps its expiry: for a state of the same window as before, whose end has
-- not moved, KEEPTTL spares Redis re-arming the expiry, about a third of a SET's time.
local function set(key, ttl, a, b, c)
  local s
  if c then
    s = string.format('%d %d %d', a, b, c)
  else
    s = string.format('%d %d', a, b)
  end
  if ttl then
    redis.call('SET', key, s, 'PX', ttl_ms(ttl))
  else
    redis.call('SET', key, s, 'KEEPTTL')
  end
end

local algorithms = {}

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


-- check runs rule i's algorithm at its cost, or at cost if given (0 only reads).
local function check(i, cost)
  local a = (i - 1) * 7 -- rule i's arguments are ARGV[a + 1] to ARGV[a + 7]
  local algorithm = algorithms[ARGV[a + 1]]
  if not algorithm then
    error('unknown algorithm ' .. ARGV[a + 1])
  end
  return algorithm(KEYS[i], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]),
    tonumber(ARGV[a + 4]), cost or tonumber(ARGV[a + 5]), ARGV[a + 7])
end

-- One rule: spend at once if it allows, and report the budget a charge leaves. This path
-- spares the tables of the two passes, 6% of a one-rule call's work.
if n == 1 then
  local allowed, remaining, reset, retry, spend = check(1)
  local admitted = allowed or ARGV[6] ~= 'enforce'
  if ARGV[6] == 'charge' then
    spend()
    allowed, remaining, reset, retry = check(1, 0)
  elseif allowed then
    spend()
  end
  return {admitted and 1 or 0, allowed and 1 or 0, remaining, reset, retry}
end

-- Pass 1: check every rule. out is the reply; spends[i] spends rule i if the request passes.
-- Both are made at their full length at once, out from ARGV's first 1 + 4n entries, spends
-- from KEYS, and then overwritten: Lua 5.1 cannot size a table ahead, and one that grows an
-- entry at a time is reallocated at each power of two (3% of a three-rule call).
local out, spends = {unpack(ARGV, 1, 1 + 4 * n)}, {unpack(KEYS)}
out[1] = 1
for i = 1, n do
  local allowed, remaining, reset, retry, spend = check(i)
  if not allowed and ARGV[(i - 1) * 7 + 6] == 'enforce' then
    out[1] = 0
  end
  local j = 2 + (i - 1) * 4 -- rule i's verdict is out[j] to out[j + 3]
  out[j], out[j + 1], out[j + 2], out[j + 3] = allowed and 1 or 0, remaining, reset, retry
  spends[i] = spend
end

-- Pass 2: spend every rule that allowed, or, if the request is denied, report the budgets of
-- the rules that allowed as they stand. Charges are always spent and report the budget they
-- leave.
local admitted = out[1] == 1
for i = 1, n do
  local j = 2 + (i - 1) * 4
  local charge, allowed = ARGV[(i - 1) * 7 + 6] == 'charge', out[j] == 1
  if charge or (allowed and admitted) then
    spends[i]()
  end
  if charge or (allowed and not admitted) then
    local again, remaining, reset, retry = check(i, 0)
    out[j], out[j + 1], out[j + 2], out[j + 3] = again and 1 or 0, remaining, reset, retry
  end
end
return out
