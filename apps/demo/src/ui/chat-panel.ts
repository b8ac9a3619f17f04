// The chat side: the plan's shared transcript (everyone's messages, the agents' replies and each tool call with
// its arguments and result), kept live incrementally from the chat's change events, and the message box.

import type { Chat, ChatEntry } from '@cairn/core';
import { h, setText } from '../dom.js';

export interface ChatPanelOptions {
  chat: Chat;
  nameOf: (actor: string) => string;
  colorOf: (actor: string) => string;
  onSend: (text: string) => void;
  /** The agent controls (model, tool family) shown above the transcript. */
  toolbar: HTMLElement;
}

export class ChatPanel {
  readonly el: HTMLElement;
  private readonly list: HTMLOListElement;
  private readonly items = new Map<string, HTMLLIElement>();
  private readonly busy: HTMLDivElement;
  private readonly busyText: HTMLSpanElement;
  private onCancel: (() => void) | null = null;
  private readonly input: HTMLTextAreaElement;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: ChatPanelOptions) {
    this.list = h('ol', {
      className: 'chat-log',
      attrs: { 'aria-label': 'Conversation', 'aria-live': 'polite' },
    });
    this.busyText = h('span', { attrs: { role: 'status' } });
    this.busy = h(
      'div',
      { className: 'chat-busy' },
      this.busyText,
      h('button', {
        text: 'Cancel',
        className: 'link',
        attrs: { type: 'button', 'aria-label': 'Cancel the model call' },
        on: { click: () => this.onCancel?.() },
      }),
    );
    this.busy.hidden = true;
    this.input = h('textarea', {
      attrs: {
        'aria-label': 'Message',
        rows: 2,
        maxlength: 4000,
        placeholder: 'Ask the agent, e.g. “plan a launch: write post, review, publish”',
      },
      on: {
        keydown: (event) => {
          if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
            event.preventDefault();
            this.send();
          }
        },
      },
    });
    const form = h(
      'form',
      {
        className: 'chat-form',
        on: {
          submit: (event) => {
            event.preventDefault();
            this.send();
          },
        },
      },
      this.input,
      h('button', { text: 'Send', attrs: { type: 'submit' } }),
    );
    this.el = h(
      'section',
      { className: 'chat', attrs: { 'aria-label': 'Chat with the agent' } },
      options.toolbar,
      this.list,
      this.busy,
      form,
    );
    for (const entry of options.chat.list()) this.add(entry);
    this.unsubscribe = options.chat.onChange((event) => {
      const stick = this.atBottom();
      for (const id of event.added) {
        const entry = options.chat.get(id);
        if (entry) this.add(entry);
      }
      for (const id of event.updated) {
        const entry = options.chat.get(id);
        const old = this.items.get(id);
        if (entry && old) {
          const fresh = this.render(entry);
          old.replaceWith(fresh);
          this.items.set(id, fresh);
        }
      }
      if (stick) this.scrollToEnd();
    });
    if (options.chat.length === 0) this.list.append(this.hint());
  }

  /** Shows what the agent is doing and a Cancel button that calls `onCancel`, or hides both (null). */
  setBusy(text: string | null, onCancel?: () => void): void {
    this.busy.hidden = text === null;
    this.onCancel = onCancel ?? null;
    setText(this.busyText, text ?? '');
  }

  focus(): void {
    this.input.focus();
  }

  destroy(): void {
    this.unsubscribe();
  }

  private send(): void {
    const text = this.input.value.trim();
    if (!text) return;
    this.input.value = '';
    this.options.onSend(text);
  }

  private add(entry: ChatEntry): void {
    this.list.querySelector('.chat-hint')?.remove();
    const li = this.render(entry);
    this.items.set(entry.id, li);
    this.list.append(li);
  }

  private render(entry: ChatEntry): HTMLLIElement {
    const { nameOf, colorOf } = this.options;
    const author = h('span', {
      className: 'msg-author',
      text: entry.role === 'system' ? 'Notice' : nameOf(entry.actor),
    });
    author.style.color = colorOf(entry.actor);
    const time = h('time', {
      text: new Date(entry.at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }),
      attrs: { datetime: new Date(entry.at).toISOString() },
    });
    const calls = entry.toolCalls ?? [];
    return h(
      'li',
      { className: `msg msg-${entry.role}`, dataset: { id: entry.id, actor: entry.actor } },
      h('div', { className: 'msg-head' }, author, time),
      entry.text ? h('div', { className: 'msg-text', text: entry.text }) : null,
      calls.length > 0
        ? h(
            'ul',
            { className: 'tool-calls', attrs: { 'aria-label': 'Tool calls' } },
            ...calls.map((call) =>
              h(
                'li',
                { className: `tool-call${call.isError ? ' is-error' : ''}`, dataset: { tool: call.name } },
                h(
                  'details',
                  {},
                  h('summary', {
                    text: `Tool call: ${call.name} ${call.result === undefined ? '…' : call.isError ? '— refused' : '✓'}`,
                  }),
                  h('pre', { className: 'tool-args', text: pretty(call.arguments) }),
                  call.result !== undefined
                    ? h('pre', { className: 'tool-result', text: pretty(call.result) })
                    : null,
                ),
              ),
            ),
          )
        : null,
    );
  }

  private hint(): HTMLLIElement {
    return h(
      'li',
      { className: 'chat-hint' },
      h('p', {
        text: 'Everyone on this plan sees this conversation. Try “plan a launch: write post, review, publish”, then “done 2”, “start the review” or “what’s next?”.',
      }),
    );
  }

  private atBottom(): boolean {
    return this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40;
  }

  private scrollToEnd(): void {
    this.list.scrollTop = this.list.scrollHeight;
  }
}

function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}
