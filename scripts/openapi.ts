import { writeFileSync } from "node:fs"
import { resolve } from "node:path"
import { OpenApi } from "effect/http-api"
import { Api } from "../src/http/api.ts"

/** The OpenAPI document served at /v1/openapi.json, generated in-process from the API definition. */
export const openApiDocument = () => OpenApi.fromApi(Api)

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const out = process.argv[2]
  const text = JSON.stringify(openApiDocument(), null, 2) + "\n"
  if (out) writeFileSync(out, text)
  else process.stdout.write(text)
}
