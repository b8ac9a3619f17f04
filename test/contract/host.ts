// What a host of the server contract is: anything that serves Cairn's wire (docs/PROTOCOL.md) and HTTP API on a
// loopback port (`cairn serve` under Node, Bun or Deno; the Durable Object host in workerd). The contract talks to
// it only over the network, the way users' clients do, so a host hands back URLs and a stop function, never an
// object of its own; it is configured the way `cairn serve` is (environment and options). The registry of hosts
// is hosts.ts.
export interface HostOptions {
  /** CAIRN_SECRET: auth is on in every contract run (tokens are signed with it by the tests). */
  secret: string;
  /** CAIRN_JUDGE_URL and CAIRN_JUDGE_MODEL: an OpenAI-compatible endpoint that judges open tasks (auto-close). */
  judge?: { url: string; model: string };
  /** CAIRN_LLM_BASE_URL, CAIRN_LLM_MODEL and CAIRN_LLM_API_KEY: the endpoint behind the model proxy (`/api/model`). */
  model?: { url: string; model: string; apiKey: string };
  /** How long a claimed task's holder may be absent before the claim is freed (`cairn serve --lease-ms`). */
  leaseMs?: number;
}

export interface RunningHost {
  /** `http://127.0.0.1:PORT`: the HTTP API is under `/api/`. */
  http: string;
  /** `ws://127.0.0.1:PORT`: clients sync at `/sync/:plan`. */
  ws: string;
  /** What the host printed so far (stdout and stderr), for failure messages. */
  output(): string;
  /** Stops the host and removes its storage. */
  stop(): Promise<void>;
}

/** The few answers a host gives differently from `cairn serve`, each for a reason docs/PROTOCOL.md states. */
export interface HostDifferences {
  /**
   * `/metrics` counts one plan's object: `GET /metrics?plan=<planId>`, and a bare `/metrics` is a 400 (the Durable
   * Object host, where every plan is an object of its own; decision 049).
   */
  metricsPerPlan?: true;
}

export interface ContractHost {
  name: string;
  /** What this host answers differently from `cairn serve`, on purpose (none for `cairn serve` itself). */
  differences?: HostDifferences;
  /** Starts a fresh host on a free port with empty storage; resolves once it serves. */
  start(options: HostOptions): Promise<RunningHost>;
}

/** `options` as `cairn serve` reads them from its environment (the Worker's `vars` and secrets at the edge). */
export function serveEnvironment(options: HostOptions): Record<string, string> {
  return {
    CAIRN_SECRET: options.secret,
    ...(options.judge ? { CAIRN_JUDGE_URL: options.judge.url, CAIRN_JUDGE_MODEL: options.judge.model } : {}),
    ...(options.model
      ? {
          CAIRN_LLM_BASE_URL: options.model.url,
          CAIRN_LLM_MODEL: options.model.model,
          CAIRN_LLM_API_KEY: options.model.apiKey,
        }
      : {}),
  };
}
