// Byte progress of one multipart upload, split over the files in it.

export interface PendingUpload {
  /** Unique per file per upload. */
  key: string;
  filename: string;
  size: number;
  /** 0..1 of this file's bytes sent. */
  fraction: number;
}

/**
 * How far each file is, given the bytes of the whole request body sent so far. The files go out in order, so
 * file i is done once the body has passed its end; the multipart framing and form fields (a few hundred bytes)
 * are spread in proportion, so the last file reaches 1 exactly when the body does.
 */
export function fileFractions(sizes: number[], loaded: number, total: number): number[] {
  const sum = sizes.reduce((a, b) => a + b, 0);
  if (total <= 0) return sizes.map(() => 0);
  const sent = Math.min(1, Math.max(0, loaded / total)) * sum;
  let start = 0;
  return sizes.map((size) => {
    const begin = start;
    start += size;
    if (size === 0) return sent >= begin && loaded > 0 ? 1 : 0;
    return Math.min(1, Math.max(0, (sent - begin) / size));
  });
}

export const percent = (fraction: number) => Math.floor(fraction * 100);
