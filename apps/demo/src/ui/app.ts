// The page: header (share link, sync state, undo/redo, settings), who is here, the chat with the agent on one
// side and the plan (list or dependency graph) on the other; on a narrow screen one of them at a time.
import { createChat, FAMILY_NAMES, type FamilyName } from '@cairn/core';
import { readSkills } from '@cairn/core/learning';
import { BrowserAgent } from '../agent/agent.js';
import { OFFLINE_LABEL } from '../agent/offline-planner.js';
import {
  buildModel,
  loadFamily,
  loadModelChoice,
  loadTimeoutSeconds,
  type ModelChoice,
  type ServerModel,
  saveFamily,
  saveModelChoice,
  saveTimeoutSeconds,
} from '../agent/settings.js';
import { colorFor, h, replace, setAttr, setText } from '../dom.js';
import { agentActor, saveIdentity, userActor } from '../identity.js';
import type { Session } from '../session.js';
import { ChatPanel } from './chat-panel.js';
import { createAttempt, type UiContext } from './context.js';
import { GraphView } from './graph-view.js';
import { createHeader } from './header.js';
import { LearnedPanel } from './learned-panel.js';
import { PresenceBar, participants, tagsByTask } from './presence.js';
import { SettingsDialog, type SettingsValues } from './settings-dialog.js';
import { TaskList } from './task-list.js';

type View = 'chat' | 'list' | 'graph' | 'learned';

const FAMILY_LABELS: Record<FamilyName, string> = {
  cairn: 'native (add_tasks, update_tasks, …)',
  task_manage: 'task_manage (one tool, a checklist)',
  todo: 'todo (TodoWrite style)',
  task_graph: 'task_graph (create, complete, list ready)',
  ongoing_task: 'ongoing_task (conversation tasks)',
  cairn_compact: 'compact native (read, write, claim)',
};
/** The offline planner speaks the five seed families; the compact one is offered to models that need no script. */
const OFFERED_FAMILIES = FAMILY_NAMES.filter((f) => f !== 'cairn_compact');

export class App {
  readonly el: HTMLElement;
  readonly list: TaskList;
  readonly graph: GraphView;
  readonly learned: LearnedPanel;
  readonly agent: BrowserAgent;
  private readonly ctx: UiContext;
  private readonly toast: HTMLDivElement;
  private toastTimer = 0;
  private readonly names = new Map<string, string>();
  private readonly presenceBar: PresenceBar;
  private readonly undoButton: HTMLButtonElement;
  private readonly redoButton: HTMLButtonElement;
  private readonly modelLabel: HTMLSpanElement;
  private readonly chatPanel: ChatPanel;
  private readonly settings: SettingsDialog;
  private readonly tabs: Record<View, HTMLButtonElement>;
  private modelChoice: ModelChoice;
  private agentTask: string | null = null;

  constructor(
    private readonly session: Session,
    private readonly server: ServerModel,
  ) {
    this.toast = h('div', { className: 'toast', attrs: { role: 'status', 'aria-live': 'polite' } });
    this.toast.hidden = true;
    this.ctx = {
      plan: session.plan,
      nameOf: (actor) => this.nameOf(actor),
      notify: (message, action) => this.notify(message, action),
      attempt: createAttempt((message) => this.notify(message)),
      focusTask: (id) => this.setPresence({ activeTask: id }),
    };
    this.modelChoice = loadModelChoice(server);
    this.agent = this.createAgent();
    this.undoButton = h('button', {
      text: 'Undo',
      attrs: { type: 'button', title: 'Undo your last edit (Ctrl+Z)' },
      on: { click: () => this.undo() },
    });
    this.redoButton = h('button', {
      text: 'Redo',
      attrs: { type: 'button', title: 'Redo (Ctrl+Shift+Z)' },
      on: { click: () => this.redo() },
    });
    this.settings = new SettingsDialog(server, (values) => this.applySettings(values));
    this.presenceBar = new PresenceBar((id) => session.plan.get(id)?.title);
    this.modelLabel = h('span', { className: 'model-label' });
    this.chatPanel = this.createChatPanel();
    this.list = new TaskList(this.ctx);
    this.graph = new GraphView(session.plan, (id) => {
      this.show('list');
      this.list.reveal(id);
    });
    this.learned = new LearnedPanel({
      scope: session.scope,
      skills: session.skills,
      learn: () => this.learnFromConversation(),
      setStatus: (skillId, status) => this.setSkillStatus(skillId, status),
      notify: (message) => this.notify(message),
    });
    this.tabs = this.createTabs();
    this.el = this.layout();
    this.show('list');
    this.listen();
  }

