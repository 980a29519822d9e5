-- Two-dimensional vectors.
local Vector = {}
Vector.__index = Vector

function Vector.new(x, y)
  local self = setmetatable({}, Vector)
  self.x = x
  self.y = y
  return self
end

function Vector:length()
  local squared = self.x * self.x + self.y * self.y
  return math.sqrt(squared)
end

function Vector:scale(factor)
  if factor == 0 then
    return Vector.new(0, 0)
  end
  return Vector.new(self.x * factor, self.y * factor)
end

local function double(n)
  local total = n + n
  return total
end

local function triple(n)
  local total = n + n + n
  return total
end

return Vector
