export declare const FINGERPRINT_FILE: string;
/** sha256 over the relative path and bytes of every source file, in a stable order. */
export declare function sourceFingerprint(root: string): string;
/** The dist/ directory to run, or null when there is none or it was built from other sources. */
export declare function freshBuild(root: string, distDir?: string): string | null;
