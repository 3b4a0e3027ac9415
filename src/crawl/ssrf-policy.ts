import type { AppConfig } from "../config.ts"
import { type AddressClassifier, classifyAddress } from "./ssrf.ts"

/**
 * The address classifier every outgoing connection of this node uses (crawls, their
 * redirects and subresources, webhooks). Normally `classifyAddress`; tests may declare a
 * few loopback addresses public (SSRF_TEST_PUBLIC_ADDRESSES) to stage a "public" site.
 */
export const classifierFor = (config: AppConfig): AddressClassifier => {
  if (config.ssrfTestPublicAddresses.length === 0) return classifyAddress
  const publicOnes = new Set(config.ssrfTestPublicAddresses)
  return (ip) => (publicOnes.has(ip) ? "public" : classifyAddress(ip))
}
