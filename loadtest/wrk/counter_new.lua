-- POST /families/<FAMILY>/counters/<key>/next with a new key on every request:
-- order-<START>, order-<START + 1>, ... (7 digits). Run with one thread (-t1), so that one
-- counter numbers every key.
local auth = "Bearer " .. os.getenv("SEQVEND_TOKEN")
local family = os.getenv("FAMILY")
local next_key = tonumber(os.getenv("START"))

request = function()
    local path = string.format("/families/%s/counters/order-%07d/next", family, next_key)
    next_key = next_key + 1
    return wrk.format("POST", path, { ["Authorization"] = auth })
end
