/**
 * The notebook-sync rule (D10), pure: given the file's modification time on the server, the
 * time of the version the open document holds and whether the user changed it, what to do.
 */

export type SyncDecision = 'none' | 'revert' | 'notice';

/** Parse an ISO time to epoch ms; NaN stays NaN (treated as unknown). */
function epoch(value: string | null | undefined): number {
  return value ? Date.parse(value) : Number.NaN;
}

export function shouldReload(
  diskModified: string | null | undefined,
  openModified: string | null | undefined,
  dirty: boolean
): SyncDecision {
  const disk = epoch(diskModified);
  const open = epoch(openModified);
  if (Number.isNaN(disk)) {
    return 'none';
  }
  if (!Number.isNaN(open) && disk <= open) {
    return 'none';
  }
  return dirty ? 'notice' : 'revert';
}