  /** The browser's own agent: it plans in this page's chat, as the user's agent actor. */
  private createAgent(): BrowserAgent {
    const { session, server } = this;
    const agentId = agentActor(session.identity);
    const agent = new BrowserAgent(
      {
        plan: session.plan,
        chat: createChat(session.doc, { actor: agentId }),
        actor: agentId,
        name: () => this.agentName(),
        owner: userActor(session.identity),
        nameOf: (actor) => this.nameOf(actor),
        presence: () =>
          participants(session.awareness)
            .filter((p) => p.id !== agentId)
            .map((p) => ({ actor: p.id, taskId: p.activeTask })),
        onActivity: (taskId) => {
          this.agentTask = taskId;
          this.publishAgent();
        },
        traces: session.traces,
        skills: () => readSkills(session.skills),
        timeoutMs: () => loadTimeoutSeconds() * 1000,
      },
      buildModel(this.modelChoice, server, session.plan, session.planId, session.token),
    );
    agent.setFamily(loadFamily());
    return agent;
  }

  /** The chat, with a toolbar naming the agent's model and choosing its tool family. */
  private createChatPanel(): ChatPanel {
    const familySelect = h(
      'select',
      {
        attrs: { 'aria-label': 'Tool family' },
        on: {
          change: () => {
            const family = familySelect.value as FamilyName;
            this.agent.setFamily(family);
            saveFamily(family);
          },
        },
      },
      ...OFFERED_FAMILIES.map((f) => h('option', { text: FAMILY_LABELS[f], attrs: { value: f } })),
    );
    familySelect.value = this.agent.currentFamily;
    const toolbar = h(
      'div',
      { className: 'agent-bar' },
      h('span', { className: 'agent-model' }, h('span', { text: 'Agent: ' }), this.modelLabel),
      h('label', { className: 'field inline' }, h('span', { text: 'Tools' }), familySelect),
    );
    const panel = new ChatPanel({
      chat: this.session.chat,
      nameOf: (actor) => this.nameOf(actor),
      colorOf: (actor) => (actor === 'system' ? '#666' : colorFor(actor)),
      onSend: (text) => this.send(text),
      toolbar,
    });
    this.renderModelLabel();
    return panel;
  }

  private createTabs(): Record<View, HTMLButtonElement> {
    const tab = (view: View, label: string) =>
      h('button', {
        className: `tab tab-${view}`,
        text: label,
        attrs: { type: 'button', role: 'tab', 'aria-selected': 'false' },
        on: { click: () => this.show(view) },
      });
    return {
      chat: tab('chat', 'Chat'),
      list: tab('list', 'List'),
      graph: tab('graph', 'Graph'),
      learned: tab('learned', 'Learned'),
    };
  }

