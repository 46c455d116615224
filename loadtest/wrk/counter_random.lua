-- POST next on one of the counters order-0000001 .. order-<COUNTER_KEYS> of FAMILY, chosen
-- uniformly at random.
local auth = "Bearer " .. os.getenv("SEQVEND_TOKEN")
local family = os.getenv("FAMILY")
local keys = tonumber(os.getenv("COUNTER_KEYS"))
math.randomseed(os.time())

request = function()
    local path = string.format("/families/%s/counters/order-%07d/next", family, math.random(1, keys))
    return wrk.format("POST", path, { ["Authorization"] = auth })
end
