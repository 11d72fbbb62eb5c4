import type { OperationSamples } from './types.js';

/** GET /v1/me and GET /v1/tools: what the key is, and what it can run. */
export const ACCOUNT_SAMPLES: Record<string, OperationSamples> = {
  getMe: {
    vars: [],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/v1/me" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun(); // TOOLRUN_API_KEY and TOOLRUN_BASE_URL from the environment
const me = await client.me();
console.log(\`\${me.team.name} (\${me.team.plan}): \${me.sparks_available} Sparks\`);
console.log(\`key \${me.api_key.name}, scopes \${me.api_key.scopes.join(', ')}\`);`,
    python: `import toolrun

client = toolrun.Toolrun()  # TOOLRUN_API_KEY and TOOLRUN_BASE_URL from the environment
me = client.me()
print(f"{me['team']['name']} ({me['team']['plan']}): {me['sparks_available']} Sparks")
print(f"key {me['api_key']['name']}, scopes {', '.join(me['api_key']['scopes'])}")`,
  },

  listTools: {
    vars: [],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/v1/tools" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const { data } = await client.tools.list();
for (const tool of data) {
  const slots = tool.inputs.map((i) => \`\${i.name}:\${i.kind}\`).join(' ');
  console.log(tool.id, tool.allowed ? 'allowed' : 'not on this plan', slots);
}`,
    python: `import toolrun

client = toolrun.Toolrun()
for tool in client.tools.list():
    slots = " ".join(f"{i['name']}:{i['kind']}" for i in tool["inputs"])
    print(tool["id"], "allowed" if tool["allowed"] else "not on this plan", slots)`,
  },
};
