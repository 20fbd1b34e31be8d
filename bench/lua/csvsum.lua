-- Lua has no CSV library: a small parser of one record per line (quoted fields with
-- doubled quotes inside, commas inside quotes).
local function parse_line(s)
  local fields, i, n = {}, 1, #s
  while true do
    if string.sub(s, i, i) == '"' then
      local buf, j = {}, i + 1
      while true do
        local q = string.find(s, '"', j, true)
        buf[#buf + 1] = string.sub(s, j, q - 1)
        if string.sub(s, q + 1, q + 1) == '"' then
          buf[#buf + 1] = '"'
          j = q + 2
        else
          i = q + 1
          break
        end
      end
      fields[#fields + 1] = table.concat(buf)
    else
      local c = string.find(s, ",", i, true) or (n + 1)
      fields[#fields + 1] = string.sub(s, i, c - 1)
      i = c
    end
    if i > n then break end
    i = i + 1 -- the comma
  end
  return fields
end

local f = assert(io.open(arg[1], "r"))
f:read("l")
local qty, cents, names = {}, {}, {}
local rows, noted = 0, 0
for line in f:lines() do
  local r = parse_line(line)
  local c = r[2]
  if qty[c] == nil then qty[c], cents[c], names[#names + 1] = 0, 0, c end
  qty[c] = qty[c] + tonumber(r[4])
  cents[c] = cents[c] + math.floor(tonumber(r[5]) * 100 + 0.5)
  rows = rows + 1
  if r[6] ~= "" then noted = noted + 1 end
end
f:close()
table.sort(names)
local out = {tostring(rows), tostring(noted)}
for _, c in ipairs(names) do out[#out + 1] = string.format("%s:%d:%d", c, qty[c], cents[c]) end
print(table.concat(out, " "))
