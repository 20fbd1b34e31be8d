-- Are We Fast Yet "Storage": build a tree of tables 7 deep, each inner node 4
-- children, each leaf an array of 1 to 10 items (a random size); count the nodes
-- (5461 a run).
local seed, count

local function next_random()
  seed = (seed * 1309 + 13849) & 65535
  return seed
end

local function build_tree_depth(depth)
  count = count + 1
  if depth == 1 then
    local leaf = {}
    for i = 1, next_random() % 10 + 1 do leaf[i] = false end
    return leaf
  end
  local node = {}
  for i = 1, 4 do node[i] = build_tree_depth(depth - 1) end
  return node
end

local function run()
  seed, count = 74755, 0
  build_tree_depth(7)
  return count
end

local n = tonumber(arg[1] or "40")
local total = 0
for _ = 1, n do total = total + run() end
print(total)
