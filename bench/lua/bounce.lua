-- Are We Fast Yet "Bounce": 100 balls bounce in a 500x500 box for 50 steps; the
-- number of bounces (1331 a run).
local abs = math.abs

local Random = {}
Random.__index = Random
function Random.new() return setmetatable({seed = 74755}, Random) end
function Random:next()
  self.seed = (self.seed * 1309 + 13849) & 65535
  return self.seed
end

local Ball = {}
Ball.__index = Ball
function Ball.new(random)
  local b = {}
  b.x = random:next() % 500
  b.y = random:next() % 500
  b.xv = random:next() % 300 - 150
  b.yv = random:next() % 300 - 150
  return setmetatable(b, Ball)
end

function Ball:bounce()
  local bounced = false
  self.x = self.x + self.xv
  self.y = self.y + self.yv
  if self.x > 500 then
    self.x = 500
    self.xv = 0 - abs(self.xv)
    bounced = true
  end
  if self.x < 0 then
    self.x = 0
    self.xv = abs(self.xv)
    bounced = true
  end
  if self.y > 500 then
    self.y = 500
    self.yv = 0 - abs(self.yv)
    bounced = true
  end
  if self.y < 0 then
    self.y = 0
    self.yv = abs(self.yv)
    bounced = true
  end
  return bounced
end

local function run()
  local random = Random.new()
  local balls = {}
  for i = 1, 100 do balls[i] = Ball.new(random) end
  local bounces = 0
  for _ = 1, 50 do
    for i = 1, #balls do
      if balls[i]:bounce() then bounces = bounces + 1 end
    end
  end
  return bounces
end

local n = tonumber(arg[1] or "50")
local total = 0
for _ = 1, n do total = total + run() end
print(total)
