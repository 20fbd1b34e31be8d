-- Lua has no JSON in its standard distribution: a small encoder and a small
-- recursive-descent decoder are part of the workload. Objects keep their key
-- order in a `__keys` list (Lua tables are unordered), as Leash maps do.

local null = setmetatable({}, { __tostring = function() return "null" end })

local escapes = {
  ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}
local function escape_char(c)
  return escapes[c] or string.format("\\u%04x", c:byte())
end

local function encode_into(v, out)
  local t = type(v)
  if t == "string" then
    out[#out + 1] = '"' .. v:gsub('[%c"\\]', escape_char) .. '"'
  elseif t == "number" then
    if math.type(v) == "integer" then
      out[#out + 1] = tostring(v)
    elseif v == math.floor(v) and math.abs(v) < 2 ^ 53 then
      out[#out + 1] = string.format("%d", v)
    else
      out[#out + 1] = string.format("%.17g", v)
    end
  elseif t == "boolean" then
    out[#out + 1] = tostring(v)
  elseif v == nil or v == null then
    out[#out + 1] = "null"
  elseif t == "table" then
    local keys = v.__keys
    if keys then
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = '"' .. k:gsub('[%c"\\]', escape_char) .. '":'
        encode_into(v[k], out)
      end
      out[#out + 1] = "}"
    else
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        encode_into(v[i], out)
      end
      out[#out + 1] = "]"
    end
  else
    error("cannot encode a " .. t)
  end
end

local function stringify(v)
  local out = {}
  encode_into(v, out)
  return table.concat(out)
end

local unescapes = {
  ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f",
  n = "\n", r = "\r", t = "\t",
}

local function skip_ws(s, i)
  return s:find("[^ \t\r\n]", i) or #s + 1
end

local function parse_string(s, i) -- s:byte(i) is '"'
  local j = i + 1
  local parts
  while true do
    local k = s:find('["\\]', j)
    if not k then error("unterminated string at " .. i) end
    if s:byte(k) == 34 then
      if parts then
        parts[#parts + 1] = s:sub(j, k - 1)
        return table.concat(parts), k + 1
      end
      return s:sub(j, k - 1), k + 1
    end
    parts = parts or {}
    parts[#parts + 1] = s:sub(j, k - 1)
    local c = s:sub(k + 1, k + 1)
    if c == "u" then
      parts[#parts + 1] = utf8.char(tonumber(s:sub(k + 2, k + 5), 16))
      j = k + 6
    else
      parts[#parts + 1] = unescapes[c] or error("bad escape at " .. k)
      j = k + 2
    end
  end
end

local parse_value

local function parse_array(s, i) -- s:byte(i) is '['
  local arr, n = {}, 0
  i = skip_ws(s, i + 1)
  if s:byte(i) == 93 then return arr, i + 1 end
  while true do
    local v
    v, i = parse_value(s, i)
    n = n + 1
    arr[n] = v
    i = skip_ws(s, i)
    local c = s:byte(i)
    if c == 44 then
      i = skip_ws(s, i + 1)
    elseif c == 93 then
      return arr, i + 1
    else
      error("expected ',' or ']' at " .. i)
    end
  end
end

local function parse_object(s, i) -- s:byte(i) is '{'
  local keys = {}
  local obj = { __keys = keys }
  i = skip_ws(s, i + 1)
  if s:byte(i) == 125 then return obj, i + 1 end
  while true do
    if s:byte(i) ~= 34 then error("expected a key at " .. i) end
    local k, v
    k, i = parse_string(s, i)
    i = skip_ws(s, i)
    if s:byte(i) ~= 58 then error("expected ':' at " .. i) end
    v, i = parse_value(s, skip_ws(s, i + 1))
    if obj[k] == nil then keys[#keys + 1] = k end
    obj[k] = v
    i = skip_ws(s, i)
    local c = s:byte(i)
    if c == 44 then
      i = skip_ws(s, i + 1)
    elseif c == 125 then
      return obj, i + 1
    else
      error("expected ',' or '}' at " .. i)
    end
  end
end

parse_value = function(s, i)
  local c = s:byte(i)
  if c == 123 then
    return parse_object(s, i)
  elseif c == 91 then
    return parse_array(s, i)
  elseif c == 34 then
    return parse_string(s, i)
  elseif c == 116 and s:sub(i, i + 3) == "true" then
    return true, i + 4
  elseif c == 102 and s:sub(i, i + 4) == "false" then
    return false, i + 5
  elseif c == 110 and s:sub(i, i + 3) == "null" then
    return null, i + 4
  end
  local a, b = s:find("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  if not a then error("unexpected character at " .. i) end
  return tonumber(s:sub(a, b)), b + 1
end

local function parse(s)
  local v, i = parse_value(s, skip_ws(s, 1))
  if skip_ws(s, i) <= #s then error("trailing data at " .. i) end
  return v
end

local RECORD_KEYS = { "id", "name", "tags" }
local total_len, total_ids = 0, 0
for _ = 1, 20 do
  local recs = {}
  for i = 1, 2000 do
    recs[i] = { __keys = RECORD_KEYS, id = i, name = "name" .. i, tags = { "a", "b" } }
  end
  local text = stringify(recs)
  total_len = total_len + #text
  local back = parse(text)
  local s = 0
  for _, r in ipairs(back) do
    s = s + r.id
  end
  total_ids = total_ids + s
end
print(total_len .. " " .. total_ids)
