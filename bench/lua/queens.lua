-- Are We Fast Yet "Queens": place 8 queens by backtracking, 10 times a run; the
-- number of successful placements.
local Queens = {}
Queens.__index = Queens

function Queens.new()
  local q = {free_rows = {}, free_maxs = {}, free_mins = {}, queen_rows = {}}
  for i = 1, 8 do q.free_rows[i] = true; q.queen_rows[i] = -1 end
  for i = 1, 16 do q.free_maxs[i] = true; q.free_mins[i] = true end
  return setmetatable(q, Queens)
end

function Queens:get_row_column(r, c)
  return self.free_rows[r] and self.free_maxs[c + r] and self.free_mins[c - r + 8]
end

function Queens:set_row_column(r, c, v)
  self.free_rows[r] = v
  self.free_maxs[c + r] = v
  self.free_mins[c - r + 8] = v
end

function Queens:place_queen(c)
  for r = 1, 8 do
    if self:get_row_column(r, c) then
      self.queen_rows[r] = c
      self:set_row_column(r, c, false)
      if c == 8 then return true end
      if self:place_queen(c + 1) then return true end
      self:set_row_column(r, c, true)
    end
  end
  return false
end

local n = tonumber(arg[1] or "100")
local solved = 0
for _ = 1, n do
  for _ = 1, 10 do
    if Queens.new():place_queen(1) then solved = solved + 1 end
  end
end
print(solved)
