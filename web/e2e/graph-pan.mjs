// Panning the graph view as a person would, frame by frame: shared by the
// browser test (e2e/graph.test.mjs) and the benchmark (bench/dashboard.mjs).

/**
 * Pans by dragging (pointer events, one move a frame) for `frames` frames;
 * returns the median interval between frames, how many frames the view
 * drew, and how many times it drew the whole scene again.
 */
export async function pan(page, frames) {
  return page.evaluate(async (frames) => {
    const stage = document.querySelector(".graph-stage");
    const canvas = document.querySelector(".graph-canvas");
    const r = stage.getBoundingClientRect();
    const x0 = r.left + r.width / 2;
    const y0 = r.top + r.height / 2;
    const ev = (type, x, y) =>
      stage.dispatchEvent(new PointerEvent(type, { pointerId: 9, button: 0, buttons: 1, clientX: x, clientY: y, bubbles: true, isPrimary: true, pointerType: "mouse" }));
    const frames0 = Number(canvas.dataset.frames);
    const scenes0 = Number(canvas.dataset.scenes);
    const times = [];
    let x = x0;
    let dir = 3;
    ev("pointerdown", x0, y0);
    await new Promise((resolve) => {
      const step = (t) => {
        times.push(t);
        if (times.length > frames) return resolve();
        if (Math.abs(x + dir - x0) > 150) dir = -dir;
        x += dir;
        ev("pointermove", x, y0);
        requestAnimationFrame(step);
      };
      requestAnimationFrame(step);
    });
    ev("pointerup", x, y0);
    const d = times
      .slice(1)
      .map((t, i) => t - times[i])
      .sort((a, b) => a - b);
    return {
      median: d[Math.floor(d.length / 2)],
      drawn: Number(canvas.dataset.frames) - frames0,
      scenes: Number(canvas.dataset.scenes) - scenes0,
    };
  }, frames);
}
