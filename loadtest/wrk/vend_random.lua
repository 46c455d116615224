-- POST next on one of 10,000 sequences (r00000..r09999), or of SEQUENCES, chosen uniformly at
-- random.
local auth = "Bearer " .. os.getenv("SEQVEND_TOKEN")
local sequences = tonumber(os.getenv("SEQUENCES") or "10000")
math.randomseed(os.time())

request = function()
  local path = string.format("/sequences/r%05d/next", math.random(0, sequences - 1))
  return wrk.format("POST", path, { ["Authorization"] = auth })
end
