-- fannkuch-redux (the Computer Language Benchmarks Game's) for n (first argument;
-- default 9): the checksum and the most flips over all permutations of 1..n.
local function fannkuch(n)
  local perm1, count, perm = {}, {}, {}
  for i = 0, n - 1 do perm1[i] = i; count[i] = 0 end
  local max_flips, checksum, perm_count = 0, 0, 0
  local r = n
  while true do
    while r ~= 1 do
      count[r - 1] = r
      r = r - 1
    end
    for i = 0, n - 1 do perm[i] = perm1[i] end
    local flips = 0
    local k = perm[0]
    while k ~= 0 do
      local i, j = 0, k
      while i < j do
        perm[i], perm[j] = perm[j], perm[i]
        i = i + 1
        j = j - 1
      end
      flips = flips + 1
      k = perm[0]
    end
    if flips > max_flips then max_flips = flips end
    if perm_count % 2 == 0 then checksum = checksum + flips else checksum = checksum - flips end
    -- The next permutation: rotate the first r + 1 items, r counting up.
    while true do
      if r == n then return checksum .. " " .. max_flips end
      local perm0 = perm1[0]
      for i = 0, r - 1 do perm1[i] = perm1[i + 1] end
      perm1[r] = perm0
      count[r] = count[r] - 1
      if count[r] > 0 then break end
      r = r + 1
    end
    perm_count = perm_count + 1
  end
end

print(fannkuch(tonumber(arg[1] or "9")))
