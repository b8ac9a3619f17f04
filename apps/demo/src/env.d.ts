/// <reference types="vite/client" />

/** True in a build that ships the service worker (see vite.config.ts). */
declare const __OFFLINE_SHELL__: boolean;
