import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { ConfigError, loadConfig } from "./config.ts"
import { announce, makeServerLayer } from "./server.ts"

let config
try {
  config = loadConfig()
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message)
    process.exit(2)
  }
  throw e
}

// The announcement is built on top of the server, so it prints once the port is open.
// No traces are exported, so spans (one per SQL statement and entity message) are not built at all.
Layer.launch(Layer.effectDiscard(announce(config)).pipe(Layer.provide(makeServerLayer(config)))).pipe(
  Effect.withTracerEnabled(false),
  NodeRuntime.runMain
)
