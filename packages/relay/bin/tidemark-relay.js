#!/usr/bin/env node
// The built command (dist/cli.js). In the Tidemark workspace, `pnpm relay` runs the sources.
try {
  await import('../dist/cli.js')
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/cli.js')) {
    process.stderr.write('tidemark-relay: not built: run `pnpm --filter @tidemark/relay build`, or `pnpm relay` in the workspace\n')
    process.exit(1)
  }
  throw error
}