  /** Header, who is here, the tabs, then the chat pane beside the plan pane (list, graph or learned). */
  private layout(): HTMLElement {
    const header = createHeader({
      session: this.session,
      actions: [this.undoButton, this.redoButton],
      openSettings: () =>
        this.settings.open({
          name: this.session.identity.name,
          model: this.modelChoice,
          timeoutSeconds: loadTimeoutSeconds(),
        }),
      notify: (message) => this.notify(message),
    });
    const planPane = h('div', { className: 'pane pane-plan' }, this.list.el, this.graph.el, this.learned.el);
    return h(
      'div',
      { className: 'app' },
      header,
      this.presenceBar.el,
      h(
        'nav',
        { className: 'tabs', attrs: { role: 'tablist', 'aria-label': 'Views' } },
        this.tabs.chat,
        this.tabs.list,
        this.tabs.graph,
        this.tabs.learned,
      ),
      h(
        'main',
        { className: 'panes' },
        h('div', { className: 'pane pane-chat' }, this.chatPanel.el),
        planPane,
      ),
      this.toast,
      this.settings.el,
    );
  }

  /** Keeps presence, the undo buttons and the keyboard shortcuts live. */
  private listen(): void {
    this.session.awareness.on('change', () => this.renderPresence());
    this.setPresence({});
    this.publishAgent();
    this.renderPresence();
    // onChange runs once the undo manager has filed the step (docs/decisions/060), so canUndo() is current here.
    this.session.plan.onChange(() => this.renderUndo());
    this.renderUndo();
    document.addEventListener('keydown', (event) => this.onKey(event));
  }

  show(view: View): void {
    this.el.dataset['view'] = view;
    for (const [name, button] of Object.entries(this.tabs))
      setAttr(button, 'aria-selected', String(name === view));
    // On a wide screen the chat is always there; "chat" then means the list beside it.
    this.list.el.hidden = view === 'graph' || view === 'learned';
    this.graph.el.hidden = view !== 'graph';
    this.learned.el.hidden = view !== 'learned';
    this.graph.setVisible(view === 'graph');
    if (view === 'chat') this.chatPanel.focus();
  }

  private send(text: string): void {
    const entry = this.session.chat.append({ role: 'user', text });
    void this.agent.respond(entry.id).finally(() => this.renderBusy());
    this.renderBusy();
  }

  /** What the agent is doing, with a way to stop a call that hangs; a message sent meanwhile is said to wait. */
  private renderBusy(): void {
    const { running, waiting } = this.agent.state;
    if (!running) {
      this.chatPanel.setBusy(null);
      return;
    }
    const name = this.agentName();
    this.chatPanel.setBusy(
      waiting > 0
        ? `${name} is still answering an earlier message; it reads yours next (${waiting} waiting).`
        : `${name} is working…`,
      () => this.agent.cancel(),
    );
  }

