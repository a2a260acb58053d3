// Where the page's results live. The bytes onnxfold computes (float16 or quantized weights,
// the graph) are written to the origin private file system (the package's options.spill)
// rather than held in the tab's memory, so a result of several GB is a Blob on disk like the
// input files. One folder per tab and job kind: a job replaces the previous result of its kind.
// An open tab holds a Web Lock named after its folder; a page that starts removes the folders
// whose lock nobody holds (tabs closed or crashed).
const ROOT = 'onnxfold-results';
const lockName = (tab) => `${ROOT}/${tab}`;

const hasStorage = () =>
  typeof navigator === 'object' && typeof navigator.storage?.getDirectory === 'function';

/** The page: this tab's folder name, with its lock held and stale folders removed; null without OPFS. */
export async function openTab() {
  if (!hasStorage() || !navigator.locks) return null;
  const tab = crypto.randomUUID();
  await new Promise((granted) => {
    navigator.locks.request(lockName(tab), () => {
      granted();
      return new Promise(() => {}); // held until the tab goes
    });
  });
  try {
    const root = await (await navigator.storage.getDirectory()).getDirectoryHandle(ROOT, { create: true });
    const live = new Set(((await navigator.locks.query()).held ?? []).map((l) => l.name));
    const stale = [];
    for await (const name of root.keys()) if (!live.has(lockName(name))) stale.push(name);
    await Promise.all(stale.map((name) => root.removeEntry(name, { recursive: true }).catch(() => {})));
  } catch {
    // Removing old results is housekeeping: the browser evicts the storage when it needs to.
  }
  return tab;
}

/**
 * The worker: an empty folder for a new result of `kind` ('optimize', 'variants') in the tab's
 * folder, or undefined where results cannot be written synchronously (no sync access handles).
 */
export async function freshFolder(spill) {
  if (
    !spill ||
    !hasStorage() ||
    typeof FileSystemFileHandle !== 'function' ||
    typeof FileSystemFileHandle.prototype.createSyncAccessHandle !== 'function'
  ) {
    return undefined;
  }
  try {
    const root = await (await navigator.storage.getDirectory()).getDirectoryHandle(ROOT, { create: true });
    const tab = await root.getDirectoryHandle(spill.tab, { create: true });
    // A file still open in a cancelled run's worker may refuse; new files have new names anyway.
    await tab.removeEntry(spill.kind, { recursive: true }).catch(() => {});
    return await tab.getDirectoryHandle(spill.kind, { create: true });
  } catch {
    return undefined; // storage refused (a private window may): results stay in memory
  }
}
