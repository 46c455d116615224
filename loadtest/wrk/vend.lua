-- POST /sequences/<name>/next with the vend token from SEQVEND_TOKEN.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("SEQVEND_TOKEN")
