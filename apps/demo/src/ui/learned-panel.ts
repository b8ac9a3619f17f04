// The "Learned" panel: the procedures learned in this plan's scope, each with its versions and their success
// rates, live from the scope's skills document; a button to retire or restore each, and one to learn from this
// conversation now. Only the server writes skills, so both buttons ask it; the panel redraws when the change syncs.
import { currentVersion, readSkills, type Skill, type SkillVersion, successRate } from '@cairn/core/learning';
import type * as Y from 'yjs';
import { h, replace } from '../dom.js';

export interface LearnedPanelOptions {
  scope: string;
  /** The scope's skills document (synced read-only from the server). */
  skills: Y.Doc;
  /** Asks the server to learn from this conversation; resolves with a sentence saying what came of it. */
  learn: () => Promise<string>;
  /** Asks the server to retire a skill (no longer offered) or restore it; resolves with a sentence. */
  setStatus: (skillId: string, status: 'active' | 'retired') => Promise<string>;
  notify: (message: string) => void;
}

export class LearnedPanel {
  readonly el: HTMLElement;
  private readonly list: HTMLOListElement;
  private readonly button: HTMLButtonElement;

  constructor(private readonly options: LearnedPanelOptions) {
    this.button = h('button', {
      className: 'learn-button',
      text: 'Learn from this conversation',
      attrs: { type: 'button', title: 'Distil the tool calls of this conversation into a learned procedure' },
      on: { click: () => void this.learn() },
    });
    this.list = h('ol', { className: 'learned-list', attrs: { 'aria-label': 'Learned procedures' } });
    this.el = h(
      'section',
      { className: 'learned', attrs: { 'aria-label': 'Learned' } },
      h(
        'div',
        { className: 'learned-head' },
        h('h2', { text: `Learned in “${options.scope}”` }),
        this.button,
      ),
      h('p', {
        className: 'hint',
        text: 'When a task closes as done, the tool calls behind it become a procedure the agent is offered for similar requests.',
      }),
      this.list,
    );
    options.skills.getMap('skills').observe(() => this.render());
    this.render();
  }

  private learn(): Promise<void> {
    return this.ask(this.button, () => this.options.learn());
  }

  /** Runs a request to the server with its button disabled meanwhile, telling what came of it. */
  private async ask(button: HTMLButtonElement, request: () => Promise<string>): Promise<void> {
    button.disabled = true;
    try {
      this.options.notify(await request());
    } catch (error) {
      this.options.notify(error instanceof Error ? error.message : String(error));
    } finally {
      button.disabled = false;
    }
  }

  private statusButton(skill: Skill, name: string): HTMLButtonElement {
    const retire = skill.status === 'active';
    const button: HTMLButtonElement = h('button', {
      className: 'learned-status-button',
      text: retire ? 'Retire' : 'Restore',
      attrs: {
        type: 'button',
        title: retire ? `Stop offering “${name}” to the agent` : `Offer “${name}” to the agent again`,
      },
      on: {
        click: () =>
          void this.ask(button, () => this.options.setStatus(skill.id, retire ? 'retired' : 'active')),
      },
    });
    return button;
  }

  private render(): void {
    const skills = readSkills(this.options.skills);
    if (skills.length === 0) {
      replace(this.list, h('li', { className: 'learned-empty', text: 'Nothing learned yet.' }));
      return;
    }
    replace(this.list, ...skills.map((skill) => this.item(skill)));
  }

  private item(skill: Skill): HTMLLIElement {
    const current = currentVersion(skill);
    return h(
      'li',
      { className: `learned-skill is-${skill.status}`, dataset: { skill: skill.id } },
      h(
        'div',
        { className: 'learned-title' },
        h('strong', { text: current.name }),
        h('span', { className: 'badge', text: skill.status === 'active' ? 'active' : 'retired' }),
        h('span', { className: 'learned-version', text: `version ${current.version}` }),
        this.statusButton(skill, current.name),
      ),
      h('div', { className: 'learned-rate', text: `Success: ${rate(current)}` }),
      h('div', {
        className: 'learned-author',
        text:
          current.author.kind === 'model'
            ? `Written by the model ${current.author.model}`
            : 'Recorded from the tool calls (offline, not written by a model)',
      }),
      h('div', { className: 'learned-triggers', text: `When: ${current.triggers.join(' · ')}` }),
      h('div', { className: 'learned-steps', text: current.steps.map((s) => s.tool).join(' → ') }),
      skill.status === 'retired' && skill.statusReason
        ? h('div', { className: 'learned-reason', text: `Retired: ${skill.statusReason}` })
        : null,
      h(
        'ul',
        { className: 'learned-versions', attrs: { 'aria-label': 'Versions' } },
        ...skill.versions.map((v) => h('li', { text: `v${v.version}: ${rate(v)}` })),
      ),
    );
  }
}

function rate(version: SkillVersion): string {
  const value = successRate(version);
  const { done, failed } = version.stats;
  return value === null ? 'not yet used' : `${done} of ${done + failed} (${Math.round(value * 100)}%)`;
}
