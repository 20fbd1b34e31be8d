local s = 0
local i = 1
while i <= 3000000 do
  s = s + (i * i) % 7
  i = i + 1
end
print(s)
