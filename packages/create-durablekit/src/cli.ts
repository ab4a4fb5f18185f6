#!/usr/bin/env node
// `npm create durablekit@latest my-app` runs this: it writes the starter into ./my-app and prints
// the two commands to run next. It runs on the Node that runs npm (20 or later).
import { type CreatePackageManager, createProject } from "./create-project";
import { isCreateError } from "./errors";

const USAGE = "Usage: npm create durablekit@latest <folder>   (pnpm create durablekit <folder>)";

/** The package manager that ran `create`, from the user agent it sets for scripts. */
function packageManager(userAgent: string | undefined): CreatePackageManager {
  const name = userAgent?.split("/")[0];
  return name === "pnpm" || name === "yarn" ? name : "npm";
}

const [directory, ...rest] = process.argv.slice(2);
if (directory === undefined || directory === "--help" || directory === "-h" || rest.length > 0) {
  console.error(directory === undefined ? `Name the folder to create.\n${USAGE}` : USAGE);
  process.exit(directory === "--help" || directory === "-h" ? 0 : 1);
}
const manager = packageManager(process.env.npm_config_user_agent);
try {
  const created = createProject({ directory, packageManager: manager });
  console.log(`Created ${created.name} in ${created.directory} (${created.files.length} files).`);
  console.log("\nNext:\n");
  for (const command of created.next) console.log(`  ${command}`);
  console.log(
    `\nThen \`${manager} run dev\` serves it on http://localhost:8787 (its README.md says more).`,
  );
} catch (error) {
  if (!isCreateError(error)) throw error;
  console.error(`${error.message} (${error.code})`);
  process.exit(1);
}
