import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './App.tsx'
import { openControlChannel } from './fleet/controlChannel.ts'
import { DeviceTab } from './fleet/deviceTab.ts'
import { Fleet } from './fleet/fleet.ts'
import { deviceIndexOf, settingsFromQuery } from './fleet/fleetSettings.ts'
import { controlChannelName, fleetIdOf, loadWiring, probeWebsocket } from './fleet/fleetWiring.ts'
import { workerHosts } from './fleet/workerHosts.ts'
import { DevicePage } from './ui/DevicePage.tsx'
import { FleetContext } from './ui/useFleet.ts'

const params = new URLSearchParams(location.search)
const root = document.getElementById('root')
if (root === null) throw new Error('index.html has no #root')

// Where the relay is (written by scripts/demo.mjs), or BroadcastChannel only.
const wiring = await loadWiring(fleetIdOf(params, localStorage), (path) => fetch(path, { cache: 'no-store' }), probeWebsocket)
// Every engine runs in a host worker, one per device and one for the dashboard: pages that open the same device share its worker.
const hosts = workerHosts()
const control = openControlChannel(controlChannelName(wiring))
const device = params.get('device')

if (device !== null) {
  const index = deviceIndexOf(device)
  if (index === null) {
    root.textContent = `?device=${device}: a device id is d01 … d64`
  } else {
    const tab = new DeviceTab({ index, settings: settingsFromQuery(params), wiring, hosts, control })
    tab.start()
    tab.run(100)
    createRoot(root).render(
      <StrictMode>
        <DevicePage tab={tab} wiring={wiring} />
      </StrictMode>,
    )
  }
} else {
  const fleet = new Fleet({ wiring, hosts, control, settings: settingsFromQuery(params), intro: params.get('tour') !== 'off' })
  fleet.start(100)
  createRoot(root).render(
    <StrictMode>
      <FleetContext value={fleet}>
        <App />
      </FleetContext>
    </StrictMode>,
  )
}
