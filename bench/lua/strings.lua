-- Lua strings are immutable and `s = s .. x` copies the whole string on every
-- append (quadratic); the idiomatic way to grow one string is a buffer table
-- joined by table.concat, which is what this does.
local n = tonumber(arg[1]) or 100000
local buf = {}
for i = 1, n do
  buf[#buf + 1] = "x" .. i
end
local s = table.concat(buf)
print(#s)
