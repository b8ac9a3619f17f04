// The page's header: the plan's name, its sync state (a storage or sync problem spelled out), the share link and
// the page-wide actions (undo, redo, settings).
import { h, setAttr, setText } from '../dom.js';
import type { Session } from '../session.js';

const SYNC_LABELS: Record<string, string> = {
  connecting: 'Connecting…',
  offline: 'Offline — saved in this browser',
  syncing: 'Syncing…',
  saved: 'All changes saved on the server',
  refused: 'Not syncing',
};

export interface HeaderOptions {
  session: Session;
  /** Buttons shown after "New plan" (undo, redo), owned by the caller. */
  actions: HTMLElement[];
  openSettings: () => void;
  notify: (message: string) => void;
}

export function createHeader({ session, actions, openSettings, notify }: HeaderOptions): HTMLElement {
  const shareInput = h('input', {
    className: 'share-link',
    attrs: {
      type: 'text',
      readonly: true,
      'aria-label': 'Shareable link to this plan',
      value: location.href,
    },
    on: { focus: () => shareInput.select() },
  });
  const copyLink = h('button', {
    text: 'Copy link',
    attrs: { type: 'button' },
    on: {
      click: () => {
        void navigator.clipboard?.writeText(location.href).then(
          () => notify('Link copied: anyone with it can open this plan.'),
          () => {
            shareInput.focus();
            notify('Select the link and copy it.');
          },
        );
      },
    },
  });
  return h(
    'header',
    { className: 'top' },
    h('h1', { className: 'brand', text: 'Cairn' }),
    h('span', { className: 'plan-id', text: session.planId, attrs: { title: 'Plan id' } }),
    syncState(session),
    h(
      'div',
      { className: 'top-actions' },
      shareInput,
      copyLink,
      h('a', { className: 'button', text: 'New plan', attrs: { href: '/' } }),
      ...actions,
      h('button', { text: 'Settings', attrs: { type: 'button' }, on: { click: openSettings } }),
    ),
  );
}

/** The sync dot and its words, kept current. */
function syncState(session: Session): HTMLElement {
  const el = h('div', { className: 'sync', attrs: { role: 'status', 'aria-live': 'polite' } });
  const dot = h('span', { className: 'dot', attrs: { 'aria-hidden': 'true' } });
  const text = h('span', { className: 'sync-text' });
  // A storage or sync problem is spelled out, not left in a tooltip: edits may not be kept in this browser.
  const problem = h('span', { className: 'sync-problem', attrs: { role: 'alert' } });
  el.append(dot, text, problem);
  const render = () => {
    const view = session.sync;
    el.dataset['state'] = view.state;
    setText(text, SYNC_LABELS[view.state] ?? view.state);
    setText(problem, session.problem ?? '');
    setAttr(el, 'title', view.detail);
  };
  session.onSync(render);
  render();
  return el;
}
