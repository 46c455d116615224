-- POST /ids/... with the vend token from SEQVEND_TOKEN (the path, with its count, is wrk's URL).
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("SEQVEND_TOKEN")
