#!/usr/bin/env bash
# Renders the scoreboard pages (docs/scoreboard.html, docs/cells.html) in a real headless browser
# and checks what a reader sees: the page parses into its table, every cell's visible text is
# compact (the evidence stays folded until clicked), the legend and the per-device summary are
# there. Writes a screenshot of each page beside this script's output directory for a look.
#
#   bash scripts/check-scoreboard.sh [OUT_DIR]     (Debian: apt-get install chromium)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/scoreboard-check}"
mkdir -p "$out"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$browser" ]; then
  echo "check-scoreboard: no chromium on PATH (Debian: apt-get install chromium)" >&2
  exit 2
fi
status=0
for page in docs/scoreboard.html docs/cells.html; do
  name="$(basename "$page" .html)"
  url="file://$PWD/$page"
  "$browser" --headless --no-sandbox --disable-gpu --dump-dom "$url" 2>/dev/null >"$out/$name.dom.html"
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1600,1200 \
    --screenshot="$out/$name.png" "$url" >/dev/null 2>&1
  python3 - "$out/$name.dom.html" "$page" <<'PY' || status=1
import sys
from html.parser import HTMLParser

class Page(HTMLParser):
    """The rendered DOM: what each table cell shows before it is clicked (its text outside a
    folded <details>, and the <summary> of one), the legend entries, the column heads."""
    def __init__(self):
        super().__init__()
        self.cells, self.heads, self.legend = [], [], 0
        self.stack, self.text, self.folded, self.summary = [], None, 0, 0
    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)
        if tag in ("td", "th"):
            self.text = []
        if tag == "details":
            self.folded += 1
        if tag == "summary":
            self.summary += 1
        if tag == "li":
            self.legend += 1
    def handle_endtag(self, tag):
        if tag == "details":
            self.folded -= 1
        if tag == "summary":
            self.summary -= 1
        if tag in ("td", "th") and self.text is not None:
            (self.cells if tag == "td" else self.heads).append(" ".join("".join(self.text).split()))
            self.text = None
        if self.stack:
            self.stack.pop()
    def handle_data(self, data):
        if self.text is not None and (not self.folded or self.summary):
            self.text.append(data)

dom, page = sys.argv[1], sys.argv[2]
p = Page()
p.feed(open(dom, encoding="utf-8").read())
problems = []
if len(p.cells) < 3:
    problems.append(f"only {len(p.cells)} table cells rendered")
if p.legend < 1:
    problems.append("no legend")
# A cell shows its decision and a figure or a cause number, not its reasons.
long = [c for c in p.cells[1:] if len(c) > 90 and not c.startswith(("island_", "matvec", "rmsnorm", "byte_swap"))]
if long:
    problems.append(f"{len(long)} cells show more than 90 characters, e.g. {long[0][:120]!r}")
if not any(any(ch.isdigit() for ch in h) for h in p.heads[1:]):
    problems.append("no per-device summary in the column heads")
if problems:
    print(f"{page}: " + "; ".join(problems))
    sys.exit(1)
print(f"{page}: {len(p.cells)} cells, {p.legend} legend entries, heads {p.heads[1:]}")
PY
done
exit "$status"
