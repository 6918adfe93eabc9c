// esbuild bundles the console's stylesheet from this import (scripts/build-web.mjs); to the type
// checker it is a module with nothing in it.
declare module "*.css";
