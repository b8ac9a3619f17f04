// Which model the in-page agent uses: the offline planner (default when nothing is configured), the server's
// model (its key stays on the server), or an OpenAI-compatible endpoint whose key is kept in this browser only.
import type { FamilyName, Plan } from '@cairn/core';
import { createOpenAIModel, type Model } from './model.js';
import { createOfflinePlanner } from './offline-planner.js';

export type ModelChoice =
  | { kind: 'offline' }
  | { kind: 'server' }
  | { kind: 'custom'; baseUrl: string; model: string; apiKey: string };

export interface ServerModel {
  available: boolean;
  model?: string;
  label?: string;
}

const MODEL_KEY = 'cairn.model';
const FAMILY_KEY = 'cairn.family';
const TIMEOUT_KEY = 'cairn.modelTimeout';
/** How long one model call may take by default: long enough for a slow model, short enough to notice. */
export const DEFAULT_TIMEOUT_SECONDS = 60;

export function loadModelChoice(server: ServerModel): ModelChoice {
  try {
    const stored = JSON.parse(localStorage.getItem(MODEL_KEY) ?? 'null') as ModelChoice | null;
    if (stored?.kind === 'offline') return stored;
    if (stored?.kind === 'server' && server.available) return stored;
    if (stored?.kind === 'custom' && stored.baseUrl && stored.model) return stored;
  } catch {
    // Unreadable: fall through to the default.
  }
  return server.available ? { kind: 'server' } : { kind: 'offline' };
}

export function saveModelChoice(choice: ModelChoice): void {
  localStorage.setItem(MODEL_KEY, JSON.stringify(choice));
}

export function loadFamily(): FamilyName {
  const stored = localStorage.getItem(FAMILY_KEY);
  return stored && ['cairn', 'task_manage', 'todo', 'task_graph', 'ongoing_task'].includes(stored)
    ? (stored as FamilyName)
    : 'cairn';
}

export function saveFamily(family: FamilyName): void {
  localStorage.setItem(FAMILY_KEY, family);
}

/** The model call timeout chosen in this browser, in seconds (1 to 600). */
export function loadTimeoutSeconds(): number {
  const stored = Number(localStorage.getItem(TIMEOUT_KEY));
  return Number.isInteger(stored) && stored >= 1 && stored <= 600 ? stored : DEFAULT_TIMEOUT_SECONDS;
}

export function saveTimeoutSeconds(seconds: number): void {
  localStorage.setItem(TIMEOUT_KEY, String(seconds));
}

/** Asks the server whether it offers a model; a server without the endpoint simply has none. */
export async function fetchServerModel(): Promise<ServerModel> {
  try {
    const response = await fetch('/api/model', { headers: { accept: 'application/json' } });
    if (!response.ok) return { available: false };
    const json = (await response.json()) as ServerModel;
    return json.available ? json : { available: false };
  } catch {
    return { available: false };
  }
}

/** `token`: the plan's token, when the server requires one (its proxy authorizes model calls with it). */
export function buildModel(
  choice: ModelChoice,
  server: ServerModel,
  plan: Plan,
  planId: string,
  token: string | null = null,
): Model {
  if (choice.kind === 'server' && server.available) {
    return createOpenAIModel({
      baseUrl: '/api/model',
      model: server.model ?? 'server',
      label: `Server model: ${server.label ?? server.model ?? 'configured on the server'}`,
      headers: { 'x-cairn-plan': planId, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
  }
  if (choice.kind === 'custom') {
    return createOpenAIModel({
      baseUrl: choice.baseUrl,
      model: choice.model,
      apiKey: choice.apiKey,
      label: `${choice.model} (${hostOf(choice.baseUrl)})`,
    });
  }
  return createOfflinePlanner(plan);
}

function hostOf(url: string): string {
  try {
    return new URL(url, location.href).host;
  } catch {
    return url;
  }
}
