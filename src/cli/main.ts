import { readFileSync } from "node:fs"
import { join } from "node:path"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Effect, Exit } from "effect"
import { CliError, Command } from "effect/cli"
import { packageRoot, trawl } from "./app.ts"
import { CliFailure, ExitCode, failureLine } from "./output.ts"

/**
 * The `trawl` binary (bin/trawl.mjs loads this, built or through tsx). A failure is one line on
 * stderr and an exit code from docs/cli.md.
 */
const { version } = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }

const program = Command.run(trawl, { version }).pipe(
  Effect.tapError((e) => (e instanceof CliFailure && e.code !== "" ? Effect.sync(() => process.stderr.write(`${failureLine(e)}\n`)) : Effect.void)),
  Effect.provide(NodeServices.layer)
)

NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  teardown: (exit, onExit) => {
    if (Exit.isSuccess(exit)) return onExit(ExitCode.ok)
    if (Cause.hasInterruptsOnly(exit.cause)) return onExit(ExitCode.interrupted)
    const error = Cause.squash(exit.cause)
    if (error instanceof CliFailure) return onExit(error.exitCode)
    // effect/cli has already printed a parse error with the usage.
    if (CliError.isCliError(error)) return onExit(ExitCode.usage)
    process.stderr.write(`error internal: ${String(error)}\n`)
    return onExit(ExitCode.refused)
  }
})
