// The settings dialog: your display name and the agent's model (offline planner, the server's model when it
// offers one, or an OpenAI-compatible endpoint with base URL, model and key, kept in this browser only).
import type { ModelChoice, ServerModel } from '../agent/settings.js';
import { h } from '../dom.js';

export interface SettingsValues {
  name: string;
  model: ModelChoice;
  /** How long one model call may take before the agent stops it. */
  timeoutSeconds: number;
}

export class SettingsDialog {
  readonly el: HTMLDialogElement;
  private readonly name: HTMLInputElement;
  private readonly radios: Record<ModelChoice['kind'], HTMLInputElement>;
  private readonly baseUrl: HTMLInputElement;
  private readonly model: HTMLInputElement;
  private readonly apiKey: HTMLInputElement;
  private readonly custom: HTMLFieldSetElement;
  private readonly timeout: HTMLInputElement;

  constructor(
    private readonly server: ServerModel,
    private readonly onSave: (values: SettingsValues) => void,
  ) {
    this.name = h('input', {
      attrs: { type: 'text', maxlength: 60, required: true, autocomplete: 'nickname' },
    });
    const radio = (kind: ModelChoice['kind']) =>
      h('input', {
        attrs: { type: 'radio', name: 'model-kind', value: kind },
        on: { change: () => this.sync() },
      });
    this.radios = { offline: radio('offline'), server: radio('server'), custom: radio('custom') };
    this.radios.server.disabled = !server.available;
    this.baseUrl = h('input', {
      attrs: { type: 'url', placeholder: 'https://api.openai.com/v1', autocomplete: 'off' },
    });
    this.model = h('input', { attrs: { type: 'text', placeholder: 'gpt-4o-mini', autocomplete: 'off' } });
    this.apiKey = h('input', { attrs: { type: 'password', autocomplete: 'off', placeholder: 'sk-…' } });
    this.timeout = h('input', {
      attrs: { type: 'number', min: 1, max: 600, step: 1, required: true, inputmode: 'numeric' },
    });
    this.custom = h(
      'fieldset',
      { className: 'custom-model' },
      h('legend', { text: 'OpenAI-compatible endpoint' }),
      h('label', { className: 'field' }, h('span', { text: 'Base URL' }), this.baseUrl),
      h('label', { className: 'field' }, h('span', { text: 'Model' }), this.model),
      h('label', { className: 'field' }, h('span', { text: 'API key' }), this.apiKey),
      h('p', {
        className: 'muted',
        text: 'The key is stored in this browser (localStorage) and sent only to that endpoint. The endpoint must allow requests from this page (CORS).',
      }),
    );
    const form = h(
      'form',
      {
        attrs: { method: 'dialog' },
        on: {
          submit: (event) => {
            event.preventDefault();
            const values = this.read();
            if (!values) return;
            this.onSave(values);
            this.el.close();
          },
        },
      },
      h('h2', { text: 'Settings', attrs: { id: 'settings-title' } }),
      h('label', { className: 'field' }, h('span', { text: 'Your name' }), this.name),
      h(
        'fieldset',
        {},
        h('legend', { text: 'Agent model' }),
        h(
          'label',
          { className: 'choice' },
          this.radios.offline,
          h('span', { text: 'Built-in offline planner — rule-based, not an AI; works without a network' }),
        ),
        h(
          'label',
          { className: 'choice' },
          this.radios.server,
          h('span', {
            text: server.available
              ? `The server's model: ${server.label ?? server.model} (its key stays on the server)`
              : "The server's model (this server has none configured)",
          }),
        ),
        h(
          'label',
          { className: 'choice' },
          this.radios.custom,
          h('span', { text: 'An OpenAI-compatible endpoint' }),
        ),
      ),
      this.custom,
      h(
        'label',
        { className: 'field' },
        h('span', { text: 'Model timeout (seconds): a call that takes longer is stopped' }),
        this.timeout,
      ),
      h(
        'div',
        { className: 'inline actions' },
        h('button', { text: 'Save', attrs: { type: 'submit' } }),
        h('button', { text: 'Cancel', attrs: { type: 'button' }, on: { click: () => this.el.close() } }),
      ),
    );
    this.el = h('dialog', { className: 'settings', attrs: { 'aria-labelledby': 'settings-title' } }, form);
  }

  open(values: SettingsValues): void {
    this.name.value = values.name;
    this.timeout.value = String(values.timeoutSeconds);
    this.radios[values.model.kind].checked = true;
    if (values.model.kind === 'custom') {
      this.baseUrl.value = values.model.baseUrl;
      this.model.value = values.model.model;
      this.apiKey.value = values.model.apiKey;
    }
    this.sync();
    this.el.showModal();
  }

  private sync(): void {
    const custom = this.radios.custom.checked;
    this.custom.disabled = !custom;
    this.baseUrl.required = custom;
    this.model.required = custom;
  }

  private read(): SettingsValues | null {
    const name = this.name.value.trim();
    const timeoutSeconds = Number(this.timeout.value);
    if (!name || !Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 600) return null;
    const kind =
      (Object.keys(this.radios) as Array<ModelChoice['kind']>).find((k) => this.radios[k].checked) ??
      'offline';
    const model: ModelChoice =
      kind === 'custom'
        ? {
            kind,
            baseUrl: this.baseUrl.value.trim(),
            model: this.model.value.trim(),
            apiKey: this.apiKey.value.trim(),
          }
        : { kind };
    return { name, model, timeoutSeconds };
  }
}
