/**
 * What both test pages (the WAL page and the storm page) do to show state and start: write a
 * line into an element, wait for the app-shell service worker, and publish the page's API on
 * `window` once started, or the reason it failed to start.
 */

/** Sets the text of the element with `id`, if the page has it. */
export function setText(id: string, text: string): void {
  const element = document.getElementById(id)
  if (element !== null) element.textContent = text
}

/**
 * Runs `start`; hands its API to `ready`, or its failure as `Name: message` to `failed` and to
 * the element `statusId`, so a test waiting for the page sees why it never became ready.
 *
 * @example
 * bootPage(start, 'status', (api) => { window.storm = api }, (reason) => { window.stormError = reason })
 */
export function bootPage<T>(start: () => Promise<T>, statusId: string, ready: (api: T) => void, failed: (reason: string) => void): void {
  start().then(ready, (error: unknown) => {
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    failed(reason)
    setText(statusId, `failed: ${reason}`)
  })
}

/**
 * Registers the app-shell service worker (pages/public/sw.js) and waits until it controls this
 * page, so a reload works offline.
 *
 * @example
 * if (params.get('shell') === '1') await shellReady()
 */
export async function shellReady(): Promise<void> {
  if (navigator.serviceWorker.controller !== null) return
  await navigator.serviceWorker.register('/sw.js')
  await navigator.serviceWorker.ready
  if (navigator.serviceWorker.controller !== null) return
  await new Promise<void>((resolve) => navigator.serviceWorker.addEventListener('controllerchange', () => resolve(), { once: true }))
}
