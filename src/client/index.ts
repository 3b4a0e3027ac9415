/**
 * `trawl/client`: typed clients derived from the API definition (README.md, "Clients and the command line").
 * `make` / `layer` give the Effect client with typed errors; `createClient` the Promise client.
 */
export { Api, layer, make, Trawl, type TrawlClient, type TrawlClientOptions } from "./effect.ts"
export { createClient, type PromiseMethod, type TrawlPromiseClient } from "./promise.ts"
