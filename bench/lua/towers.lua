-- Are We Fast Yet "Towers": the towers of Hanoi with 13 disks (8191 moves a run).
-- Each pile is an array of disk sizes, its top last.
local piles, moves_done

local function push_disk(size, pile)
  local p = piles[pile]
  if #p > 0 and size >= p[#p] then error("Cannot put a big disk on a smaller one") end
  p[#p + 1] = size
end

local function pop_disk_from(pile)
  local p = piles[pile]
  if #p == 0 then error("Attempting to remove a disk from an empty pile") end
  local top = p[#p]
  p[#p] = nil
  return top
end

local function move_top_disk(from_pile, to_pile)
  push_disk(pop_disk_from(from_pile), to_pile)
  moves_done = moves_done + 1
end

local function move_disks(disks, from_pile, to_pile)
  if disks == 1 then
    move_top_disk(from_pile, to_pile)
  else
    local other_pile = 6 - from_pile - to_pile
    move_disks(disks - 1, from_pile, other_pile)
    move_top_disk(from_pile, to_pile)
    move_disks(disks - 1, other_pile, to_pile)
  end
end

local function run()
  piles = {{}, {}, {}}
  for i = 13, 1, -1 do push_disk(i, 1) end
  moves_done = 0
  move_disks(13, 1, 2)
  return moves_done
end

local n = tonumber(arg[1] or "30")
local total = 0
for _ = 1, n do total = total + run() end
print(total)
