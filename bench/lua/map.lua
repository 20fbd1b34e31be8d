local n = tonumber(arg[1]) or 300000
local x = 42
local m = {}
for _ = 1, n do
  x = (x * 16807) % 2147483647
  local k = "w" .. (x % 5000)
  m[k] = (m[k] or 0) + 1
end
local keys = 0
for _ in pairs(m) do
  keys = keys + 1
end
print(keys .. " " .. m["w42"])
