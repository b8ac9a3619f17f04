// Hostile and broken clients on every host, at the default limits `cairn serve` runs with: garbage, truncated,
// unknown and text frames (4400), a message over 8 MiB (4413), a flood of messages (4429). Each closes only its
// own connection; the plan and every other client carry on.
import { CloseCode } from '@cairn/core/protocol';
import { describe, expect, it } from 'vitest';
import { healthyPair, rawClient } from '../../packages/server/test/helpers.js';
import { storedTasks } from './auth.js';
import { type Contract, freshPlan } from './contract.js';

const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** Two healthy writers of `planId` that keep editing and getting acks while others misbehave. */
async function healthyWriters(contract: Contract, planId: string) {
  return healthyPair(contract.host().ws, planId, { token: await contract.token(planId, 'write') });
}

async function healthz(contract: Contract): Promise<number> {
  return (await fetch(`${contract.host().http}/healthz`)).status;
}

export function badInputContract(contract: Contract): void {
  describe('bad frames', () => {
    it('closes only the sender of garbage, truncated, unknown or text frames (4400)', async () => {
      const planId = freshPlan('room');
      const token = await contract.token(planId, 'write');
      const healthy = await healthyWriters(contract, planId);
      const frames: Array<number[] | string> = [
        [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // a varUint out of range
        [0, 2, 50, 1, 2], // an update announcing 50 bytes, carrying 2
        [0, 2, 4, 9, 9, 9, 9], // bytes that are not a Yjs update
        [0, 7, 0], // an unknown sync step
        [7], // an unknown message type
        [1, 5, 1, 1, 1, 1, 0x7b], // awareness whose state is not JSON
        [100, 1, 1, 0], // a Cairn ack: only the server sends those
        'hello', // a text frame
      ];
      for (const frame of frames) {
        const bad = rawClient(contract.host().ws, planId, { token });
        await bad.opened;
        if (typeof frame === 'string') bad.ws.send(frame);
        else bad.send(frame);
        const closed = await bad.closed;
        expect(closed.code, JSON.stringify(frame)).toBe(CloseCode.BadMessage);
      }
      await healthy.stillSyncing();
      expect(await healthz(contract)).toBe(200);
      expect(await storedTasks(contract, planId)).toEqual({ k1: 1 });
    });

    it('closes a message over the 8 MiB limit with 4413, naming its size and the limit', async () => {
      const planId = freshPlan('room');
      const healthy = await healthyWriters(contract, planId);
      const big = rawClient(contract.host().ws, planId, { token: await contract.token(planId, 'write') });
      await big.opened;
      big.send(new Uint8Array(MAX_MESSAGE_BYTES + 1));
      expect(await big.closed).toEqual({
        code: CloseCode.MessageTooLarge,
        reason: `Message of ${MAX_MESSAGE_BYTES + 1} bytes; the limit is ${MAX_MESSAGE_BYTES}.`,
      });
      await healthy.stillSyncing();
    });

    it('closes a flooding client with 4429 while others keep syncing', async () => {
      const planId = freshPlan('room');
      const healthy = await healthyWriters(contract, planId);
      const flood = rawClient(contract.host().ws, planId, { token: await contract.token(planId, 'write') });
      await flood.opened;
      // Past the burst of 2,000 messages at 200 per second.
      for (let i = 0; i < 4000; i++) flood.send([3]); // query awareness, over and over
      expect(await flood.closed).toEqual({
        code: CloseCode.RateLimited,
        reason: expect.stringMatching(/200 messages\/s/),
      });
      await healthy.stillSyncing();
      expect(await healthz(contract)).toBe(200);
    });
  });
}
