-- Are We Fast Yet "Json": a hand-written recursive-descent JSON parser (in the manner
-- of minimal-json) parses stdin (ops.json, ~22 KB) N times (first argument; default
-- 40). Prints the number of operations and the objects, arrays, strings, numbers and
-- literals of one parse. Numbers are kept as their text, as in the original. An
-- object is a table of its names and values; JSON null becomes a sentinel (a Lua
-- table cannot hold nil).
local sub = string.sub
local NULL = setmetatable({}, {__tostring = function() return "null" end})
local ESCAPES = {['"'] = '"', ["/"] = "/", ["\\"] = "\\", b = "\b", f = "\f", n = "\n",
                 r = "\r", t = "\t"}

local src, pos, cur, counts

local function read()
  pos = pos + 1
  cur = sub(src, pos, pos)
end

local function skip_white_space()
  while cur == " " or cur == "\t" or cur == "\n" or cur == "\r" do read() end
end

local function is_digit()
  return cur >= "0" and cur <= "9" and cur ~= ""
end

local function read_required(ch)
  if cur ~= ch then error("expected '" .. ch .. "' at " .. pos) end
  read()
end

local read_value

local function read_string()
  read()
  local start = pos
  local parts = {}
  while cur ~= '"' do
    if cur == "" then error("unterminated string") end
    if cur == "\\" then
      parts[#parts + 1] = sub(src, start, pos - 1)
      read()
      local e = ESCAPES[cur]
      if not e then error("expected a valid escape sequence at " .. pos) end
      parts[#parts + 1] = e
      read()
      start = pos
    else
      read()
    end
  end
  parts[#parts + 1] = sub(src, start, pos - 1)
  read()
  return table.concat(parts)
end

local function read_digits()
  if not is_digit() then error("expected a digit at " .. pos) end
  while is_digit() do read() end
end

local function read_number()
  counts.numbers = counts.numbers + 1
  local start = pos
  if cur == "-" then read() end
  if cur == "0" then read() else read_digits() end
  if cur == "." then
    read()
    read_digits()
  end
  if cur == "e" or cur == "E" then
    read()
    if cur == "+" or cur == "-" then read() end
    read_digits()
  end
  return sub(src, start, pos - 1)
end

local function read_array()
  counts.arrays = counts.arrays + 1
  read()
  local array = {}
  skip_white_space()
  if cur == "]" then
    read()
    return array
  end
  while true do
    skip_white_space()
    array[#array + 1] = read_value()
    skip_white_space()
    if cur ~= "," then break end
    read()
  end
  read_required("]")
  return array
end

local function read_object()
  counts.objects = counts.objects + 1
  read()
  local object = {}
  skip_white_space()
  if cur == "}" then
    read()
    return object
  end
  while true do
    skip_white_space()
    if cur ~= '"' then error("expected a name at " .. pos) end
    local name = read_string()
    skip_white_space()
    read_required(":")
    skip_white_space()
    object[name] = read_value()
    skip_white_space()
    if cur ~= "," then break end
    read()
  end
  read_required("}")
  return object
end

function read_value()
  if cur == "n" then
    read(); read_required("u"); read_required("l"); read_required("l")
    counts.literals = counts.literals + 1
    return NULL
  elseif cur == "t" then
    read(); read_required("r"); read_required("u"); read_required("e")
    counts.literals = counts.literals + 1
    return true
  elseif cur == "f" then
    read(); read_required("a"); read_required("l"); read_required("s"); read_required("e")
    counts.literals = counts.literals + 1
    return false
  elseif cur == '"' then
    counts.strings = counts.strings + 1
    return read_string()
  elseif cur == "[" then
    return read_array()
  elseif cur == "{" then
    return read_object()
  elseif cur == "-" or is_digit() then
    return read_number()
  end
  error("expected a value at " .. pos)
end

local function parse(text)
  src, pos, cur = text, 0, ""
  counts = {objects = 0, arrays = 0, strings = 0, numbers = 0, literals = 0}
  read()
  skip_white_space()
  local result = read_value()
  skip_white_space()
  if cur ~= "" then error("unexpected character at " .. pos) end
  return result
end

local rounds = tonumber(arg[1] or "40")
local text = io.read("a")
local ops = 0
for _ = 1, rounds do ops = #parse(text).operations end
print(table.concat({ops, counts.objects, counts.arrays, counts.strings, counts.numbers,
                    counts.literals}, " "))
