-- chain.lua: the passes of a call holding hierarchical limits, in place of decide.lua's.
-- decideChains in hierarchy.go is its Go twin, and hierarchy.go's comment says the rules.
-- The script is decide.lua up to its passes (clock, helpers, algorithms, check), then this.
--
-- KEYS and ARGV are decide.lua's, 7 arguments per key, with the call's requests first and
-- the ceiling buckets of its levels after them. The 7th argument says a key's part:
--   "L<up> <ceiling> <reserve>"  a level: up and ceiling are the positions of its parent's
--                                key and of its ceiling bucket's, 0 for none;
--   "C"                          a ceiling bucket;
--   anything else                a flat rule, decided as decide.lua does (its lease id).
--
-- Returns decide.lua's reply for the requests; a verdict's first number is 1 for allowed,
-- plus 2 when a level reports its ceiling bucket (it borrowed, or reached its ceiling).

local up, ceiling, reserve, parent = {}, {}, {}, {}
local m = n -- the requests are the keys before the first ceiling bucket
for i = n, 1, -1 do
  local part = ARGV[(i - 1) * 7 + 7]
  if part == 'C' then
    m = i - 1
  else
    local u, c, r = string.match(part, '^L(%d+) (%d+) (%d+)$')
    if u then
      up[i], ceiling[i], reserve[i] = tonumber(u), tonumber(c), tonumber(r)
      parent[up[i]] = true
    end
  end
end

local out, spends, shown = {}, {}, {}
out[1] = 1
-- put writes request i's verdict; shown[i] is the key to read again if nothing is spent.
local function put(i, allowed, remaining, reset, retry, key, ceil)
  local j = 2 + (i - 1) * 4
  out[j], out[j + 1], out[j + 2], out[j + 3] = (allowed and 1 or 0) + (ceil and 2 or 0), remaining, reset, retry
  if not allowed and ARGV[(i - 1) * 7 + 6] == 'enforce' then
    out[1] = 0
  end
  shown[i] = key
end

-- Pass 1, flat rules.
for i = 1, m do
  if not up[i] then
    local allowed, remaining, reset, retry, spend = check(i)
    put(i, allowed, remaining, reset, retry, i, false)
    spends[i] = {spend}
  end
end

-- Pass 1, chains: walk each from its leaf, asking a level for its parent's reserve more
-- when the level below borrows.
for leaf = 1, m do
  if up[leaf] and not parent[leaf] then
    local j, borrow = leaf, false
    while j > 0 do
      local cost = tonumber(ARGV[(j - 1) * 7 + 5])
      local need = cost
      if borrow then
        need = need + reserve[j]
      end
      local fits, remaining, reset, retry = check(j, need)
      local c = ceiling[j]
      local room, cremaining, creset, cretry, cspend
      if c > 0 then
        room, cremaining, creset, cretry, cspend = check(c, cost)
      end
      borrow = false
      if fits and (c == 0 or room) then
        local _, left, r2, t2, spend = check(j, cost)
        put(j, true, left, r2, t2, j, false)
        spends[j] = {spend, cspend}
      elseif c > 0 and room and up[j] > 0 then
        put(j, true, cremaining, creset, cretry, c, true)
        spends[j] = {cspend}
        borrow = true
      elseif c > 0 and not room then
        put(j, false, cremaining, creset, cretry, c, true)
      else
        put(j, false, remaining, reset, retry, j, false)
      end
      j = up[j]
    end
  end
end

-- Pass 2: spend what allowed if the call is admitted, else report it as it stands; charges
-- (flat rules only) are always spent and report what they leave.
local admitted = out[1] == 1
for i = 1, m do
  local j = 2 + (i - 1) * 4
  local charge, allowed = ARGV[(i - 1) * 7 + 6] == 'charge', out[j] % 2 == 1
  if charge or (allowed and admitted) then
    for _, spend in ipairs(spends[i]) do
      spend()
    end
  end
  if charge or (allowed and not admitted) then
    local k = shown[i]
    local again, remaining, reset, retry = check(k, 0)
    out[j], out[j + 1], out[j + 2], out[j + 3] = (again and 1 or 0) + (k ~= i and 2 or 0), remaining, reset, retry
  end
end
return out
