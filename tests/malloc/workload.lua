-- tests/malloc/workload.lua — Lua tables and strings made, grown and dropped; prints
-- figures that depend on every step, compared between allocators.
local total, count = 0, 0
local keep = {}
for round = 1, 60 do
  local t = {}
  for i = 1, 20000 do
    local s = string.rep("k" .. i, 1 + i % 5) .. round
    t[s] = { i, s, #s }
    total = total + #s
  end
  local list = {}
  for k, v in pairs(t) do
    if v[1] % 7 == 0 then list[#list + 1] = k end
  end
  table.sort(list)
  keep[round % 5] = list
  count = count + #list
  local parts = {}
  for i = 1, #list, 13 do parts[#parts + 1] = list[i]:sub(1, 6) end
  total = total + #table.concat(parts, ",")
end
print(total, count)
