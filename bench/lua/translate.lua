-- A translate loop: a 50,000-character text of letters and spaces (a Park-Miller
-- generator, seed 42) is translated character by character through a table
-- (each letter moved 7 places on, a space kept) N times (first argument; default
-- 20); prints the length and the first 30 characters of the result.
local function make_text(n)
  local x = 42
  local out = {}
  for i = 1, n do
    x = (x * 16807) % 2147483647
    local c = x % 27
    out[i] = c == 26 and " " or string.char(97 + c)
  end
  return table.concat(out)
end

local function translate(text, tr)
  local out = {}
  for i = 1, #text do
    out[i] = tr[text:sub(i, i)]
  end
  return table.concat(out)
end

local rounds = tonumber(arg[1] or "20")
local tr = {[" "] = " "}
for i = 0, 25 do
  tr[string.char(97 + i)] = string.char(97 + (i + 7) % 26)
end
local text = make_text(50000)
for _ = 1, rounds do text = translate(text, tr) end
print(#text .. " " .. text:sub(1, 30))
