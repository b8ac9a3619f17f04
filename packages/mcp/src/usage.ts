// The usage lines of `cairn mcp`, importable without loading the MCP SDK (the `cairn` command prints them).
export const MCP_USAGE = `  cairn mcp --plan ID [--server URL [--token T] | --data DIR] [--actor agent:NAME] [--families cairn,...]
            [--format native|checklist|reminder|open-tasks]
      A stdio MCP server exposing the plan's task tools and the rendered plan (resource cairn://plan/ID),
      synced live through a Cairn server, or on local disk. The token may also come from CAIRN_TOKEN. The actor
      defaults to agent:<the token's subject>, else agent:mcp.
`;
