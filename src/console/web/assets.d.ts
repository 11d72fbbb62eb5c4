// Stylesheets are imported for their side effect; esbuild emits them as a separate .css file.
declare module '*.css';
