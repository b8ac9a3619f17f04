// The hub's due-time index over a scheduler with one alarm, the way a Durable Object has one: the alarm is the
// earliest time of every queue, nothing is armed while idle, and `runDue` runs exactly the queues that are due.
import { describe, expect, it } from 'vitest';
import { DueTimes, type Scheduler, timerScheduler } from '../src/hub/due-times.js';

/** One pending alarm, as `ctx.storage.setAlarm` keeps it; the test fires it by calling `runDue`. */
function alarmScheduler() {
  const state = { now: 1_000, alarm: null as number | null, sets: 0 };
  const scheduler: Scheduler = {
    now: () => state.now,
    setAlarm(at) {
      state.alarm = at;
      state.sets++;
    },
  };
  return { state, scheduler };
}

const settle = () => new Promise<void>((resolve) => queueMicrotask(resolve));

describe('the due-time index', () => {
  it('arms one alarm for the earliest time of every queue, and none while idle', async () => {
    const { state, scheduler } = alarmScheduler();
    const index = new DueTimes(scheduler);
    const ran: string[] = [];
    const wake = index.queue('wake', (now) => {
      ran.push(`wake@${now}`);
      wake.take(now);
    });
    const leases = index.queue('leases', (now) => {
      ran.push(`leases@${now}`);
      leases.take(now); // only the due keys: 'other' stays for its own time
    });
    await settle();
    expect(state.sets).toBe(0); // idle: no alarm asked for

    wake.set('plan\ntask', 5_000);
    leases.set('check', 2_000);
    leases.set('other', 3_000);
    await settle();
    expect(state.alarm).toBe(2_000);
    expect(index.earliest()).toBe(2_000);

    state.now = 2_000;
    await index.runDue();
    expect(ran).toEqual(['leases@2000']);
    await settle();
    expect(state.alarm).toBe(3_000);

    state.now = 6_000; // late: both are due, each runs once
    await index.runDue();
    expect(ran.sort()).toEqual(['leases@2000', 'leases@6000', 'wake@6000']);
    await settle();
    expect(state.alarm).toBeNull();
    expect(index.earliest()).toBeNull();
  });

  it('holds a due key back until its retry time, and leaves unarmed queues to their owner', async () => {
    const { state, scheduler } = alarmScheduler();
    const index = new DueTimes(scheduler);
    const manual = index.queue('manual', () => undefined, { armed: false });
    manual.set('a', 1_500);
    await settle();
    expect(state.alarm).toBeNull();
    expect(manual.due(2_000)).toEqual(['a']);

    let runs = 0;
    const retried = index.queue('retried', (now) => {
      runs++;
      for (const key of retried.due(now)) retried.hold(key, now + 10_000); // could not do it: later
    });
    retried.set('job', 1_000);
    await settle();
    expect(state.alarm).toBe(1_000);
    await index.runDue();
    await settle();
    expect(runs).toBe(1);
    expect(retried.get('job')).toBe(1_000); // the time it stands for is kept
    expect(state.alarm).toBe(11_000);
    expect(retried.due(5_000)).toEqual([]);
    retried.set('job', 4_000); // a new time drops the hold
    expect(retried.due(5_000)).toEqual(['job']);
  });

  it('never runs a queue twice at once', async () => {
    const { state, scheduler } = alarmScheduler();
    const index = new DueTimes(scheduler);
    let release: () => void = () => undefined;
    let runs = 0;
    const slow = index.queue('slow', async (now) => {
      runs++;
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      for (const key of slow.due(now)) slow.set(key, null);
    });
    slow.set('k', 1_000);
    const first = index.runDue();
    await settle();
    const second = index.runDue(); // the alarm again while the first run goes on
    await settle();
    expect(runs).toBe(1);
    release();
    await Promise.all([first, second]);
    expect(runs).toBe(1);
    expect(index.runCount).toBe(1);
    await settle();
    expect(state.alarm).toBeNull();
  });

  it('runs on a timer where the host has one', async () => {
    const index = new DueTimes(timerScheduler());
    const ran = new Promise<number>((resolve) => {
      const queue = index.queue('soon', (now) => {
        queue.set('k', null);
        resolve(now);
      });
      queue.set('k', Date.now() + 20);
    });
    expect(await ran).toBeGreaterThanOrEqual(Date.now() - 1_000);
    index.close();
  });
});
