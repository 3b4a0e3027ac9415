#!/usr/bin/env node
// The `trawl` command (docs/cli.md): the built CLI when `npm run build` has made dist/, else the
// TypeScript source through tsx, so it works straight after `npm ci`. TRAWL_CLI_FROM_SOURCE=1
// runs the source even beside a build (the tests do, so a stale dist/ is never what they check).
import { existsSync } from "node:fs"

const built = new URL("../dist/src/cli/main.js", import.meta.url)
if (existsSync(built) && process.env.TRAWL_CLI_FROM_SOURCE !== "1") {
  await import(built.href)
} else {
  const { register } = await import("tsx/esm/api")
  register()
  await import(new URL("../src/cli/main.ts", import.meta.url).href)
}
