import { runServer } from "./server.ts"

runServer()
