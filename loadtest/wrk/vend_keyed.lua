-- POST /sequences/<name>/next with the vend token from SEQVEND_TOKEN and a new
-- Idempotency-Key on every request (as a client that keys every label request would).
wrk.method = "POST"
local token = "Bearer " .. os.getenv("SEQVEND_TOKEN")
local prefix = tostring(os.time()) .. "-" .. tostring(math.random(1, 1000000000))
local counter = 0

request = function()
    counter = counter + 1
    return wrk.format(nil, nil, {
        ["Authorization"] = token,
        ["Idempotency-Key"] = prefix .. "-" .. counter,
    })
end
