import { createdWithin } from "./created-between.ts"

/** A row as the in-memory test layers search it. */
export interface Searchable {
  readonly tenantId: string
  readonly status: string
  readonly url: string | null
  readonly domainId: string | null
  readonly createdMs: number
}

/**
 * The conditions the job and extraction searches share (tenant, status, URL prefix, domain,
 * creation time), as the test layers apply them in memory: the live WHERE clauses are in
 * job-repo.ts and extraction-repo.ts. A row without a URL matches no prefix. `where.domainId` is
 * compared as given: callers pass it through `domainIdFilter` first, as the live statements do.
 */
export const searchCondition = (
  tenantId: string,
  where: {
    readonly status?: ReadonlyArray<string> | undefined
    readonly url?: { readonly prefix?: string | undefined } | undefined
    readonly domainId?: string | undefined
    readonly createdAt?: { readonly gte?: string | undefined; readonly lt?: string | undefined } | undefined
  }
) => {
  const created = createdWithin(where.createdAt)
  const domainId = where.domainId
  const prefix = where.url?.prefix
  return (r: Searchable) =>
    r.tenantId === tenantId &&
    (where.status === undefined || where.status.includes(r.status)) &&
    (prefix === undefined || (r.url !== null && r.url.startsWith(prefix))) &&
    (domainId === undefined || r.domainId === domainId) &&
    created(r.createdMs)
}

/** One page of rows already sorted, with the total, as `pageWithTotal` answers in SQL. */
export const pageOfRows = <R, A>(sorted: ReadonlyArray<R>, offset: number, limit: number, view: (r: R) => A) =>
  ({ items: sorted.slice(offset, offset + limit).map(view), total: sorted.length })

/**
 * The open rows whose lease ran out at `now`, oldest lease first, at most `limit`, each with its
 * lease renewed by `renewMs`: what the sweepers' `stale` statements do, for the test layers.
 */
export const renewExpiredLeases = <R extends { leaseUntil: Date | null }>(
  rows: Iterable<R>,
  open: (r: R) => boolean,
  now: number,
  limit: number,
  renewMs: (r: R) => number
): Array<R> => {
  const expired = [...rows]
    .filter((r) => open(r) && r.leaseUntil !== null && r.leaseUntil.getTime() < now)
    .sort((a, b) => a.leaseUntil!.getTime() - b.leaseUntil!.getTime())
    .slice(0, limit)
  for (const r of expired) r.leaseUntil = new Date(now + renewMs(r))
  return expired
}
