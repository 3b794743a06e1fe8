import { tumbling } from '@tidemark/engine'
import { hostEngine } from '@tidemark/worker/host'
import { bindDoc } from '@tidemark/yjs'
import * as Y from 'yjs'

hostEngine({
  name: 'fleet',
  engine: { windows: tumbling(60_000) },
  setup({ engine }) {
    const binding = bindDoc(engine, new Y.Doc())
    return () => binding.destroy()
  },
})
