import { readFileSync } from "node:fs"
import { join } from "node:path"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Console, Effect, Exit } from "effect"
import { CliError, CliOutput, Command } from "effect/cli"
import { packageRoot, trawl } from "./app.ts"
import { CliFailure, ExitCode, failureLine } from "./output.ts"

/**
 * The `trawl` binary (bin/trawl.mjs loads this, built or through tsx). A failure is one line on
 * stderr and an exit code from docs/cli.md.
 */
const { version } = JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }

/**
 * A usage error's help and errors go to stderr, as every error does (docs/cli.md, "Output"), so
 * that `--json` output piped on stdout never gets a help page; `--help` and `--version`, asked
 * for, stay on stdout.
 */
const UsageOnStderr = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation" || (event._tag === "Help" && event.reason === "Implicit")
      ? Effect.gen(function*() {
        const formatter = yield* CliOutput.Formatter
        yield* Console.error(formatter.formatHelpDoc(event.helpDoc))
        if (event._tag === "InvalidInvocation") yield* Console.error(formatter.formatErrors(event.errors))
      })
      : CliOutput.defaultPresenter.present(event)
})

const program = Command.run(trawl, { version }).pipe(
  Effect.tapError((e) => (e instanceof CliFailure && e.code !== "" ? Effect.sync(() => process.stderr.write(`${failureLine(e)}\n`)) : Effect.void)),
  Effect.provide(UsageOnStderr),
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
