import { execFileSync } from 'node:child_process';

/** Builds dist/ once (incremental) so child-process tests run the same code `npm start` runs. */
export default function setup(): void {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
