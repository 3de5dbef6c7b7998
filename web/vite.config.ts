// Builds the dashboard into dist/, which the daemon embeds (api/build.rs).
// Rebuild with `npm run build` from web/; tests/dashboard.rs fails when the
// committed dist/ differs from a fresh build.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    target: "es2022",
    chunkSizeWarningLimit: 600,
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
