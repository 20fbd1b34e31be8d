local counts, total, distinct = {}, 0, 0
for line in io.lines() do
  for w in string.gmatch(string.lower(line), "[^ ]+") do
    local n = counts[w]
    if n == nil then
      distinct = distinct + 1
      counts[w] = 1
    else
      counts[w] = n + 1
    end
    total = total + 1
  end
end
local ranked = {}
for w in pairs(counts) do ranked[#ranked + 1] = w end
table.sort(ranked, function(a, b)
  if counts[a] ~= counts[b] then return counts[a] > counts[b] end
  return a < b
end)
local out = {tostring(total), tostring(distinct)}
for i = 1, 5 do out[#out + 1] = ranked[i] .. ":" .. counts[ranked[i]] end
print(table.concat(out, " "))
