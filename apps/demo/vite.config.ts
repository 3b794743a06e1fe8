import react from '@vitejs/plugin-react'
import { defaultClientConditions, defineConfig } from 'vite'

// Workspace packages are read from their src/ through this export condition: no build step for them.
export default defineConfig({
  plugins: [react()],
  resolve: {
    conditions: ['@tidemark/source', ...defaultClientConditions],
    dedupe: ['react', 'react-dom'],
  },
  build: { target: 'es2022' },
  // The engines' host workers (src/fleet/*.worker.ts) are module workers.
  worker: { format: 'es' },
  preview: { host: '127.0.0.1', port: 5173, strictPort: true },
})
