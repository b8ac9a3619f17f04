// The demo's service worker: precaches the built app shell so the page reloads while the server is down (the
// plan itself comes from IndexedDB). The build fills in the asset list and a version; sync and API stay live.
const ASSETS = self.__CAIRN_ASSETS__;
const CACHE = `cairn-demo-${self.__CAIRN_VERSION__}`;

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(ASSETS))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((key) => key !== CACHE).map((key) => caches.delete(key))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin) return;
  if (/^\/(sync|api)(\/|$)/.test(url.pathname)) return;
  if (request.mode === 'navigate') {
    // The network first, so a new build is picked up; the cached shell when the server cannot be reached.
    event.respondWith(
      fetch(request).catch(() =>
        caches
          .open(CACHE)
          .then((cache) => cache.match('/'))
          .then(orOffline),
      ),
    );
    return;
  }
  // Built assets have hashed names: the cached copy is always right.
  event.respondWith(
    caches
      .open(CACHE)
      .then((cache) => cache.match(request))
      .then((hit) => hit ?? fetch(request)),
  );
});

function orOffline(response) {
  return response ?? new Response('Offline, and this page was never loaded here before.', { status: 503 });
}
