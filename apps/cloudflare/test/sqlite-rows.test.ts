// The rows a plan's Durable Object keeps in its SQLite, seen from the object's file: a plan larger than a row may
// hold is split over rows of parts (here 4 KiB, forced through CAIRN_SQLITE_CHUNK_BYTES, since local workerd does
// not enforce Cloudflare's 2 MB per row) and reads back whole; a lost part is damage, refused; objects written
// with the schemas before (1 and 2) open with nothing lost.
import { createPlan } from '@cairn/core';
import { crc32, decodeSnapshot, encodeSnapshot } from '@cairn/core/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { signToken } from '../../../packages/server/src/index.js';
import { cairnClient } from '../../../packages/server/test/helpers.js';
import { hex, objectFile, sqlite } from './object-files.js';
import { type RunningWorkerd, startWorkerd } from './workerd.js';

const SECRET = 'edge-rows-secret-edge-rows-secret-0123456789';
const CHUNK_BYTES = 4096;

let w: RunningWorkerd;
const token = (plan: string, role: 'read' | 'write' = 'write') =>
  signToken(SECRET, { plan, role, sub: 'agent:rows' });

beforeAll(async () => {
  w = await startWorkerd({ vars: { CAIRN_SECRET: SECRET, CAIRN_SQLITE_CHUNK_BYTES: String(CHUNK_BYTES) } });
});
afterAll(() => w?.dispose());

/** A plan's API, as a writer of it. */
async function planApi(plan: string) {
  const headers = { authorization: `Bearer ${await token(plan)}`, 'content-type': 'application/json' };
  const url = (path: string) => `${w.url}/api/plans/${encodeURIComponent(plan)}${path}`;
  return {
    read: () => fetch(url('/tasks'), { headers }),
    async titles(): Promise<string[]> {
      const read = await fetch(url('/tasks'), { headers });
      expect(read.status).toBe(200);
      const body = (await read.json()) as { tasks: Array<{ title: string }> };
      return body.tasks.map((t) => t.title).sort();
    },
    async add(title: string): Promise<void> {
      const body = JSON.stringify({ tasks: [{ title }] });
      expect((await fetch(url('/tools/add_tasks'), { method: 'POST', headers, body })).status).toBe(200);
    },
  };
}

/**
 * A stopped plan object whose SQLite file exists, and what an older schema would have stored for `tasks`: each
 * update as a row, and the snapshot at the seq of the last row. The test rewrites the file's tables with them.
 */
async function objectBeforeUpgrade(plan: string, tasks: Array<{ title: string; note?: string }>) {
  const api = await planApi(plan);
  await api.add('Replaced below'); // the object and its SQLite file exist from here
  await w.kill9();
  const doc = new Y.Doc();
  const updates: Uint8Array[] = [];
  doc.on('update', (update: Uint8Array) => updates.push(update));
  const old = createPlan({ doc, actor: `agent:${plan.split(':')[1]}` });
  for (const task of tasks) old.add(task);
  const snapshot = encodeSnapshot(doc, updates.length) as Uint8Array;
  const file = objectFile(w.storageDir, plan);
  /** The object's file as `schema` left it: today's tables dropped, `tables` (that schema's, filled) in their place. */
  const asSchema = (schema: 1 | 2, tables: string[]) =>
    sqlite(
      file,
      [
        'DROP TABLE cairn_updates',
        'DROP TABLE cairn_update_parts',
        'DROP TABLE cairn_snapshots',
        'DROP TABLE cairn_snapshot_parts',
        `UPDATE cairn_meta SET value = '${schema}' WHERE key = 'schema'`,
        ...tables,
      ].join('; '),
    );
  return { api, file, updates, snapshot, asSchema };
}

/** The stored first-read snapshot of `plan`, its parts joined in order. */
function storedSnapshot(file: string, plan: string): Uint8Array {
  const joined = sqlite(
    file,
    `SELECT group_concat(hex(data), '') FROM (SELECT 0 AS part, data FROM cairn_snapshots WHERE doc = '${plan}' UNION ALL SELECT part, data FROM cairn_snapshot_parts WHERE doc = '${plan}' ORDER BY part)`,
  );
  return new Uint8Array(Buffer.from(joined, 'hex'));
}

