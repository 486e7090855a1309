/** Vite's `?worker&url` import: the URL of the built worker script. */
declare module '*?worker&url' {
  const url: string;
  export default url;
}
