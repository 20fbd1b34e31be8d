local s = io.read("a")
local total = 0
for round = 1, 30 do
  total = total + #(string.gsub(s, "ka", "KA"))
  local parts, i = {}, 1
  while true do
    local j = string.find(s, "\n", i, true)
    if j == nil then parts[#parts + 1] = string.sub(s, i); break end
    parts[#parts + 1] = string.sub(s, i, j - 1)
    i = j + 1
  end
  total = total + #table.concat(parts, " | ")
  total = total + #string.upper(s)
  total = total + ((string.find(s, "zzz", 1, true) or 0) - 1)
  total = total + ((string.find(s, "ter ter ter", 1, true) or 0) - 1)
end
print(string.format("%d", total))
