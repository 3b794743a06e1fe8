// App-shell cache for the offline reload: network first, the cached copy when the network fails.
// ignoreVary: the server answers with Vary: Origin, and a module script request carries an Origin the precache request lacked.
const CACHE = 'tidemark-e2e-shell'
const SHELL = ['/', '/app.js']

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) =>
        cache.addAll(SHELL).then(() =>
          // Two pages (index.html, storm.html) share chunks: precache every script the built pages name.
          Promise.all(['/', '/storm.html'].map((page) => fetch(page).then((response) => (response.ok ? response.text() : '')))).then((pages) => {
            const scripts = new Set(pages.flatMap((html) => [...html.matchAll(/(?:src|href)="(\/[^"]+\.js)"/g)].map((match) => match[1])))
            return cache.addAll([...scripts, '/storm.html'])
          }),
        ),
      )
      .then(() => self.skipWaiting()),
  )
})

self.addEventListener('activate', (event) => {
  event.waitUntil(self.clients.claim())
})

self.addEventListener('fetch', (event) => {
  const request = event.request
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return
  event.respondWith(
    fetch(request).then(
      (response) => {
        if (response.ok) {
          const copy = response.clone()
          event.waitUntil(caches.open(CACHE).then((cache) => cache.put(request, copy)))
        }
        return response
      },
      () => caches.match(request, { ignoreSearch: true, ignoreVary: true }).then((cached) => cached ?? Response.error()),
    ),
  )
})
