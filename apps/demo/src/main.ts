// Entry point: who I am, which plan (`?plan=ID`, or a new one with a shareable link), open it (IndexedDB first,
// then the server), and mount the page. In a production build a service worker keeps the shell for offline use.
import './style.css';
import { fetchServerModel } from './agent/settings.js';
import { h } from './dom.js';
import { loadIdentity, planIdFromLocation, tokenFromLocation } from './identity.js';
import { openSession } from './session.js';
import { App } from './ui/app.js';

async function start(): Promise<void> {
  const root = document.getElementById('app')!;
  const identity = loadIdentity();
  const found = planIdFromLocation(location, history);
  if (!found.ok) {
    root.replaceChildren(
      h(
        'main',
        { className: 'boot' },
        h('h1', { text: 'That is not a plan id' }),
        h('p', { text: `“${found.given}” is not a plan id: use up to 128 letters, digits and . _ : -` }),
        h('a', { className: 'button', text: 'Start a new plan', attrs: { href: '/' } }),
      ),
    );
    return;
  }
  const token = tokenFromLocation(location);
  const [session, server] = await Promise.all([
    openSession({ planId: found.planId, identity, ...(token ? { token } : {}) }),
    fetchServerModel(),
  ]);
  const app = new App(session, server);
  root.replaceChildren(app.el);
  document.title = `Cairn — ${found.planId}`;
  // A handle for people poking at the demo from the console (and for its end-to-end tests).
  Object.assign(window, { cairnDemo: { session, app, plan: session.plan, chat: session.chat } });
}

if (__OFFLINE_SHELL__ && 'serviceWorker' in navigator) {
  navigator.serviceWorker.register('/sw.js').catch((error: unknown) => {
    console.warn('[cairn] no offline shell:', error);
  });
}

start().catch((error: unknown) => {
  console.error(error);
  document.getElementById('app')?.replaceChildren(
    h('p', {
      className: 'boot',
      text: `The plan could not be opened: ${error instanceof Error ? error.message : String(error)}`,
    }),
  );
});
