-- binary-trees (the Computer Language Benchmarks Game's) for depth N (first
-- argument; default 12): build and check perfect binary trees; a node is a table
-- {left, right}, a leaf {} (no children). Prints the stretch tree's check, each
-- depth's total check and the long-lived tree's check.
local function make(d)
  if d == 0 then return {} end
  return {make(d - 1), make(d - 1)}
end

local function check(t)
  if t[1] == nil then return 1 end
  return 1 + check(t[1]) + check(t[2])
end

local max_depth = tonumber(arg[1] or "12")
local min_depth = 4
if max_depth < min_depth + 2 then max_depth = min_depth + 2 end
local out = {check(make(max_depth + 1))}
local long_lived = make(max_depth)
for d = min_depth, max_depth, 2 do
  local iterations = 2 ^ (max_depth - d + min_depth)
  local c = 0
  for _ = 1, iterations do c = c + check(make(d)) end
  out[#out + 1] = c
end
out[#out + 1] = check(long_lived)
print(table.concat(out, " "))