  /** Asks the server to distil this conversation's tool calls into a learned procedure. */
  private async learnFromConversation(): Promise<string> {
    const { planId, token } = this.session;
    const response = await fetch(`/api/plans/${encodeURIComponent(planId)}/distill`, {
      method: 'POST',
      // A write says it is JSON, even without a body: the server refuses anything else (no cross-site forms).
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
    const body = (await response.json().catch(() => ({}))) as {
      skill?: { name: string; version: number };
      job?: { lastError: string | null };
      error?: { message: string };
    };
    if (response.status === 200 && body.skill)
      return `Learned “${body.skill.name}” (version ${body.skill.version}).`;
    if (response.status === 202)
      return `Not learned yet (${body.job?.lastError ?? 'the model failed'}); it will be retried.`;
    throw new Error(body.error?.message ?? `The server answered ${response.status}.`);
  }

  /** Asks the server to retire or restore one of the scope's skills (PATCH .../skills/:skillId). */
  private async setSkillStatus(skillId: string, status: 'active' | 'retired'): Promise<string> {
    const { scope, token } = this.session;
    const response = await fetch(
      `/api/scopes/${encodeURIComponent(scope)}/skills/${encodeURIComponent(skillId)}`,
      {
        method: 'PATCH',
        headers: {
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(
          status === 'retired' ? { status, reason: `retired by ${this.session.identity.name}` } : { status },
        ),
      },
    );
    const body = (await response.json().catch(() => ({}))) as {
      skill?: { name: string };
      error?: { message: string };
    };
    if (response.status !== 200 || !body.skill)
      throw new Error(body.error?.message ?? `The server answered ${response.status}.`);
    return status === 'retired'
      ? `Retired “${body.skill.name}”: the agent is no longer offered it.`
      : `Restored “${body.skill.name}”: the agent is offered it again.`;
  }

  private undo(): void {
    if (!this.session.plan.undo()) this.notify('Nothing of yours to undo.');
  }

  private redo(): void {
    if (!this.session.plan.redo()) this.notify('Nothing to redo.');
  }

  private renderUndo(): void {
    this.undoButton.disabled = !this.session.plan.canUndo();
    this.redoButton.disabled = !this.session.plan.canRedo();
  }

  private onKey(event: KeyboardEvent): void {
    if (!(event.ctrlKey || event.metaKey) || event.altKey) return;
    const key = event.key.toLowerCase();
    const target = event.target as HTMLElement;
    // Text fields other than task titles keep their own undo.
    const ownUndo =
      (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) &&
      !target.classList.contains('task-title');
    if (ownUndo) return;
    if (key === 'z' && !event.shiftKey) {
      event.preventDefault();
      this.undo();
    } else if ((key === 'z' && event.shiftKey) || key === 'y') {
      event.preventDefault();
      this.redo();
    }
  }

  private agentName(): string {
    return `Planner for ${this.session.identity.name}`;
  }

  private nameOf(actor: string): string {
    const identity = this.session.identity;
    if (actor === userActor(identity)) return identity.name;
    if (actor === agentActor(identity)) return this.agentName();
    const known = this.names.get(actor);
    if (known) return known;
    if (actor === 'system' || actor === 'wake' || actor === 'auto_close') return actor;
    return actor.replace(/^(user|agent):/, '');
  }

  private setPresence(change: { activeTask?: string | null }): void {
    const identity = this.session.identity;
    const current = (this.session.awareness.getLocalState()?.['presence'] ?? {}) as {
      activeTask?: string | null;
    };
    this.session.setAwareness('presence', {
      id: userActor(identity),
      name: identity.name,
      kind: 'human',
      activeTask: change.activeTask !== undefined ? change.activeTask : (current.activeTask ?? null),
    });
  }

  private publishAgent(): void {
    this.session.setAwareness('agent', {
      id: agentActor(this.session.identity),
      name: this.agentName(),
      kind: 'agent',
      activeTask: this.agentTask,
    });
  }

  private renderPresence(): void {
    const people = participants(this.session.awareness);
    for (const p of people) this.names.set(p.id, p.name);
    const me = userActor(this.session.identity);
    this.presenceBar.render(people, me);
    this.list.setPresence(tagsByTask(people, me));
  }

  private applySettings({ name, model, timeoutSeconds }: SettingsValues): void {
    saveTimeoutSeconds(timeoutSeconds);
    const identity = this.session.identity;
    identity.name = name;
    saveIdentity(identity);
    this.setPresence({});
    this.publishAgent();
    this.modelChoice = model;
    saveModelChoice(model);
    this.agent.model = buildModel(
      model,
      this.server,
      this.session.plan,
      this.session.planId,
      this.session.token,
    );
    this.renderModelLabel();
    this.notify('Settings saved.');
  }

  private renderModelLabel(): void {
    const label = this.agent.model.label;
    setText(this.modelLabel, label);
    this.modelLabel.classList.toggle('is-offline', label === OFFLINE_LABEL);
  }

  private notify(message: string, action?: { label: string; run: () => void }): void {
    clearTimeout(this.toastTimer);
    replace(
      this.toast,
      h('span', { text: message }),
      action
        ? h('button', {
            text: action.label,
            attrs: { type: 'button' },
            on: {
              click: () => {
                action.run();
                this.toast.hidden = true;
              },
            },
          })
        : null,
    );
    this.toast.hidden = false;
    this.toastTimer = window.setTimeout(() => {
      this.toast.hidden = true;
    }, 6000);
  }
}
