-- POST next on one of 10,000 sequences (r00000..r09999), chosen uniformly at random.
local auth = "Bearer " .. os.getenv("SEQVEND_TOKEN")
math.randomseed(os.time())

request = function()
  local path = string.format("/sequences/r%05d/next", math.random(0, 9999))
  return wrk.format("POST", path, { ["Authorization"] = auth })
end
