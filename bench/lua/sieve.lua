-- Are We Fast Yet "Sieve": the primes up to 5000 by Eratosthenes' sieve (669 a run).
local function sieve(size)
  local flags = {}
  for i = 1, size do flags[i] = true end
  local prime_count = 0
  for i = 2, size do
    if flags[i] then
      prime_count = prime_count + 1
      local k = i + i
      while k <= size do
        flags[k] = false
        k = k + i
      end
    end
  end
  return prime_count
end

local n = tonumber(arg[1] or "100")
local total = 0
for _ = 1, n do total = total + sieve(5000) end
print(total)
