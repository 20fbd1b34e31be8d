-- Are We Fast Yet "Permute": count the calls of a recursive permutation of 6
-- items by swaps (8660 a run).
local Permute = {}
Permute.__index = Permute

function Permute.new()
  return setmetatable({count = 0, v = {0, 0, 0, 0, 0, 0}}, Permute)
end

function Permute:swap(i, j)
  local v = self.v
  v[i], v[j] = v[j], v[i]
end

function Permute:permute(n)
  self.count = self.count + 1
  if n ~= 0 then
    local n1 = n - 1
    self:permute(n1)
    for i = n, 1, -1 do
      self:swap(n, i)
      self:permute(n1)
      self:swap(n, i)
    end
  end
end

local n = tonumber(arg[1] or "60")
local total = 0
for _ = 1, n do
  local p = Permute.new()
  p:permute(6)
  total = total + p.count
end
print(total)
