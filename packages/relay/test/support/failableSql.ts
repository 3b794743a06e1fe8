/**
 * A SQL client whose queries fail on demand: a store that stops answering, for the tests of
 * failed loads and writes.
 */
import type { SqlClient } from '../../src/index.ts'

/** A client over `sql` whose queries and transactions throw while `failing` is set. */
export function failable(sql: SqlClient): SqlClient & { failing: boolean } {
  const check = (): void => {
    if (wrapped.failing) throw new Error('the database is down')
  }
  const wrapped: SqlClient & { failing: boolean } = {
    kind: sql.kind,
    failing: false,
    async query(text, params) {
      check()
      return sql.query(text, params)
    },
    async transaction(work) {
      check()
      return sql.transaction(work)
    },
    close: () => sql.close(),
  }
  return wrapped
}
