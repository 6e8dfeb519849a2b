// Types of service-env.mjs for the TypeScript tests.

export const SERVICE_ENV_FILE: string;
export const SERVICE_ENV_NAMES: readonly string[];
export function recordServiceEnv(dataDir: string, env: Record<string, string | undefined>, pid?: number): string;
export function clearServiceEnv(dataDir: string): void;
export function withServiceEnv(
  env: Record<string, string | undefined>,
  dataDir: string,
): { env: Record<string, string | undefined>; from: string | null };
