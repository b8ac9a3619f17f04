// What a LangChain chat model is shown, as the scripted sessions record it: the system prompt, and the rest as text.
import type { BaseMessage } from '@langchain/core/messages';
import type { SeenCall } from './script.js';

export const messageText = (m: BaseMessage): string =>
  typeof m.content === 'string' ? m.content : JSON.stringify(m.content);

export function seenCall(messages: BaseMessage[]): SeenCall {
  const system = messages.find((m) => m.type === 'system');
  return {
    system: system ? messageText(system) : '',
    rest: messages
      .filter((m) => m !== system)
      .map(messageText)
      .join('\n'),
  };
}
