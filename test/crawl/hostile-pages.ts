/**
 * Pages that fight the browser engine, shared by its tests (test/crawl/browser-engine.test.ts) and
 * the soak (bench/soak.ts, docs/chaos.md): pop-ups, a memory hog, a page that reloads itself for
 * ever, and a huge DOM. `/popups` loads an image from `/slow-img`, which its host serves (the tests
 * count those answers, so each serves its own).
 */
import { type Handler, html, page } from "./fixture.ts"

export const hostilePages: Record<string, Handler> = {
  // Five pop-ups that each ask for /popup-ping every 50 ms for as long as they are open; the page loads for a second.
  "/popups": page(200, html(`<h1>Opens pop-ups</h1><script>for (let i = 0; i < 5; i++) window.open("/popup-target?i=" + i, "_blank", "noopener")</script>
        <img src="/slow-img?i=popups" width="10" height="10">`)),
  "/popup-target": page(200, html(`<h1>Pop-up</h1><script>setInterval(() => fetch("/popup-ping"), 50)</script>`)),
  "/popup-ping": (_req, res) => res.writeHead(204).end(),
  // Allocates without end once loaded: its renderer runs out of its heap.
  "/hog": page(200, html(`<h1>Hog</h1><script>setTimeout(() => { const a = []; for (;;) a.push(new Array(1e6).fill(1.5)) }, 100)</script>`)),
  // Reloads itself at once, for ever.
  "/refresh-loop": page(200, html(`<meta http-equiv="refresh" content="0;url=/refresh-loop"><h1>Refreshing</h1><p>${"words ".repeat(30)}</p>`)),
  // Two hundred thousand elements built by script: a big DOM to lay out and serialize.
  "/huge-dom": page(200, html(`<h1>Huge DOM</h1><div id="d"></div><script>
        const d = document.getElementById("d")
        for (let i = 0; i < 2000; i++) { const s = document.createElement("section"); s.innerHTML = "<p>cell</p>".repeat(100); d.appendChild(s) }
      </script>`))
}
