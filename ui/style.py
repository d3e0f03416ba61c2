"""The page's own CSS and script: `[n]` badges tied to numbered source cards, cited sentences highlighted."""

CSS = """
.rag-title { margin: 0.2em 0 0 0; font-size: 1.6em; }
.rag-header { color: var(--body-text-color-subdued); font-size: 0.92em; margin-bottom: 0.4em; }
.rag-cite {
  display: inline-block; padding: 0 0.25em; border-radius: 0.35em; cursor: pointer;
  background: var(--color-accent-soft); color: var(--color-accent);
  font-weight: 600; font-size: 0.85em;
}
.rag-cite:hover { background: var(--color-accent); color: white; }
.rag-note { padding: 0.35em 0.6em; border-radius: 0.4em; margin-bottom: 0.4em; }
.rag-refused { background: #fff4e5; color: #7a4b00; }
.rag-error { background: #fdecea; color: #8a1c1c; }
.rag-by { font-size: 0.82em; color: var(--body-text-color-subdued); margin: 0.2em 0; }
.rag-by-fallback { color: #7a4b00; }
.rag-why { font-size: 0.82em; color: var(--body-text-color-subdued); margin: 0.2em 0; }
.rag-unsupported { color: var(--body-text-color-subdued); text-decoration: underline dotted; }
.rag-legend { font-size: 0.82em; color: var(--body-text-color-subdued); margin: 0.3em 0; }
.rag-list-heading { margin: 0.6em 0 0.1em 0; font-weight: 600; font-size: 0.9em; }
.rag-source-list { margin: 0; padding-left: 0.2em; list-style: none; font-size: 0.88em; }
.rag-source-list .rag-uncited { opacity: 0.65; }
.rag-id { color: var(--body-text-color-subdued); font-family: var(--font-mono); font-size: 0.9em; }
.rag-panel-heading { font-weight: 600; margin-bottom: 0.5em; }
.rag-panel-empty { color: var(--body-text-color-subdued); padding: 1em; }
.rag-card {
  border: 1px solid var(--border-color-primary); border-left: 4px solid var(--border-color-primary);
  border-radius: 0.5em; padding: 0.6em 0.8em; margin-bottom: 0.6em; scroll-margin-top: 1em;
}
.rag-card.rag-cited { border-left-color: var(--color-accent); }
.rag-card.rag-flash { box-shadow: 0 0 0 3px var(--color-accent); }
.rag-card-title { font-weight: 600; }
.rag-number { color: var(--color-accent); }
.rag-state { font-weight: normal; font-size: 0.8em; color: var(--body-text-color-subdued); }
.rag-facts, .rag-links { font-size: 0.85em; color: var(--body-text-color-subdued); margin: 0.2em 0; }
.rag-status { font-weight: 600; }
.rag-list-table { border-collapse: collapse; font-size: 0.9em; margin: 0.4em 0; }
.rag-list-table th, .rag-list-table td { text-align: left; vertical-align: top; padding: 0.25em 0.4em;
  border-bottom: 1px solid var(--border-color-primary); }
.rag-list-table td:first-child { white-space: nowrap; }
/* The chat's messages may break a word anywhere to fit; a table's cells break only between words (a column
   as narrow as its longest word), and a table wider than the message scrolls across. */
.rag-list-table { display: block; max-width: 100%; overflow-x: auto; }
.rag-list-table th, .rag-list-table td { overflow-wrap: normal; word-break: normal; hyphens: manual; }
.rag-list-table .rag-area { color: var(--body-text-color-subdued); font-size: 0.85em; min-width: 8em; max-width: 14em; }
.rag-list-table .rag-quote { font-size: 0.92em; }
.rag-badge { border-radius: 0.6em; padding: 0 0.45em; font-size: 0.85em; white-space: nowrap;
  background: var(--neutral-200); color: var(--neutral-800); }
.rag-badge-oral, .rag-badge-spotlight { background: #fde7d3; color: #8a3b00; }
.rag-badge-poster { background: #dcecff; color: #0b4a8b; }
.rag-more-like { color: var(--color-accent); cursor: pointer; text-decoration: underline; }
.rag-related { margin-top: 0.6em; font-size: 0.9em; }
.rag-related-list { padding-left: 1.4em; margin: 0; }
.rag-related-paper { margin-bottom: 0.5em; }
.rag-tie { color: var(--body-text-color-subdued); margin-top: 0.15em; }
.rag-passage { font-size: 0.9em; margin-top: 0.3em; line-height: 1.45; }
.rag-passage mark { background: #fff1a8; color: #1f1f1f; padding: 0 0.1em; }
/* !important: Gradio writes `overflow: visible` into the block's style attribute, and a long panel
   would then spill over what sits below it (the download buttons) instead of scrolling. */
#rag-sources { max-height: 760px; overflow-y: auto !important; }
#rag-downloads { margin-top: 0.4em; }
/* A count's chart takes no room until Vega has drawn it (its script loads on the first chart): no blank box */
#rag-tally-chart:not(:has(svg.marks)) { max-height: 0; overflow: hidden; padding: 0; border-width: 0; }
/* Papers in focus: a few ticks in a box that scrolls, not a column as long as a long answer */
#rag-focus-picker .wrap { max-height: 16em; overflow-y: auto; }
.rag-themes { margin: 0.4em 0; padding-left: 1.4em; }
.rag-theme { margin: 0.35em 0; }
.rag-theme-name { font-weight: 600; }
.rag-theme-size { color: var(--body-text-color-subdued); font-size: 0.88em; }
.rag-theme-summary { display: block; margin: 0.1em 0 0 0.6em; }
.rag-theme-quote { display: block; font-size: 0.92em; margin: 0.1em 0 0 0.6em; }
.rag-theme-papers { font-size: 0.88em; margin: 0.15em 0 0 0.6em; }
.rag-theme-papers ul { margin: 0.2em 0; padding-left: 0.4em; list-style: none; }
/* The map of the conference (ui/paper_map.py, ui/paper_map.js): a canvas, its tooltip, and the legend beside it */
.rag-map-title { font-weight: 600; font-size: 0.95em; margin: 0.2em 0 0.4em 0; }
.rag-map-body { display: flex; flex-wrap: wrap; gap: 0.8em; align-items: flex-start; }
.rag-map-plot { position: relative; flex: 1 1 560px; min-width: 320px; }
.rag-map-plot canvas { display: block; width: 100%; }
.rag-map-tip { position: absolute; pointer-events: none; max-width: 420px; padding: 0.3em 0.5em; border-radius: 0.3em;
  background: rgba(20, 20, 20, 0.88); color: white; font-size: 0.82em; line-height: 1.3; z-index: 10; }
.rag-map-legend { flex: 0 1 340px; margin: 0; padding: 0; list-style: none; font-size: 0.86em; line-height: 1.35; }
.rag-map-legend li { display: flex; gap: 0.45em; align-items: baseline; padding: 0.1em 0.2em; cursor: pointer; }
.rag-map-legend li.rag-map-hidden { opacity: 0.4; }
.rag-map-swatch { flex: none; width: 0.75em; height: 0.75em; border-radius: 50%; }
"""

# Clicking a [n] badge in the chat selects its message (Gradio's select event puts that turn's
# sources in the panel), so the card may appear a moment later: look for it for up to two seconds.
SCRIPT = r"""
() => {
  document.addEventListener("click", (event) => {
    const badge = event.target.closest(".rag-cite");
    const match = badge && badge.className.match(/\bgoto-(source-\d+-\d+)\b/);
    if (!match) return;
    const id = match[1];
    let tries = 0;
    const show = () => {
      const card = document.getElementById(id);
      if (!card) {
        if (++tries < 20) setTimeout(show, 100);
        return;
      }
      card.scrollIntoView({ behavior: "smooth", block: "nearest" });
      card.classList.add("rag-flash");
      setTimeout(() => card.classList.remove("rag-flash"), 1600);
    };
    show();
  });
}
"""
