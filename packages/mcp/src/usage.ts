// The usage lines of `cairn mcp`, importable without loading the MCP SDK (the `cairn` command prints them).
export const MCP_USAGE = `  cairn mcp --plan ID [--server URL [--token T] [--outbox DIR] | --data DIR] [--actor agent:NAME]
            [--families cairn,...] [--format native|checklist|reminder|open-tasks]
      A stdio MCP server exposing the plan's task tools and the rendered plan (resource cairn://plan/ID),
      synced live through a Cairn server, or on local disk. The token may also come from CAIRN_TOKEN. The actor
      defaults to agent:<the token's subject>, else agent:mcp. Edits the server has not acknowledged are kept
      in the outbox (default $XDG_STATE_HOME/cairn/outbox, else ~/.local/state/cairn/outbox) and sent first by
      the next run for the plan.
`;
