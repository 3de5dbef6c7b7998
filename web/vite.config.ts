/// <reference types="vitest/config" />
// Builds the dashboard into dist/, which the daemon embeds (api/build.rs).
// Rebuild with `npm run build` from web/; tests/dashboard.rs fails when the
// committed dist/ differs from a fresh build.
import { defineConfig } from "vite";

// `npm run dev` serves the sources with the API of a running daemon behind
// them (SVC_URL, default http://127.0.0.1:8080), on the same origin.
const daemon = process.env.SVC_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  base: "/",
  server: {
    proxy: {
      "/api": { target: daemon, changeOrigin: false },
      "/events": { target: daemon, ws: true, changeOrigin: false },
    },
  },
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
