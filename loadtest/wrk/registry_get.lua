-- GET with the token from SEQVEND_TOKEN (a registry read, e.g. GET /sequences/<name>).
wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("SEQVEND_TOKEN")
