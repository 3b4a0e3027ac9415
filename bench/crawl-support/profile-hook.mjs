// Preloaded into the Trawl server by `npm run bench:crawl -- --profile` (NODE_OPTIONS=--import):
// the first SIGUSR2 starts the V8 CPU profiler, the next one stops it and writes the profile to
// $BENCH_PROFILE_FILE-<n>.cpuprofile (n = 1, 2, ...), then prints `bench-profile written` on stdout. Only the span the bench
// asks for is profiled, and a server that hangs on shutdown still leaves its profile.
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"

const file = process.env.BENCH_PROFILE_FILE
if (file) {
  const session = new Session()
  session.connect()
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))))
  let running = false
  let n = 0
  process.on("SIGUSR2", () => {
    if (!running) {
      running = true
      post("Profiler.enable")
        .then(() => post("Profiler.setSamplingInterval", { interval: 500 }))
        .then(() => post("Profiler.start"))
        .then(() => console.log("bench-profile started"), (e) => console.error("bench-profile:", e))
      return
    }
    running = false
    post("Profiler.stop")
      .then((res) => {
        writeFileSync(`${file}-${++n}.cpuprofile`, JSON.stringify(res.profile))
        console.log("bench-profile written")
      })
      .catch((e) => console.error("bench-profile:", e))
  })
}
