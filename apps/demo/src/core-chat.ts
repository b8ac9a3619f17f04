// The chat module of @cairn/core. Imported by path until the root entry re-exports it (`export * from
// './chat.js'` in packages/core/src/index.ts); then this file becomes `export * from '@cairn/core'`.
export * from '../../../packages/core/src/chat.js';
