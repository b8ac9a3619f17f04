// zod/mini, unlike classic zod, words no message until a locale is configured: without this, a refusal would say
// "Invalid input" where it says "Too big: expected string to have <=64 characters". English is set only when no
// locale is (as classic zod does), so an app that configures its own keeps it. Imported by schema.ts, whose
// schemas every parse uses, so this runs before any of them parses.
// (globalConfig is imported by name: `z.core.globalConfig` would make a bundler keep all of zod's core.)
import { config, globalConfig } from 'zod/v4/core';
import en from 'zod/v4/locales/en.js';

if (!globalConfig.localeError) config(en());
