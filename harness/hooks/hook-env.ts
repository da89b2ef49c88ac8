/** How the driver talks to the preloads (worker-hook.ts, operator-hook.ts) it starts. */
export const ARM_DIR_ENV = 'CHAOS_ARM_DIR';
export const HOLD_MS_ENV = 'CHAOS_HOLD_MS';
