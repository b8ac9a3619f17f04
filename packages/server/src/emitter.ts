// The extensions' typed events on lib0's ObservableV2 (`on`, `once`, `off`, `emit(name, [args])`) instead of
// node:events, so the hub and its extensions run wherever a Web-standard runtime does.
import { ObservableV2 } from 'lib0/observable';

/** The listeners of an event map written as `{ name: [argument, ...] }`. */
export type Listeners<E> = { [K in keyof E]: (...args: E[K] extends unknown[] ? E[K] : never) => void };

/** Emits the events of `E`, a map from event name to its arguments. */
export class Emitter<E> extends ObservableV2<Listeners<E>> {}
