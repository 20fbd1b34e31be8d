-- Are We Fast Yet "List": Takeuchi's tail function on linked lists of 15, 10 and 6
-- elements; the length of the result (10 a run).
local function make_list(length)
  if length == 0 then return nil end
  return {val = length, next = make_list(length - 1)}
end

local function length_of(e)
  local n = 0
  while e do
    n = n + 1
    e = e.next
  end
  return n
end

local function is_shorter_than(x, y)
  while y do
    if not x then return true end
    x = x.next
    y = y.next
  end
  return false
end

local function tail(x, y, z)
  if is_shorter_than(y, x) then
    return tail(tail(x.next, y, z), tail(y.next, z, x), tail(z.next, x, y))
  end
  return z
end

local function run()
  return length_of(tail(make_list(15), make_list(10), make_list(6)))
end

local n = tonumber(arg[1] or "40")
local total = 0
for _ = 1, n do total = total + run() end
print(total)
