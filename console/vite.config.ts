// The console's build (docs/CONSOLE.md): console/ into dist/console/, which `silk serve` serves at /console
// (gateway/console.ts). Every module is bundled: the page fetches nothing from elsewhere at run time.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/console/",
  build: {
    outDir: fileURLToPath(new URL("../dist/console", import.meta.url)),
    emptyOutDir: true,
    // Built asset names carry a hash of their content, so the server may let browsers keep them.
    assetsDir: "assets",
    chunkSizeWarningLimit: 1024,
  },
});
