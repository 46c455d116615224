-- POST /families/<FAMILY>/counters/<key>/next with a key never drawn before on every request,
-- in a scrambled order: the START-th, START+1-th, ... key of a fixed permutation of
-- order-0000001 .. order-<COUNTER_KEYS> (the i-th is number (i - 1) * STRIDE mod COUNTER_KEYS
-- + 1, STRIDE coprime to COUNTER_KEYS), so new rows land all over the primary key as real
-- first uses do, and counter_random.lua can draw over the same keys afterwards. Run with one
-- thread (-t1), so that one counter numbers every key.
local auth = "Bearer " .. os.getenv("SEQVEND_TOKEN")
local family = os.getenv("FAMILY")
local keys = tonumber(os.getenv("COUNTER_KEYS"))
local stride = tonumber(os.getenv("STRIDE"))
local next_index = tonumber(os.getenv("START"))

request = function()
    local key = ((next_index - 1) * stride) % keys + 1
    next_index = next_index + 1
    local path = string.format("/families/%s/counters/order-%07d/next", family, key)
    return wrk.format("POST", path, { ["Authorization"] = auth })
end
