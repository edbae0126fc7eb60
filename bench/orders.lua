-- wrk script: POST /orders with a small order; prints latency percentiles
-- and every kind of error (wrk counts non-2xx/3xx answers as status errors).
wrk.method = "POST"
wrk.path = "/orders"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"customer_id":"bench","items":[{"sku":"book","qty":1,"price_cents":1500}]}'

function done(summary, latency, requests)
  io.write(string.format("p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000))
  io.write(string.format("connect errors %d, read %d, write %d, timeouts %d, non-2xx %d\n",
    summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, summary.errors.status))
end
