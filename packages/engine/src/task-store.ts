// The task store lives in records/ now; this path stays while other branches still import it from here.
export * from './records/store.ts';
