-- benchmarks/lib/serve.lua -- wrk script of `benchmarks/run serve`: POSTs notification bodies at
-- /notifications/sandbox, each thread cycling through its own share of a file of bodies (one JSON body per line), so
-- no two requests of a run carry the same notification while the file lasts.
--   wrk -t T -c C -d S -s serve.lua http://127.0.0.1:PORT -- BODIES_FILE T
-- Every answer is checked: a 200 must say "stored":true (a duplicate means the file ran out: the run is invalid);
-- done() prints one line, SERVE_WRK requests=N stored=N duplicates=N errors=N wrapped=N p50_ms p99_ms max_ms rate.

local threads = {}
local counter = 0

function setup(thread)
    thread:set("id", counter)
    counter = counter + 1
    table.insert(threads, thread)
end

function init(args)
    local file, n = args[1], tonumber(args[2])
    bodies = {}
    local i = 0
    for line in io.lines(file) do
        if i % n == id then bodies[#bodies + 1] = line end
        i = i + 1
    end
    if #bodies == 0 then error("serve.lua: no bodies for thread " .. id .. " in " .. file) end
    next_body, stored, duplicates, errors, wrapped = 1, 0, 0, 0, 0
    headers = { ["Content-Type"] = "application/json" }
end

function request()
    local body = bodies[next_body]
    next_body = next_body + 1
    if next_body > #bodies then
        next_body = 1
        wrapped = wrapped + 1
    end
    return wrk.format("POST", "/notifications/sandbox", headers, body)
end

function response(status, _, body)
    if status ~= 200 then
        errors = errors + 1
        if errors <= 3 then io.stderr:write("serve.lua: HTTP " .. status .. ": " .. body:sub(1, 300) .. "\n") end
    elseif body:find('"stored":true', 1, true) then
        stored = stored + 1
    else
        duplicates = duplicates + 1
    end
end

function done(summary, latency, _)
    local s, d, e, w = 0, 0, 0, 0
    for _, t in ipairs(threads) do
        s, d, e, w = s + t:get("stored"), d + t:get("duplicates"), e + t:get("errors"), w + t:get("wrapped")
    end
    local seconds = summary.duration / 1e6
    io.write(string.format("SERVE_WRK requests=%d stored=%d duplicates=%d errors=%d wrapped=%d socket_errors=%d " ..
        "p50_ms=%.2f p99_ms=%.2f max_ms=%.2f rate=%.1f\n", summary.requests, s, d, e, w,
        summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000, summary.requests / seconds))
end
