local x = 42
local total = 0
for _ = 1, 10 do
  local xs = {}
  for i = 1, 16000 do
    x = (x * 16807) % 2147483647
    xs[i] = x
  end
  table.sort(xs)
  total = (total + xs[1] + xs[8001] + xs[16000]) % 1000000007
end
print(total)