describe("a Durable Object's SQLite rows", () => {
  it('a plan many rows large appends, compacts and takes its snapshot in parts of 4 KiB, and reopens identical', async () => {
    const plan = 'acme:large';
    const doc = new Y.Doc();
    const writer = cairnClient(`ws://127.0.0.1:${w.port}`, plan, doc, { token: await token(plan) });
    await writer.whenSynced();
    const tasks = createPlan({ doc, actor: 'agent:rows' });
    // Each update about 12 KB (three parts); past 256 KiB of them the core's policy compacts the log.
    for (let i = 0; i < 40; i++) tasks.add({ title: `task ${i}`, note: `${i} of 40, `.repeat(1000) });
    await writer.whenAcknowledged(60_000);
    writer.destroy();
    await w.kill9();
    const file = objectFile(w.storageDir, plan);
    expect(Number(sqlite(file, 'SELECT COUNT(*) FROM cairn_updates'))).toBeLessThan(40); // compacted
    // The whole state, as one record and as the snapshot, spans dozens of rows, none of them over the size.
    expect(Number(sqlite(file, 'SELECT MAX(parts) FROM cairn_updates'))).toBeGreaterThan(40);
    expect(Number(sqlite(file, 'SELECT parts FROM cairn_snapshots'))).toBeGreaterThan(40);
    for (const table of ['cairn_updates', 'cairn_update_parts', 'cairn_snapshots', 'cairn_snapshot_parts']) {
      expect(Number(sqlite(file, `SELECT MAX(length(data)) FROM ${table}`))).toBeLessThanOrEqual(CHUNK_BYTES);
    }
    // The snapshot's parts join into one that passes its own checksum, at a row of the log.
    const snapshot = decodeSnapshot(storedSnapshot(file, plan));
    expect(snapshot).not.toBeNull();
    expect(sqlite(file, `SELECT COUNT(*) FROM cairn_updates WHERE seq = ${Number(snapshot?.at)}`)).toBe('1');

    await w.restart();
    const api = await planApi(plan);
    const listed = (await (await api.read()).json()) as { total: number };
    expect(listed.total).toBe(40);
    const reader = new Y.Doc();
    const again = cairnClient(`ws://127.0.0.1:${w.port}`, plan, reader, { token: await token(plan, 'read') });
    await again.whenSynced();
    expect(Y.encodeStateVector(reader)).toEqual(Y.encodeStateVector(doc));
    expect(reader.getMap('tasks').toJSON()).toEqual(doc.getMap('tasks').toJSON());
    again.destroy();

    // A snapshot that lacks a part is a corrupt one: it checks nothing, and the plan loads from its rows.
    await w.kill9();
    sqlite(file, 'DELETE FROM cairn_snapshot_parts WHERE part = 2');
    await w.restart();
    expect(((await (await api.read()).json()) as { total: number }).total).toBe(40);

    // A record that lacks a part is damage: the plan is refused, saying where, and nothing is written over it.
    await w.kill9();
    const missing = sqlite(file, 'SELECT seq FROM cairn_update_parts WHERE part = 2 ORDER BY seq LIMIT 1');
    sqlite(file, `DELETE FROM cairn_update_parts WHERE seq = ${missing} AND part = 2`);
    const before = sqlite(file, 'SELECT seq, parts, crc, hex(data) FROM cairn_updates ORDER BY seq');
    await w.restart();
    const refused = await api.read();
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as {
      error: { code: string; message: string; damage: { path: string; offset: number } };
    };
    expect(body.error.code).toBe('storage');
    expect(body.error.message).toMatch(/damaged at record \d+ \(part 2 of \d+ is missing\)/);
    expect(body.error.damage).toMatchObject({ path: 'sqlite:cairn_update_parts', offset: Number(missing) });
    await w.kill9();
    expect(sqlite(file, 'SELECT seq, parts, crc, hex(data) FROM cairn_updates ORDER BY seq')).toBe(before);
    await w.restart();
  }, 90_000);

  it('an object written with schema 2 (one row per record) opens as it was: its rows and snapshot are parts 1 of 1', async () => {
    const plan = 'acme:schema2';
    // What the object stored before rows had parts: its rows and snapshot, in the tables of schema 2.
    const { api, file, updates, snapshot, asSchema } = await objectBeforeUpgrade(plan, [
      { title: 'Written with schema 2', note: 'n'.repeat(3 * CHUNK_BYTES) }, // a row over today's size
      { title: 'Also schema 2' },
    ]);
    asSchema(2, [
      'CREATE TABLE cairn_updates (seq INTEGER PRIMARY KEY AUTOINCREMENT, data BLOB NOT NULL, crc INTEGER NOT NULL, doc TEXT NOT NULL)',
      'CREATE INDEX cairn_updates_doc ON cairn_updates (doc, seq)',
      'CREATE TABLE cairn_snapshots (doc TEXT PRIMARY KEY, data BLOB NOT NULL)',
      ...updates.map(
        (u) => `INSERT INTO cairn_updates (data, crc, doc) VALUES (X'${hex(u)}', ${crc32(u)}, '${plan}')`,
      ),
      `INSERT INTO cairn_snapshots (doc, data) VALUES ('${plan}', X'${hex(snapshot)}')`,
    ]);
    const rows = sqlite(file, 'SELECT seq, crc, hex(data) FROM cairn_updates ORDER BY seq');
    await w.restart();

    expect(await api.titles()).toEqual(['Also schema 2', 'Written with schema 2']);
    await api.add('Written with schema 3');
    await w.kill9();
    expect(sqlite(file, "SELECT value FROM cairn_meta WHERE key = 'schema'")).toBe('3');
    // The rows written before are unchanged, each one part of one; the snapshot too, still at its row.
    expect(
      sqlite(
        file,
        `SELECT seq, crc, hex(data) FROM cairn_updates WHERE seq <= ${updates.length} ORDER BY seq`,
      ),
    ).toBe(rows);
    expect(sqlite(file, `SELECT DISTINCT parts FROM cairn_updates WHERE seq <= ${updates.length}`)).toBe('1');
    expect(sqlite(file, `SELECT parts, hex(data) FROM cairn_snapshots WHERE doc = '${plan}'`)).toBe(
      `1|${hex(snapshot)}`,
    );
    await w.restart();
    expect(await api.titles()).toEqual(['Also schema 2', 'Written with schema 2', 'Written with schema 3']);
  });

  it('an object written with schema 1 (one unnamed document) opens: its rows and snapshot are named, nothing is lost', async () => {
    const plan = 'acme:schema1';
    // What the object stored before documents were named: its rows and snapshot, in the tables of schema 1.
    const { api, file, updates, snapshot, asSchema } = await objectBeforeUpgrade(plan, [
      { title: 'Written with schema 1' },
      { title: 'Also schema 1' },
    ]);
    asSchema(1, [
      'CREATE TABLE cairn_updates (seq INTEGER PRIMARY KEY AUTOINCREMENT, data BLOB NOT NULL, crc INTEGER NOT NULL)',
      'CREATE TABLE cairn_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), data BLOB NOT NULL)',
      ...updates.map((u) => `INSERT INTO cairn_updates (data, crc) VALUES (X'${hex(u)}', ${crc32(u)})`),
      `INSERT INTO cairn_snapshot (id, data) VALUES (1, X'${hex(snapshot)}')`,
    ]);
    await w.restart();

    expect(await api.titles()).toEqual(['Also schema 1', 'Written with schema 1']);
    await api.add('Written with schema 3');
    await w.kill9();
    expect(sqlite(file, "SELECT value FROM cairn_meta WHERE key = 'schema'")).toBe('3');
    expect(sqlite(file, 'SELECT DISTINCT doc FROM cairn_updates')).toBe(plan);
    // The rows kept their seq: the snapshot still names the last row it reflects.
    expect(sqlite(file, 'SELECT MIN(seq) FROM cairn_updates')).toBe('1');
    expect(sqlite(file, `SELECT hex(data) FROM cairn_snapshots WHERE doc = '${plan}'`)).toBe(hex(snapshot));
    await w.restart();
    expect(await api.titles()).toEqual(['Also schema 1', 'Written with schema 1', 'Written with schema 3']);
  });
});
