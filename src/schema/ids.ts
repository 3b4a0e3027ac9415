import { Schema } from "effect"

// Branded ids: a plain string becomes one only where it enters (a path parameter, a principal
// read from its credential), so a job id cannot be passed where a tenant id is wanted. No format
// is checked: an id of the wrong shape names nothing, and is answered 404 like any unknown id.

export const TenantId = Schema.String.pipe(Schema.brand("TenantId"))
export type TenantId = typeof TenantId.Type

export const IdentityId = Schema.String.pipe(Schema.brand("IdentityId"))
export type IdentityId = typeof IdentityId.Type

export const ApiKeyId = Schema.String.pipe(Schema.brand("ApiKeyId"))
export type ApiKeyId = typeof ApiKeyId.Type

export const JobId = Schema.String.pipe(Schema.brand("JobId"))
export type JobId = typeof JobId.Type

export const ExtractionId = Schema.String.pipe(Schema.brand("ExtractionId"))
export type ExtractionId = typeof ExtractionId.Type
