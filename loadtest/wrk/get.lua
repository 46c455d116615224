-- A plain GET (the no-op baseline: GET /healthz).
wrk.method = "GET"
