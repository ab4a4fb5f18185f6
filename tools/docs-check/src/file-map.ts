/** The files and folders a DESIGN.md's file map names, by path below `src/`, sorted. */
export interface FileMap {
  files: string[];
  folders: string[];
}

const HEADING = /^#{2,3} File map \(`src\/`\)\s*$/;

/**
 * Reads the file map of a DESIGN.md: the first table after its `File map (\`src/\`)` heading.
 * Each row's first cell names files (`run/run.ts`) and folders (`run/`) in backticks.
 *
 * @throws Error when there is no such heading or table, or when a path is listed twice.
 */
export function fileMapOf(design: string): FileMap {
  const lines = design.split("\n");
  const start = lines.findIndex((line) => HEADING.test(line));
  if (start < 0) throw new Error('no "File map (`src/`)" heading');
  let row = start + 1;
  while (row < lines.length && !lines[row]?.startsWith("|")) row++;
  if (row >= lines.length) throw new Error("no table after the file map's heading");
  const seen = new Set<string>();
  const files: string[] = [];
  const folders: string[] = [];
  for (row += 2; row < lines.length && lines[row]?.startsWith("|"); row++) {
    const first = lines[row]?.split("|")[1] ?? "";
    for (const [, path] of first.matchAll(/`([^`]+)`/g)) {
      if (path === undefined) continue;
      if (seen.has(path)) throw new Error(`a file map lists a path twice: ${path}`);
      seen.add(path);
      (path.endsWith("/") ? folders : files).push(path);
    }
  }
  return { files: files.sort(), folders: folders.sort() };
}

/** The text of a README's `## Source layout` section, or null when it has none. */
export function sourceLayoutOf(readme: string): string | null {
  const match = /^## Source layout\s*$([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(readme);
  return match ? (match[1] ?? "") : null;
}
