-- Lua has no regular expressions; its own patterns express this one (%S, classes, and
-- (%d%d%d) for \d{3}; "(%d+|-)" becomes ([%d-]+)).
local PAT = '^(%S+) %S+ %S+ %[([^%]]+)%] "(%S+) ([^ ?"]+)%S* [^"]*" (%d%d%d) ([%d-]+)'
local n404, bytes200, lines = 0, 0, 0
local paths = {}
for line in io.lines() do
  local ip, t, method, path, status, bytes = string.match(line, PAT)
  lines = lines + 1
  if status == "404" then
    n404 = n404 + 1
  elseif status == "200" then
    bytes200 = bytes200 + tonumber(bytes)
  end
  paths[path] = (paths[path] or 0) + 1
end
local ranked = {}
for p in pairs(paths) do ranked[#ranked + 1] = p end
table.sort(ranked, function(a, b)
  if paths[a] ~= paths[b] then return paths[a] > paths[b] end
  return a < b
end)
local out = {tostring(lines), tostring(n404), string.format("%d", bytes200)}
for i = 1, 3 do out[#out + 1] = ranked[i] .. ":" .. paths[ranked[i]] end
print(table.concat(out, " "))
