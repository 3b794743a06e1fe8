/**
 * How a device goes offline and online in a storm.
 *
 * - `emulate`: Playwright's `context.setOffline` (Chromium network emulation): every request
 *   of the context fails and the pages see `navigator.onLine` change. Open WebSockets are not
 *   closed (the page closes them on `offline`), and in Chromium frames that such a socket holds
 *   while emulated offline keep the network service busy until the context is online again:
 *   with six syncing devices toggling every 50-500 ms that service falls behind, and the pages
 *   see the toggles late and in bursts (the storm prints by how much).
 * - `partition`: the device reaches the sync server only through its own `SyncProxy`; offline
 *   resets its sync connections and refuses new ones, and `Network.overrideNetworkState` (CDP)
 *   makes its page see `navigator.onLine` change and the `offline`/`online` events. Page loads
 *   still work; the sync path, the only network a storm page uses, is really cut, and the
 *   network service stays idle, so the pages see the toggles on schedule.
 */
import type { BrowserContext, CDPSession, Page } from '@playwright/test'
import type { SyncProxy } from './syncProxy.ts'

/**
 * How a device goes offline: `partition` (its own proxy cut, its page told over CDP) or `emulate` (`context.setOffline`).
 *
 * @example
 * await runStorm({ ...options, network: 'emulate' satisfies DeviceNetworkMode })
 */
export type DeviceNetworkMode = 'emulate' | 'partition'

/**
 * Takes a device offline (true) or online (false); resolves when the browser acknowledged it.
 *
 * @example
 * const toggle: NetworkSwitch = (offline) => context.setOffline(offline)
 */
export type NetworkSwitch = (offline: boolean) => Promise<void>

/**
 * `context.setOffline`, as a switch.
 *
 * @example
 * const toggle = emulatedNetwork(device.context)
 * await toggle(true)
 */
export function emulatedNetwork(context: BrowserContext): NetworkSwitch {
  return (offline) => context.setOffline(offline)
}

/**
 * Cuts `proxy` and overrides the page's network state (CDP `Network.overrideNetworkState`).
 *
 * @example
 * const proxy = await startSyncProxy(server.port)
 * const device = await openStormPage(context, stormPageUrl(pageUrl, { role: 'device', server: proxy.url, room, seed }))
 * const toggle = await partitionedNetwork(device.page, proxy)
 * await toggle(true) // socket reset, navigator.onLine false, 'offline' fired
 */
export async function partitionedNetwork(page: Page, proxy: SyncProxy): Promise<NetworkSwitch> {
  const session: CDPSession = await page.context().newCDPSession(page)
  return async (offline) => {
    proxy.cut(offline)
    // Not in Playwright 1.56's protocol types; Chromium 156 has it.
    await session.send('Network.overrideNetworkState' as 'Network.emulateNetworkConditions', { offline, latency: 0, downloadThroughput: -1, uploadThroughput: -1 })
  }
}
