import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './App.tsx'
import { Fleet } from './fleet/fleet.ts'
import { FleetContext } from './ui/useFleet.ts'

const params = new URLSearchParams(location.search)
const fleet = new Fleet({ intro: params.get('tour') !== 'off' })
fleet.start(100)

const root = document.getElementById('root')
if (root === null) throw new Error('index.html has no #root')
createRoot(root).render(
  <StrictMode>
    <FleetContext value={fleet}>
      <App />
    </FleetContext>
  </StrictMode>,
)
